// A training step's compute on a GPU, for gradsync-run --workload: a kernel that keeps one block
// per multiprocessor at work for a given time, read from the GPU's global nanosecond timer.
#include "runtime/kernels/cuda_util.cuh"
#include "runtime/kernels/kernels.h"

namespace gradsync::runtime {

using namespace cuda_detail;

namespace {

__device__ inline unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(unsigned long long ns, unsigned long long* sink) {
  const unsigned long long start = global_ns();
  unsigned long long spins = 0;
  while (global_ns() - start < ns) ++spins;
  if (spins == 0 && sink) *sink = spins;  // never true in practice; keeps the loop from being removed
}

}  // namespace

void spin_for_cuda(double seconds, void* stream) {
  if (!(seconds > 0)) return;
  int device = 0, sms = 1;
  check(cudaGetDevice(&device), "spin_for_cuda", "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "spin_for_cuda", "cudaDeviceGetAttribute");
  spin_kernel<<<static_cast<unsigned>(sms > 0 ? sms : 1), 32, 0, as_stream(stream)>>>(
      static_cast<unsigned long long>(seconds * 1e9), nullptr);
  check_launch("spin_for_cuda");
}

}  // namespace gradsync::runtime
