// Host buffers and the CPU kernels.
#include <chrono>
#include <cstring>
#include <thread>
#include <deque>
#include <vector>

#include "runtime/backend.h"
#include "runtime/kernels/catalogue.h"
#include "runtime/kernels/kernels.h"

namespace gradsync::runtime {

namespace {

class HostMemory final : public Memory {
 public:
  std::string kind() const override { return "host"; }
  float* allocate(std::size_t bytes) override {
    buffers_.emplace_back((bytes + 3) / 4, 0.0f);
    return buffers_.back().data();
  }
  float* allocate_host(std::size_t bytes) override { return allocate(bytes); }
  void upload(float* dst, const float* host, std::size_t count) override { copy(dst, host, count); }
  void download(float* host, const float* src, std::size_t count) override { copy(host, src, count); }
  void copy(float* dst, const float* src, std::size_t count) override {
    if (count) std::memmove(dst, src, count * sizeof(float));
  }
  void fill_zero(float* x, std::size_t count) override {
    if (count) std::memset(x, 0, count * sizeof(float));
  }
  void sum_into(float* dst, const float* src, std::size_t count) override { sum_into_cpu(dst, src, count); }
  void run_kernel(const models::Kernel& kernel, float* target, float* const* operands, std::size_t count,
                  const models::KernelParams& params) override {
    implementation(kernel).cpu(target, operands, count, params);
  }
  void encode(const models::Codec& codec, std::uint64_t group, const float* x, float* residual, std::size_t count,
              std::uint8_t* out) override {
    implementation(codec).encode_cpu(x, residual, count, group, out);
  }
  void decode(const models::Codec& codec, std::uint64_t group, const std::uint8_t* in, std::size_t count, float* out,
              bool add) override {
    implementation(codec).decode_cpu(in, count, group, out, add);
  }
  void synchronize() override {}
  void compute_for(double seconds, bool busy) override {
    if (!(seconds > 0)) return;
    using Clock = std::chrono::steady_clock;
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    if (!busy) {
      std::this_thread::sleep_until(until);
      return;
    }
    while (Clock::now() < until) {
    }
  }

 private:
  std::deque<std::vector<float>> buffers_;  // deque: pointers stay valid
};

}  // namespace

std::unique_ptr<Memory> make_host_memory() { return std::make_unique<HostMemory>(); }

}  // namespace gradsync::runtime
