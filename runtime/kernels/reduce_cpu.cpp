#include "runtime/kernels/reduce.h"

#include <stdexcept>

#include "gradsync/config.h"

namespace gradsync::runtime {

void sum_into_cpu(float* dst, const float* src, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) dst[i] += src[i];
}

void sum_into_cpu(double* dst, const double* src, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) dst[i] += src[i];
}

#if !GRADSYNC_HAVE_CUDA
GpuAvailability gpu_availability() { return {0, "gradsync was built without CUDA (GRADSYNC_WITH_CUDA=OFF or no toolkit)"}; }

void sum_into_cuda(float*, const float*, std::size_t) {
  throw std::runtime_error("sum_into_cuda: gradsync was built without CUDA");
}
#endif

}  // namespace gradsync::runtime
