// CPU implementations of the kernels in kernels.h (the reference the CUDA ones match).
#include <cstring>
#include <stdexcept>
#include <string>

#include "models/schedule/kernels.h"
#include "runtime/kernels/kernels.h"

namespace gradsync::runtime {

// --- reduction and averaging ------------------------------------------------------

void sum_into_cpu(float* dst, const float* src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
}

void sum_into_cpu(double* dst, const double* src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
}

void divide_cpu(float* x, std::size_t n, float divisor) {
  for (std::size_t i = 0; i < n; ++i) x[i] /= divisor;
}

// --- 1-bit SGD ----------------------------------------------------------------------

std::size_t onebit_bytes(std::size_t n, std::size_t column) {
  if (column == 0) throw std::invalid_argument("onebit_bytes: column must be > 0");
  return static_cast<std::size_t>(models::one_bit_wire_bytes(n, column));  // the one wire size (models/schedule/kernels.h)
}

namespace {

void check_column(std::size_t column, const char* what) {
  if (column == 0) throw std::invalid_argument(std::string(what) + ": column must be > 0");
}

void store_scales(std::uint8_t* at, float pos, float neg) {
  std::memcpy(at, &pos, sizeof pos);
  std::memcpy(at + sizeof pos, &neg, sizeof neg);
}

void load_scales(const std::uint8_t* at, float& pos, float& neg) {
  std::memcpy(&pos, at, sizeof pos);
  std::memcpy(&neg, at + sizeof pos, sizeof neg);
}

template <bool Add>
void onebit_decode_impl(const std::uint8_t* in, std::size_t n, std::size_t column, float* out) {
  const std::uint8_t* scales = in + (n + 7) / 8;
  for (std::size_t begin = 0, g = 0; begin < n; begin += column, ++g) {
    const std::size_t end = begin + column < n ? begin + column : n;
    float pos = 0, neg = 0;
    load_scales(scales + 8 * g, pos, neg);
    for (std::size_t i = begin; i < end; ++i) {
      const float d = ((in[i / 8] >> (i % 8)) & 1u) ? pos : neg;
      if constexpr (Add) {
        out[i] += d;
      } else {
        out[i] = d;
      }
    }
  }
}

}  // namespace

void onebit_encode_cpu(const float* x, float* residual, std::size_t n, std::size_t column, std::uint8_t* out) {
  check_column(column, "onebit_encode_cpu");
  const std::size_t bit_bytes = (n + 7) / 8;
  if (bit_bytes > 0) std::memset(out, 0, bit_bytes);  // (out may be null when n is 0)
  std::uint8_t* scales = out + bit_bytes;
  for (std::size_t begin = 0, g = 0; begin < n; begin += column, ++g) {
    const std::size_t end = begin + column < n ? begin + column : n;
    // Pass 1: the two means of v = x + residual (sums in double, as on the GPU).
    double pos_sum = 0, neg_sum = 0;
    std::size_t pos_count = 0, neg_count = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const float v = x[i] + residual[i];
      if (v >= 0.0f) {
        pos_sum += v;
        ++pos_count;
      } else {
        neg_sum += v;
        ++neg_count;
      }
    }
    const float pos = pos_count ? static_cast<float>(pos_sum / static_cast<double>(pos_count)) : 0.0f;
    const float neg = neg_count ? static_cast<float>(neg_sum / static_cast<double>(neg_count)) : 0.0f;
    store_scales(scales + 8 * g, pos, neg);
    // Pass 2: bits and error feedback.
    for (std::size_t i = begin; i < end; ++i) {
      const float v = x[i] + residual[i];
      const bool bit = v >= 0.0f;
      if (bit) out[i / 8] = static_cast<std::uint8_t>(out[i / 8] | (1u << (i % 8)));
      residual[i] = v - (bit ? pos : neg);
    }
  }
}

void onebit_decode_cpu(const std::uint8_t* in, std::size_t n, std::size_t column, float* out) {
  check_column(column, "onebit_decode_cpu");
  onebit_decode_impl<false>(in, n, column, out);
}

void onebit_decode_add_cpu(const std::uint8_t* in, std::size_t n, std::size_t column, float* out) {
  check_column(column, "onebit_decode_add_cpu");
  onebit_decode_impl<true>(in, n, column, out);
}

// --- BMUF ---------------------------------------------------------------------------

// Every product and sum rounded to float separately, as in the CUDA kernel
// (__fmul_rn / __fadd_rn): no contraction into fused multiply-adds on targets that
// have them (aarch64, x86-64 with -mfma).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
void block_momentum_update_cpu(float* model, float* previous, float* delta, std::size_t n, float block_momentum,
                               float block_lr, bool nesterov) {
  for (std::size_t i = 0; i < n; ++i) {
    const float g = model[i] - previous[i];
    const float momentum_part = block_momentum * delta[i];
    const float lr_part = block_lr * g;
    const float d = momentum_part + lr_part;
    const float global = previous[i] + d;
    delta[i] = d;
    if (nesterov) {
      const float look_ahead = block_momentum * d;
      model[i] = global + look_ahead;
    } else {
      model[i] = global;
    }
    // The model the workers start the next block from: the next block's delta is measured from
    // it, as CNTK's BlockMomentumSGD keeps it. Measured from the global model instead, the delta
    // would carry the look-ahead again and grow by momentum x (1 + learning rate) a block.
    previous[i] = model[i];
  }
}
#if !defined(__clang__) && defined(__GNUC__)
#pragma GCC pop_options
#endif

// --- gather / scatter -------------------------------------------------------------

void gather_slices_cpu(const float* src, const std::uint64_t* offsets, const std::uint64_t* counts,
                       std::size_t slices, float* packed) {
  for (std::size_t s = 0; s < slices; ++s) {
    if (counts[s] == 0) continue;
    std::memcpy(packed, src + offsets[s], counts[s] * sizeof(float));
    packed += counts[s];
  }
}

void scatter_slices_cpu(const float* packed, const std::uint64_t* offsets, const std::uint64_t* counts,
                        std::size_t slices, float* dst) {
  for (std::size_t s = 0; s < slices; ++s) {
    if (counts[s] == 0) continue;
    std::memcpy(dst + offsets[s], packed, counts[s] * sizeof(float));
    packed += counts[s];
  }
}

}  // namespace gradsync::runtime
