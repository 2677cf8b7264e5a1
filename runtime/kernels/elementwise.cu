// CUDA element-wise kernels: sum_into, divide, block_momentum_update; device discovery.
// Grid-stride loops, 256 threads per block, explicit round-to-nearest intrinsics so the
// results equal the CPU implementation bit for bit (no FMA contraction, IEEE division
// even under --use_fast_math).
#include "runtime/kernels/cuda_util.cuh"
#include "runtime/kernels/kernels.h"

namespace gradsync::runtime {

using namespace cuda_detail;

namespace {

__global__ void sum_into_kernel(float* dst, const float* src, std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) dst[i] = __fadd_rn(dst[i], src[i]);
}

__global__ void divide_kernel(float* x, std::size_t n, float divisor) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) x[i] = __fdiv_rn(x[i], divisor);
}

__global__ void block_momentum_kernel(float* model, float* previous, float* delta, std::size_t n, float block_momentum,
                                      float block_lr, bool nesterov) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    const float g = __fsub_rn(model[i], previous[i]);
    const float d = __fadd_rn(__fmul_rn(block_momentum, delta[i]), __fmul_rn(block_lr, g));
    const float global = __fadd_rn(previous[i], d);
    delta[i] = d;
    // The model the workers start the next block from; the next block's delta is measured from it.
    model[i] = nesterov ? __fadd_rn(global, __fmul_rn(block_momentum, d)) : global;
    previous[i] = model[i];
  }
}

}  // namespace

GpuAvailability gpu_availability() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // do not leave the error for the next check_launch
    return {0, std::string("no usable GPU: ") + cudaGetErrorString(status)};
  }
  if (count == 0) return {0, "no GPU found"};
  return {count, ""};
}

void sum_into_cuda(float* device_dst, const float* device_src, std::size_t n, void* stream) {
  if (n == 0) return;
  sum_into_kernel<<<grid_for(n), kThreads, 0, as_stream(stream)>>>(device_dst, device_src, n);
  check_launch("sum_into_cuda");
}

void divide_cuda(float* device_x, std::size_t n, float divisor, void* stream) {
  if (n == 0) return;
  divide_kernel<<<grid_for(n), kThreads, 0, as_stream(stream)>>>(device_x, n, divisor);
  check_launch("divide_cuda");
}

void block_momentum_update_cuda(float* device_model, float* device_previous, float* device_delta, std::size_t n,
                                float block_momentum, float block_lr, bool nesterov, void* stream) {
  if (n == 0) return;
  block_momentum_kernel<<<grid_for(n), kThreads, 0, as_stream(stream)>>>(device_model, device_previous, device_delta,
                                                                          n, block_momentum, block_lr, nesterov);
  check_launch("block_momentum_update_cuda");
}

}  // namespace gradsync::runtime
