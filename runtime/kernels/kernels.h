// Numeric kernels the runtime executes on gradient / model buffers, on the CPU and on
// CUDA devices. All buffers are float32.
//
// Naming: `name_cpu` works on host memory; `name_cuda` takes *device* pointers for the
// data buffers and is asynchronous with respect to the host: it is enqueued on `stream`
// (a `cudaStream_t` passed as `void*`; nullptr = the legacy default stream) and the
// caller synchronises before reading the results. Every CUDA entry point checks its
// launches and CUDA calls and throws std::runtime_error("<function>: <CUDA error text>")
// on failure. In builds without CUDA the `_cuda` functions exist and always throw
// std::runtime_error. The CPU and CUDA implementations of one kernel give the same
// results (bitwise for sum_into, divide, block_momentum_update, gather/scatter; for the
// 1-bit scales the per-group sums are accumulated in double in both, in a different
// order). One reference test (tests/runtime/test_kernels.cpp) runs the same
// assertions against both.
//
// This header does not include CUDA headers, so pure C++ code can use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gradsync::runtime {

// ---------------------------------------------------------------------------------
// Devices
// ---------------------------------------------------------------------------------

// GPUs this process can use, and why none when the answer is 0 ("no usable GPU: <CUDA
// error>", "built without CUDA", ...).
struct GpuAvailability {
  int count = 0;
  std::string reason;
};
GpuAvailability gpu_availability();

// ---------------------------------------------------------------------------------
// 1. Reduction: dst[i] += src[i], i < n.
// ---------------------------------------------------------------------------------
void sum_into_cpu(float* dst, const float* src, std::size_t n);
void sum_into_cpu(double* dst, const double* src, std::size_t n);
void sum_into_cuda(float* device_dst, const float* device_src, std::size_t n, void* stream = nullptr);

// ---------------------------------------------------------------------------------
// 2. Averaging: x[i] /= divisor, i < n. A true IEEE division (round to nearest), not a
// multiplication by 1/divisor, so an integer-valued sum of N contributions divided by N
// is exact whenever the quotient is representable.
// ---------------------------------------------------------------------------------
void divide_cpu(float* x, std::size_t n, float divisor);
void divide_cuda(float* device_x, std::size_t n, float divisor, void* stream = nullptr);

// ---------------------------------------------------------------------------------
// 3. 1-bit SGD with error feedback (Seide et al. 2014, CNTK; source D).
//
// The n values are cut into groups of `column` consecutive values (the last group may
// be shorter; column must be > 0, else std::invalid_argument). Encoding quantises
//   v = x + residual
// to one bit per value, bit i = (v[i] >= 0), and keeps per group two float32 scales:
//   pos = mean of the values v >= 0 of the group,  neg = mean of the values v < 0
// (0 when the group has no value of that sign). The decoded value is
//   d[i] = bit i ? pos : neg
// and the quantisation error is fed back into the next encoding:
//   residual[i] = v[i] - d[i].
// Within each sign class of a group the residuals sum to zero, and summed over K
// encodings of the same x the decoded values equal K*x - residual_K: every value is
// eventually transmitted in full.
//
// Encoded layout (onebit_bytes(n, column) bytes):
//   bytes [0, ceil(n/8))          bit i = bit (i % 8) of byte i / 8, least significant
//                                 first; unused high bits of the last byte are 0;
//   then per group g, 8 bytes     float32 pos, float32 neg (host byte order, unaligned).
// n = 0 gives 0 bytes; every function accepts n = 0 and then touches nothing.
// ---------------------------------------------------------------------------------
// (models::one_bit_wire_bytes: the schedule's size of the same payload.)
std::size_t onebit_bytes(std::size_t n, std::size_t column);

// Encodes x (+ residual) into out[0, onebit_bytes(n, column)) and updates residual.
void onebit_encode_cpu(const float* x, float* residual, std::size_t n, std::size_t column, std::uint8_t* out);
// out[i] = d[i] (overwrites).
void onebit_decode_cpu(const std::uint8_t* in, std::size_t n, std::size_t column, float* out);
// out[i] += d[i] (e.g. summing the encoded gradients of several peers).
void onebit_decode_add_cpu(const std::uint8_t* in, std::size_t n, std::size_t column, float* out);

