// Helpers shared by the CUDA kernel files (private to runtime/kernels).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace gradsync::runtime::cuda_detail {

inline cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

// Throws std::runtime_error("<function>: <step>: <CUDA error text>").
inline void check(cudaError_t status, const char* function, const char* step) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(function) + ": " + step + ": " + cudaGetErrorString(status));
  }
}

// Call right after a <<<...>>> launch: configuration / no-device / no-driver errors.
inline void check_launch(const char* function) { check(cudaGetLastError(), function, "kernel launch"); }

constexpr unsigned kThreads = 256;

// Blocks for a grid-stride loop over `items` with `threads` per block (the loops cover
// whatever a capped grid does not).
inline unsigned grid_for(std::size_t items, unsigned threads = kThreads) {
  const std::size_t wanted = (items + threads - 1) / threads;
  const std::size_t cap = std::size_t{1} << 16;
  return static_cast<unsigned>(wanted < cap ? (wanted == 0 ? 1 : wanted) : cap);
}

// Index of this thread in a 1-D grid and the grid's stride, as 64-bit values.
__device__ inline std::size_t global_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::size_t grid_stride() { return static_cast<std::size_t>(blockDim.x) * gridDim.x; }

}  // namespace gradsync::runtime::cuda_detail
