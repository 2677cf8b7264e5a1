// Element-wise reduction of gradient buffers: dst[i] += src[i]. A CPU implementation
// always; a CUDA one when the build has CUDA (GRADSYNC_HAVE_CUDA), sharing one
// reference test.
#pragma once

#include <cstddef>
#include <string>

namespace gradsync::runtime {

void sum_into_cpu(float* dst, const float* src, std::size_t count);
void sum_into_cpu(double* dst, const double* src, std::size_t count);

// GPUs this process can use, and why none when the answer is 0 ("no CUDA driver",
// "built without CUDA", ...).
struct GpuAvailability {
  int count = 0;
  std::string reason;
};
GpuAvailability gpu_availability();

// Device buffers (CUDA builds only; throws std::runtime_error without a usable GPU).
void sum_into_cuda(float* device_dst, const float* device_src, std::size_t count);

}  // namespace gradsync::runtime