void onebit_encode_cuda(const float* device_x, float* device_residual, std::size_t n, std::size_t column,
                        std::uint8_t* device_out, void* stream = nullptr);
void onebit_decode_cuda(const std::uint8_t* device_in, std::size_t n, std::size_t column, float* device_out,
                        void* stream = nullptr);
void onebit_decode_add_cuda(const std::uint8_t* device_in, std::size_t n, std::size_t column, float* device_out,
                            void* stream = nullptr);

// ---------------------------------------------------------------------------------
// 4. BMUF block update (Chen & Huo 2016; sources C, D), element-wise, i < n.
//
// On entry: model    = W_avg, the freshly averaged model of this block,
//           previous = W_prev, the global model after the last synchronisation,
//           delta    = Δ_prev, the last block update.
// With η = block_momentum and ζ = block_lr:
//   G        = W_avg - W_prev                  (block gradient)
//   Δ        = η · Δ_prev + ζ · G              -> delta
//   W_global = W_prev + Δ                      -> previous
//   model    = W_global                        (plain block momentum), or
//   model    = W_global + η · Δ                (Nesterov: start the next block from the
//                                               look-ahead point)
// Each product and sum is rounded separately (no fused multiply-add), in float32.
// ---------------------------------------------------------------------------------
void block_momentum_update_cpu(float* model, float* previous, float* delta, std::size_t n, float block_momentum,
                               float block_lr, bool nesterov);
void block_momentum_update_cuda(float* device_model, float* device_previous, float* device_delta, std::size_t n,
                                float block_momentum, float block_lr, bool nesterov, void* stream = nullptr);

// ---------------------------------------------------------------------------------
// 5. Gather / scatter of slices (sampled synchronisation, source A: the selected rows).
//
// Slice s is [offsets[s], offsets[s] + counts[s]) in elements; slices may be empty and
// come in any order. gather copies them, in slice order, into consecutive memory:
//   packed[P_s + j] = src[offsets[s] + j],  P_s = counts[0] + ... + counts[s-1],
// and scatter_slices is the inverse: dst[offsets[s] + j] = packed[P_s + j] (elements of
// dst outside the slices are untouched; overlapping slices in scatter: unspecified
// which one wins).
//
// offsets and counts are HOST arrays in both variants (a schedule's slices live on the
// host); only src / packed / dst are device pointers in the CUDA variant. The CUDA
// variant copies a table of the slices to a stream-ordered scratch allocation
// (cudaMallocAsync) and does the whole copy in ONE kernel launch: one thread per packed
// element, finding its slice by binary search in the prefix sums, so thousands of small
// rows cost one launch and skewed slice sizes stay balanced.
// ---------------------------------------------------------------------------------
void gather_slices_cpu(const float* src, const std::uint64_t* offsets, const std::uint64_t* counts,
                       std::size_t slices, float* packed);
void scatter_slices_cpu(const float* packed, const std::uint64_t* offsets, const std::uint64_t* counts,
                        std::size_t slices, float* dst);
void gather_slices_cuda(const float* device_src, const std::uint64_t* offsets, const std::uint64_t* counts,
                        std::size_t slices, float* device_packed, void* stream = nullptr);
void scatter_slices_cuda(const float* device_packed, const std::uint64_t* offsets, const std::uint64_t* counts,
                         std::size_t slices, float* device_dst, void* stream = nullptr);

// ---------------------------------------------------------------------------------
// 7. Timed compute (a training step's layers, gradsync-run --workload): one block per
// multiprocessor kept at work for `seconds` by the GPU's global timer, enqueued on `stream`.
// No CPU variant: host ranks spin or sleep (Memory::compute_for).
// ---------------------------------------------------------------------------------
void spin_for_cuda(double seconds, void* stream = nullptr);

}  // namespace gradsync::runtime
