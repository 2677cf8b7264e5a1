#include "runtime/kernels/catalogue.h"

#include <map>
#include <stdexcept>
#include <string>

#include "models/schedule/kernels.h"
#include "runtime/kernels/kernels.h"

namespace gradsync::runtime {

namespace {

float f(double v) { return static_cast<float>(v); }

const std::map<std::string, KernelImplementation>& kernels() {
  static const std::map<std::string, KernelImplementation> table = {
      {models::divide_kernel().name,
       {[](float* x, float* const*, std::size_t n, const models::KernelParams& p) { divide_cpu(x, n, f(p.v[0])); },
        [](float* x, float* const*, std::size_t n, const models::KernelParams& p, void* s) { divide_cuda(x, n, f(p.v[0]), s); }}},
      {models::block_momentum_kernel().name,
       {[](float* x, float* const* o, std::size_t n, const models::KernelParams& p) {
          block_momentum_update_cpu(x, o[0], o[1], n, f(p.v[0]), f(p.v[1]), p.v[2] != 0);
        },
        [](float* x, float* const* o, std::size_t n, const models::KernelParams& p, void* s) {
          block_momentum_update_cuda(x, o[0], o[1], n, f(p.v[0]), f(p.v[1]), p.v[2] != 0, s);
        }}},
  };
  return table;
}

const std::map<std::string, CodecImplementation>& codecs() {
  static const std::map<std::string, CodecImplementation> table = {
      {models::one_bit_codec().name,
       {[](const float* x, float* r, std::size_t n, std::uint64_t g, std::uint8_t* out) { onebit_encode_cpu(x, r, n, g, out); },
        [](const std::uint8_t* in, std::size_t n, std::uint64_t g, float* out, bool add) {
          add ? onebit_decode_add_cpu(in, n, g, out) : onebit_decode_cpu(in, n, g, out);
        },
        [](const float* x, float* r, std::size_t n, std::uint64_t g, std::uint8_t* out, void* s) {
          onebit_encode_cuda(x, r, n, g, out, s);
        },
        [](const std::uint8_t* in, std::size_t n, std::uint64_t g, float* out, bool add, void* s) {
          add ? onebit_decode_add_cuda(in, n, g, out, s) : onebit_decode_cuda(in, n, g, out, s);
        }}},
  };
  return table;
}

}  // namespace

const KernelImplementation& implementation(const models::Kernel& kernel) {
  const auto it = kernels().find(kernel.name);
  if (it == kernels().end()) throw std::logic_error("no implementation of kernel " + kernel.name + " (runtime/kernels/catalogue.cpp)");
  return it->second;
}

const CodecImplementation& implementation(const models::Codec& codec) {
  const auto it = codecs().find(codec.name);
  if (it == codecs().end()) throw std::logic_error("no implementation of codec " + codec.name + " (runtime/kernels/catalogue.cpp)");
  return it->second;
}

}  // namespace gradsync::runtime
