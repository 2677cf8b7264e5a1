// CUDA reduction kernel and device discovery (built only when CUDA is found).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "runtime/kernels/reduce.h"

namespace gradsync::runtime {

namespace {
__global__ void sum_into_kernel(float* dst, const float* src, std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    dst[i] += src[i];
  }
}
}  // namespace

GpuAvailability gpu_availability() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) return {0, std::string("no usable GPU: ") + cudaGetErrorString(status)};
  if (count == 0) return {0, "no GPU found"};
  return {count, ""};
}

void sum_into_cuda(float* device_dst, const float* device_src, std::size_t count) {
  if (count == 0) return;
  const unsigned threads = 256;
  const std::size_t wanted = (count + threads - 1) / threads;
  const unsigned blocks = static_cast<unsigned>(wanted < 65535 ? wanted : 65535);
  sum_into_kernel<<<blocks, threads>>>(device_dst, device_src, count);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) throw std::runtime_error(std::string("sum_into_cuda: ") + cudaGetErrorString(status));
}

}  // namespace gradsync::runtime
