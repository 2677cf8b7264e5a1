// Every kernel and codec of models/schedule/kernels.h, found by name, with its CPU and CUDA
// implementations (kernels.h) behind one signature each: what a Memory runs for a
// schedule's kernel ops and encoded transfers. A new numeric operation is its entry in
// models/schedule/kernels.h, its implementations in kernels.h, and one line here.
#pragma once

#include <cstddef>
#include <cstdint>

#include "models/schedule/schedule.h"

namespace gradsync::runtime {

struct KernelImplementation {
  // `operands`: kernel.operands buffers of `count` floats each, beside the target.
  void (*cpu)(float* target, float* const* operands, std::size_t count, const models::KernelParams& params);
  void (*cuda)(float* target, float* const* operands, std::size_t count, const models::KernelParams& params, void* stream);
};

struct CodecImplementation {
  // Encodes count values of x plus the residual (updated) into out (codec.wire_bytes bytes).
  void (*encode_cpu)(const float* x, float* residual, std::size_t count, std::uint64_t group, std::uint8_t* out);
  // Decodes into out (add: onto it).
  void (*decode_cpu)(const std::uint8_t* in, std::size_t count, std::uint64_t group, float* out, bool add);
  void (*encode_cuda)(const float* x, float* residual, std::size_t count, std::uint64_t group, std::uint8_t* out, void* stream);
  void (*decode_cuda)(const std::uint8_t* in, std::size_t count, std::uint64_t group, float* out, bool add, void* stream);
};

// std::logic_error naming the kernel or codec when nothing implements it.
const KernelImplementation& implementation(const models::Kernel& kernel);
const CodecImplementation& implementation(const models::Codec& codec);

}  // namespace gradsync::runtime
