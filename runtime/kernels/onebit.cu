// CUDA 1-bit SGD with error feedback (layout and formulas: kernels.h).
//
// Encoding is two launches on the caller's stream:
//   1. onebit_scales_kernel: one block per group (grid-stride over groups), each thread
//      sums its share of v = x + residual by sign (double sums, as on the CPU), a
//      shared-memory tree reduction gives the group's two means, thread 0 stores them;
//   2. onebit_bits_kernel: one thread per output byte (8 values), so no two threads
//      write the same byte even when a group boundary falls inside a byte; it
//      recomputes v (bitwise the same float as in launch 1), writes the bits and
//      the new residual.
// Decoding is one launch, one thread per value.
// Scales are stored byte by byte (little-endian float32, like the host), since they
// are not 4-byte aligned when ceil(n/8) is not a multiple of 4.
#include "runtime/kernels/cuda_util.cuh"
#include "runtime/kernels/kernels.h"

namespace gradsync::runtime {

using namespace cuda_detail;

namespace {

constexpr unsigned kMaxScaleThreads = 256;

__device__ inline void store_float(std::uint8_t* at, float value) {
  const unsigned bits = __float_as_uint(value);
  at[0] = static_cast<std::uint8_t>(bits);
  at[1] = static_cast<std::uint8_t>(bits >> 8);
  at[2] = static_cast<std::uint8_t>(bits >> 16);
  at[3] = static_cast<std::uint8_t>(bits >> 24);
}

__device__ inline float load_float(const std::uint8_t* at) {
  const unsigned bits = static_cast<unsigned>(at[0]) | (static_cast<unsigned>(at[1]) << 8) |
                        (static_cast<unsigned>(at[2]) << 16) | (static_cast<unsigned>(at[3]) << 24);
  return __uint_as_float(bits);
}

// blockDim.x must be a power of two <= kMaxScaleThreads.
__global__ void onebit_scales_kernel(const float* x, const float* residual, std::size_t n, std::size_t column,
                                     std::size_t groups, std::uint8_t* scales) {
  __shared__ double pos_sum[kMaxScaleThreads];
  __shared__ double neg_sum[kMaxScaleThreads];
  __shared__ unsigned long long pos_count[kMaxScaleThreads];
  __shared__ unsigned long long neg_count[kMaxScaleThreads];
  const unsigned t = threadIdx.x;
  for (std::size_t g = blockIdx.x; g < groups; g += gridDim.x) {
    const std::size_t begin = g * column;
    const std::size_t end = begin + column < n ? begin + column : n;
    double ps = 0, ns = 0;
    unsigned long long pc = 0, nc = 0;
    for (std::size_t i = begin + t; i < end; i += blockDim.x) {
      const float v = __fadd_rn(x[i], residual[i]);
      if (v >= 0.0f) {
        ps += v;
        ++pc;
      } else {
        ns += v;
        ++nc;
      }
    }
    pos_sum[t] = ps;
    neg_sum[t] = ns;
    pos_count[t] = pc;
    neg_count[t] = nc;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (t < half) {
        pos_sum[t] += pos_sum[t + half];
        neg_sum[t] += neg_sum[t + half];
        pos_count[t] += pos_count[t + half];
        neg_count[t] += neg_count[t + half];
      }
      __syncthreads();
    }
    if (t == 0) {
      const float pos = pos_count[0] ? static_cast<float>(pos_sum[0] / static_cast<double>(pos_count[0])) : 0.0f;
      const float neg = neg_count[0] ? static_cast<float>(neg_sum[0] / static_cast<double>(neg_count[0])) : 0.0f;
      store_float(scales + 8 * g, pos);
      store_float(scales + 8 * g + 4, neg);
    }
    __syncthreads();  // shared arrays are reused by the next group
  }
}

__global__ void onebit_bits_kernel(const float* x, float* residual, std::size_t n, std::size_t column,
                                   std::uint8_t* out) {
  const std::size_t bit_bytes = (n + 7) / 8;
  const std::uint8_t* scales = out + bit_bytes;
  for (std::size_t b = global_index(); b < bit_bytes; b += grid_stride()) {
    unsigned byte = 0;
    const std::size_t end = 8 * b + 8 < n ? 8 * b + 8 : n;
    for (std::size_t i = 8 * b; i < end; ++i) {
      const float v = __fadd_rn(x[i], residual[i]);
      const bool bit = v >= 0.0f;
      const std::uint8_t* group_scales = scales + 8 * (i / column);
      const float decoded = bit ? load_float(group_scales) : load_float(group_scales + 4);
      residual[i] = __fsub_rn(v, decoded);
      if (bit) byte |= 1u << (i - 8 * b);
    }
    out[b] = static_cast<std::uint8_t>(byte);
  }
}

template <bool Add>
__global__ void onebit_decode_kernel(const std::uint8_t* in, std::size_t n, std::size_t column, float* out) {
  const std::uint8_t* scales = in + (n + 7) / 8;
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    const bool bit = (in[i / 8] >> (i % 8)) & 1u;
    const std::uint8_t* group_scales = scales + 8 * (i / column);
    const float decoded = bit ? load_float(group_scales) : load_float(group_scales + 4);
    out[i] = Add ? __fadd_rn(out[i], decoded) : decoded;
  }
}

void check_column(std::size_t column, const char* function) {
  if (column == 0) throw std::invalid_argument(std::string(function) + ": column must be > 0");
}

unsigned scale_threads(std::size_t column) {
  unsigned threads = 32;
  while (threads < kMaxScaleThreads && threads < column) threads *= 2;
  return threads;
}

}  // namespace

void onebit_encode_cuda(const float* device_x, float* device_residual, std::size_t n, std::size_t column,
                        std::uint8_t* device_out, void* stream) {
  check_column(column, "onebit_encode_cuda");
  if (n == 0) return;
  const std::size_t groups = (n + column - 1) / column;
  const std::size_t max_blocks = std::size_t{1} << 16;
  const unsigned blocks = static_cast<unsigned>(groups < max_blocks ? groups : max_blocks);
  std::uint8_t* scales = device_out + (n + 7) / 8;
  onebit_scales_kernel<<<blocks, scale_threads(column), 0, as_stream(stream)>>>(device_x, device_residual, n, column,
                                                                                 groups, scales);
  check_launch("onebit_encode_cuda");
  onebit_bits_kernel<<<grid_for((n + 7) / 8), kThreads, 0, as_stream(stream)>>>(device_x, device_residual, n, column,
                                                                                  device_out);
  check_launch("onebit_encode_cuda");
}

void onebit_decode_cuda(const std::uint8_t* device_in, std::size_t n, std::size_t column, float* device_out,
                        void* stream) {
  check_column(column, "onebit_decode_cuda");
  if (n == 0) return;
  onebit_decode_kernel<false><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(device_in, n, column, device_out);
  check_launch("onebit_decode_cuda");
}

void onebit_decode_add_cuda(const std::uint8_t* device_in, std::size_t n, std::size_t column, float* device_out,
                            void* stream) {
  check_column(column, "onebit_decode_add_cuda");
  if (n == 0) return;
  onebit_decode_kernel<true><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(device_in, n, column, device_out);
  check_launch("onebit_decode_add_cuda");
}

}  // namespace gradsync::runtime
