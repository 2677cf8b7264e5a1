// CUDA gather / scatter of slices (semantics: kernels.h).
//
// One kernel launch per call, whatever the number of slices: the host builds a table
// [offsets[0..S), prefix[0..S]] (prefix = where each slice starts in packed memory),
// copies it to a stream-ordered scratch allocation (cudaMallocAsync / cudaFreeAsync on
// the caller's stream; the copy from pageable memory is staged before
// cudaMemcpyAsync returns, so the host table may die right after), and one thread per
// packed element finds its slice by binary search in prefix (empty slices have
// prefix[s] == prefix[s+1] and are never chosen). Work is balanced however skewed the
// slice sizes are, and accesses to packed memory are coalesced.
#include <vector>

#include "runtime/kernels/cuda_util.cuh"
#include "runtime/kernels/kernels.h"

namespace gradsync::runtime {

using namespace cuda_detail;

namespace {

// table = offsets[slices], then prefix[slices + 1].
template <bool Gather>
__global__ void slices_kernel(const float* from, float* to, const std::uint64_t* table, std::size_t slices,
                              std::uint64_t total) {
  const std::uint64_t* offsets = table;
  const std::uint64_t* prefix = table + slices;
  for (std::uint64_t p = global_index(); p < total; p += grid_stride()) {
    // First index in prefix[0..slices] greater than p, minus one.
    std::size_t lo = 0, hi = slices + 1;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (prefix[mid] <= p) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    const std::size_t s = lo - 1;
    const std::uint64_t element = offsets[s] + (p - prefix[s]);
    if (Gather) {
      to[p] = from[element];
    } else {
      to[element] = from[p];
    }
  }
}

template <bool Gather>
void run_slices(const char* function, const float* from, float* to, const std::uint64_t* offsets,
                const std::uint64_t* counts, std::size_t slices, void* stream_arg) {
  std::vector<std::uint64_t> table(2 * slices + 1);
  std::uint64_t total = 0;
  for (std::size_t s = 0; s < slices; ++s) {
    table[s] = offsets[s];
    table[slices + s] = total;
    total += counts[s];
  }
  table[2 * slices] = total;
  if (total == 0) return;

  const cudaStream_t stream = as_stream(stream_arg);
  void* scratch = nullptr;
  const std::size_t bytes = table.size() * sizeof(std::uint64_t);
  check(cudaMallocAsync(&scratch, bytes, stream), function, "cudaMallocAsync");
  cudaError_t status = cudaMemcpyAsync(scratch, table.data(), bytes, cudaMemcpyHostToDevice, stream);
  const char* step = "cudaMemcpyAsync";
  if (status == cudaSuccess) {
    slices_kernel<Gather><<<grid_for(total), kThreads, 0, stream>>>(from, to, static_cast<std::uint64_t*>(scratch),
                                                                     slices, total);
    status = cudaGetLastError();
    step = "kernel launch";
  }
  const cudaError_t freed = cudaFreeAsync(scratch, stream);
  check(status, function, step);
  check(freed, function, "cudaFreeAsync");
}

}  // namespace

void gather_slices_cuda(const float* device_src, const std::uint64_t* offsets, const std::uint64_t* counts,
                        std::size_t slices, float* device_packed, void* stream) {
  run_slices<true>("gather_slices_cuda", device_src, device_packed, offsets, counts, slices, stream);
}

void scatter_slices_cuda(const float* device_packed, const std::uint64_t* offsets, const std::uint64_t* counts,
                         std::size_t slices, float* device_dst, void* stream) {
  run_slices<false>("scatter_slices_cuda", device_packed, device_dst, offsets, counts, slices, stream);
}

}  // namespace gradsync::runtime
