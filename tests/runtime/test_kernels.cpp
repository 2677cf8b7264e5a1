// One reference test for every implementation of the runtime kernels (kernels.h).
//
// Each test is written once against `Impl`, a table of host-pointer functions. The CPU
// table holds the `_cpu` functions; the CUDA table holds wrappers that copy the inputs
// into device buffers, run the `_cuda` function on a non-default stream, synchronise
// and copy the results back. The very same assertions therefore run on both; the CUDA
// instantiation is skipped, with gpu_availability()'s reason, when no GPU is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "gradsync/config.h"
#include "runtime/kernels/kernels.h"

#if GRADSYNC_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace {

using namespace gradsync::runtime;
using Bytes = std::vector<std::uint8_t>;
using Floats = std::vector<float>;

struct Impl {
  std::string name;
  bool (*usable)(std::string& reason);
  void (*sum_into)(float* dst, const float* src, std::size_t n);
  void (*divide)(float* x, std::size_t n, float divisor);
  void (*onebit_encode)(const float* x, float* residual, std::size_t n, std::size_t column, std::uint8_t* out);
  void (*onebit_decode)(const std::uint8_t* in, std::size_t n, std::size_t column, float* out);
  void (*onebit_decode_add)(const std::uint8_t* in, std::size_t n, std::size_t column, float* out);
  void (*block_momentum_update)(float* model, float* previous, float* delta, std::size_t n, float block_momentum,
                                float block_lr, bool nesterov);
  void (*gather_slices)(const float* src, const std::uint64_t* offsets, const std::uint64_t* counts,
                        std::size_t slices, float* packed);
  void (*scatter_slices)(const float* packed, const std::uint64_t* offsets, const std::uint64_t* counts,
                         std::size_t slices, float* dst);
};

// --- CPU -----------------------------------------------------------------------------

void sum_into_cpu_float(float* dst, const float* src, std::size_t n) { sum_into_cpu(dst, src, n); }

Impl cpu_impl() {
  return {"Cpu",
          [](std::string&) { return true; },
          sum_into_cpu_float,
          divide_cpu,
          onebit_encode_cpu,
          onebit_decode_cpu,
          onebit_decode_add_cpu,
          block_momentum_update_cpu,
          gather_slices_cpu,
          scatter_slices_cpu};
}

// --- CUDA (device buffers: copy in, run, copy out) -------------------------------------

bool cuda_usable(std::string& reason) {
  const GpuAvailability gpus = gpu_availability();
  if (gpus.count > 0) return true;
  reason = gpus.reason;
  return false;
}

#if GRADSYNC_HAVE_CUDA
void cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

cudaStream_t test_stream() {
  static cudaStream_t stream = [] {
    cudaStream_t s = nullptr;
    cuda_ok(cudaStreamCreate(&s), "cudaStreamCreate");
    return s;
  }();
  return stream;
}

void finish() { cuda_ok(cudaStreamSynchronize(test_stream()), "cudaStreamSynchronize"); }

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer(const T* host, std::size_t n) : n_(n) {
    if (n_ == 0) return;
    cuda_ok(cudaMalloc(&data_, n_ * sizeof(T)), "cudaMalloc");
    if (host) cuda_ok(cudaMemcpy(data_, host, n_ * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (data_) cudaFree(data_);
  }
  T* get() const { return data_; }
  void copy_to(T* host) const {
    if (n_) cuda_ok(cudaMemcpy(host, data_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  }

 private:
  std::size_t n_;
  T* data_ = nullptr;
};

std::size_t slice_extent(const std::uint64_t* offsets, const std::uint64_t* counts, std::size_t slices) {
  std::uint64_t extent = 0;
  for (std::size_t s = 0; s < slices; ++s) {
    if (counts[s]) extent = std::max(extent, offsets[s] + counts[s]);
  }
  return extent;
}

std::size_t slice_total(const std::uint64_t* counts, std::size_t slices) {
  return std::accumulate(counts, counts + slices, std::uint64_t{0});
}

Impl cuda_impl() {
  return {
      "Cuda",
      cuda_usable,
      [](float* dst, const float* src, std::size_t n) {
        DeviceBuffer<float> d(dst, n), s(src, n);
        sum_into_cuda(d.get(), s.get(), n, test_stream());
        finish();
        d.copy_to(dst);
      },
      [](float* x, std::size_t n, float divisor) {
        DeviceBuffer<float> d(x, n);
        divide_cuda(d.get(), n, divisor, test_stream());
        finish();
        d.copy_to(x);
      },
      [](const float* x, float* residual, std::size_t n, std::size_t column, std::uint8_t* out) {
        DeviceBuffer<float> dx(x, n), dr(residual, n);
        DeviceBuffer<std::uint8_t> dout(nullptr, onebit_bytes(n, column));
        onebit_encode_cuda(dx.get(), dr.get(), n, column, dout.get(), test_stream());
        finish();
        dr.copy_to(residual);
        dout.copy_to(out);
      },
      [](const std::uint8_t* in, std::size_t n, std::size_t column, float* out) {
        DeviceBuffer<std::uint8_t> din(in, onebit_bytes(n, column));
        DeviceBuffer<float> dout(nullptr, n);
        onebit_decode_cuda(din.get(), n, column, dout.get(), test_stream());
        finish();
        dout.copy_to(out);
      },
      [](const std::uint8_t* in, std::size_t n, std::size_t column, float* out) {
        DeviceBuffer<std::uint8_t> din(in, onebit_bytes(n, column));
        DeviceBuffer<float> dout(out, n);
        onebit_decode_add_cuda(din.get(), n, column, dout.get(), test_stream());
        finish();
        dout.copy_to(out);
      },
      [](float* model, float* previous, float* delta, std::size_t n, float block_momentum, float block_lr,
         bool nesterov) {
        DeviceBuffer<float> dm(model, n), dp(previous, n), dd(delta, n);
        block_momentum_update_cuda(dm.get(), dp.get(), dd.get(), n, block_momentum, block_lr, nesterov,
                                   test_stream());
        finish();
        dm.copy_to(model);
        dp.copy_to(previous);
        dd.copy_to(delta);
      },
      [](const float* src, const std::uint64_t* offsets, const std::uint64_t* counts, std::size_t slices,
         float* packed) {
        const std::size_t total = slice_total(counts, slices);
        DeviceBuffer<float> dsrc(src, slice_extent(offsets, counts, slices));
        DeviceBuffer<float> dpacked(packed, total);
        gather_slices_cuda(dsrc.get(), offsets, counts, slices, dpacked.get(), test_stream());
        finish();
        dpacked.copy_to(packed);
      },
      [](const float* packed, const std::uint64_t* offsets, const std::uint64_t* counts, std::size_t slices,
         float* dst) {
        const std::size_t extent = slice_extent(offsets, counts, slices);
        DeviceBuffer<float> dpacked(packed, slice_total(counts, slices));
        DeviceBuffer<float> ddst(dst, extent);  // copied in: elements outside the slices must survive
        scatter_slices_cuda(dpacked.get(), offsets, counts, slices, ddst.get(), test_stream());
        finish();
        ddst.copy_to(dst);
      },
  };
}
#else
Impl cuda_impl() { return {"Cuda", cuda_usable, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr}; }
#endif

void PrintTo(const Impl& impl, std::ostream* os) { *os << impl.name; }

class Kernels : public ::testing::TestWithParam<Impl> {
 protected:
  void SetUp() override {
    std::string reason;
    if (!GetParam().usable(reason)) GTEST_SKIP() << GetParam().name << " kernels not run: " << reason;
  }
  const Impl& impl() const { return GetParam(); }
};

INSTANTIATE_TEST_SUITE_P(Implementations, Kernels, ::testing::Values(cpu_impl(), cuda_impl()),
                         [](const ::testing::TestParamInfo<Impl>& info) { return info.param.name; });

// Integer-valued floats in [-500, 499]: sums are exact in any order.
Floats pattern(std::size_t n, int seed) {
  Floats v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7 + seed * 13) % 1000) - 500.0f;
  return v;
}

const std::size_t kSizes[] = {0, 1, 7, (std::size_t{1} << 20) + 3};

// --- 1. sum_into ---------------------------------------------------------------------

TEST_P(Kernels, SumIntoIsExact) {
  for (std::size_t n : kSizes) {
    Floats dst = pattern(n, 1);
    const Floats src = pattern(n, 2);
    Floats expected(n);
    for (std::size_t i = 0; i < n; ++i) expected[i] = dst[i] + src[i];
    impl().sum_into(dst.data(), src.data(), n);
    ASSERT_EQ(dst, expected) << "n=" << n;
  }
}

// --- 2. divide -----------------------------------------------------------------------

TEST_P(Kernels, DivideOfNTimesIntegerByNIsExact) {
  for (float ranks : {1.0f, 2.0f, 3.0f, 4.0f, 7.0f, 8.0f, 13.0f}) {
    for (std::size_t n : kSizes) {
      Floats k(n), x(n);
      for (std::size_t i = 0; i < n; ++i) {
        k[i] = static_cast<float>(static_cast<long>((i * 7919 + 17) % 200001) - 100000);
        x[i] = ranks * k[i];  // |x| <= 1.3e6 < 2^24: exact
      }
      impl().divide(x.data(), n, ranks);
      ASSERT_EQ(x, k) << "N=" << ranks << " n=" << n;
    }
  }
  // The test discriminates: multiplying by the reciprocal would not be exact for N = 7.
  std::size_t reciprocal_misses = 0;
  const float inverse7 = 1.0f / 7.0f;
  for (long k = -100000; k <= 100000; ++k) {
    const float x = 7.0f * static_cast<float>(k);
    reciprocal_misses += (x * inverse7 != static_cast<float>(k));
  }
  EXPECT_GT(reciprocal_misses, 0u);
}

TEST_P(Kernels, DivideIsCorrectlyRoundedDivision) {
  const std::size_t n = 10007;
  Floats x(n), expected(n);
  std::mt19937 random(7);
  std::uniform_real_distribution<float> value(-1000.0f, 1000.0f);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = value(random);
    expected[i] = x[i] / 3.0f;
  }
  impl().divide(x.data(), n, 3.0f);
  EXPECT_EQ(x, expected);
}

// --- 3. 1-bit SGD --------------------------------------------------------------------

struct Encoded {
  Bytes bytes;
  Floats decoded;
};

Encoded encode_decode(const Impl& impl, const Floats& x, Floats& residual, std::size_t column) {
  Encoded e;
  e.bytes.assign(onebit_bytes(x.size(), column), 0xAA);  // garbage the encoder must overwrite
  impl.onebit_encode(x.data(), residual.data(), x.size(), column, e.bytes.data());
  e.decoded.assign(x.size(), 12345.0f);  // garbage decode must overwrite
  impl.onebit_decode(e.bytes.data(), x.size(), column, e.decoded.data());
  return e;
}

float scale_at(const Bytes& bytes, std::size_t n, std::size_t group, int which) {
  float value = 0;
  std::memcpy(&value, bytes.data() + (n + 7) / 8 + 8 * group + 4 * which, sizeof value);
  return value;
}

TEST(OnebitBytes, CountsBitsThenTwoScalesPerGroup) {
  EXPECT_EQ(onebit_bytes(0, 5), 0u);
  EXPECT_EQ(onebit_bytes(1, 5), 1u + 8u);
  EXPECT_EQ(onebit_bytes(5, 5), 1u + 8u);
  EXPECT_EQ(onebit_bytes(8, 8), 1u + 8u);
  EXPECT_EQ(onebit_bytes(9, 4), 2u + 3u * 8u);
  EXPECT_EQ(onebit_bytes(15, 4), 2u + 4u * 8u);
  EXPECT_EQ(onebit_bytes(1000, 64), 125u + 16u * 8u);
  EXPECT_EQ(onebit_bytes(1001, 1), 126u + 1001u * 8u);
  EXPECT_THROW(onebit_bytes(5, 0), std::invalid_argument);
  Floats x(5, 1.0f), residual(5, 0.0f), out(5);
  Bytes bytes(64);
  EXPECT_THROW(onebit_encode_cpu(x.data(), residual.data(), 5, 0, bytes.data()), std::invalid_argument);
  EXPECT_THROW(onebit_decode_cpu(bytes.data(), 5, 0, out.data()), std::invalid_argument);
  EXPECT_THROW(onebit_decode_add_cpu(bytes.data(), 5, 0, out.data()), std::invalid_argument);
#if GRADSYNC_HAVE_CUDA
  // Checked before anything touches the device, so this holds without a GPU too.
  EXPECT_THROW(onebit_encode_cuda(nullptr, nullptr, 5, 0, nullptr), std::invalid_argument);
  EXPECT_THROW(onebit_decode_cuda(nullptr, 5, 0, nullptr), std::invalid_argument);
  EXPECT_THROW(onebit_decode_add_cuda(nullptr, 5, 0, nullptr), std::invalid_argument);
#endif
}

TEST_P(Kernels, OnebitHandExample) {
  const Floats x = {3.0f, -1.0f, 2.0f, -3.0f, 0.5f};
  Floats residual(5, 0.0f);
  const Encoded e = encode_decode(impl(), x, residual, 5);
  const float pos = static_cast<float>(5.5 / 3.0);  // (3 + 2 + 0.5) / 3
  const float neg = -2.0f;                          // (-1 - 3) / 2
  ASSERT_EQ(e.bytes.size(), 9u);
  EXPECT_EQ(e.bytes[0], 0b10101);  // bits 0, 2, 4 set; unused high bits 0
  EXPECT_EQ(scale_at(e.bytes, 5, 0, 0), pos);
  EXPECT_EQ(scale_at(e.bytes, 5, 0, 1), neg);
  EXPECT_EQ(e.decoded, (Floats{pos, neg, pos, neg, pos}));
  EXPECT_EQ(residual, (Floats{3.0f - pos, 1.0f, 2.0f - pos, -1.0f, 0.5f - pos}));
  // The residuals of each sign class sum to zero: nothing is lost.
  EXPECT_NEAR(residual[0] + residual[2] + residual[4], 0.0f, 1e-6f);
}

TEST_P(Kernels, OnebitResidualIsAddedBeforeQuantising) {
  const Floats x = {1.0f, -1.0f};
  Floats residual = {-2.0f, 0.5f};  // v = {-1, -0.5}: both negative
  const Encoded e = encode_decode(impl(), x, residual, 2);
  EXPECT_EQ(e.bytes[0], 0);
  EXPECT_EQ(scale_at(e.bytes, 2, 0, 0), 0.0f);  // no non-negative value
  EXPECT_EQ(scale_at(e.bytes, 2, 0, 1), -0.75f);
  EXPECT_EQ(e.decoded, (Floats{-0.75f, -0.75f}));
  EXPECT_EQ(residual, (Floats{-0.25f, 0.25f}));
}

// Column 4, n = 15: an all-positive group, an all-negative group, an all-zero group
// (zero counts as non-negative) and a short last group of 3 values; groups straddle
// no byte here but the last one ends inside byte 1.
const Floats kOneSignExample = {1, 2, 3, 6, -1, -2, -3, -6, 0, 0, 0, 0, 7, -7, 1};

TEST_P(Kernels, OnebitOneSignGroupsAndShortLastGroup) {
  Floats residual(15, 0.0f);
  const Encoded e = encode_decode(impl(), kOneSignExample, residual, 4);
  ASSERT_EQ(e.bytes.size(), 2u + 4u * 8u);
  EXPECT_EQ(e.bytes[0], 0x0F);        // group 0 all set, group 1 all clear
  EXPECT_EQ(e.bytes[1], 0b01011111);  // group 2 all set (zeros), then 1, 0, 1; bit 15 unused
  const float expected_scales[4][2] = {{3, 0}, {0, -3}, {0, 0}, {4, -7}};
  for (std::size_t g = 0; g < 4; ++g) {
    EXPECT_EQ(scale_at(e.bytes, 15, g, 0), expected_scales[g][0]) << "group " << g;
    EXPECT_EQ(scale_at(e.bytes, 15, g, 1), expected_scales[g][1]) << "group " << g;
  }
  EXPECT_EQ(e.decoded, (Floats{3, 3, 3, 3, -3, -3, -3, -3, 0, 0, 0, 0, 4, -7, 4}));
  EXPECT_EQ(residual, (Floats{-2, -1, 0, 3, 2, 1, 0, -3, 0, 0, 0, 0, 3, 0, -3}));
}

TEST_P(Kernels, OnebitColumnNotAMultipleOfEight) {
  // Column 3: group boundaries fall inside bytes. v = x, so bits = signs.
  const Floats x = {1, -1, 2, -2, -4, 6, 5, 5, -5, 1, 1, 1, -8, -9, 3, 0, 2};
  Floats residual(x.size(), 0.0f);
  const Encoded e = encode_decode(impl(), x, residual, 3);
  ASSERT_EQ(e.bytes.size(), 3u + 6u * 8u);
  EXPECT_EQ(e.bytes[0], 0b11100101);
  EXPECT_EQ(e.bytes[1], 0b11001110);
  EXPECT_EQ(e.bytes[2], 0b1);
  EXPECT_EQ(e.decoded, (Floats{1.5f, -1, 1.5f, -3, -3, 6, 5, 5, -5, 1, 1, 1, -8.5f, -8.5f, 3, 1, 1}));
}

TEST_P(Kernels, OnebitDecodeAddAddsOntoExistingData) {
  Floats residual(15, 0.0f);
  Bytes bytes(onebit_bytes(15, 4));
  impl().onebit_encode(kOneSignExample.data(), residual.data(), 15, 4, bytes.data());
  Floats out(15);
  for (std::size_t i = 0; i < 15; ++i) out[i] = 100.0f * static_cast<float>(i);
  impl().onebit_decode_add(bytes.data(), 15, 4, out.data());
  const Floats decoded = {3, 3, 3, 3, -3, -3, -3, -3, 0, 0, 0, 0, 4, -7, 4};
  for (std::size_t i = 0; i < 15; ++i) EXPECT_EQ(out[i], 100.0f * static_cast<float>(i) + decoded[i]) << i;
  // Twice: the sum of two peers' identical contributions.
  impl().onebit_decode_add(bytes.data(), 15, 4, out.data());
  for (std::size_t i = 0; i < 15; ++i) EXPECT_EQ(out[i], 100.0f * static_cast<float>(i) + 2 * decoded[i]) << i;
}

TEST_P(Kernels, OnebitEmptyBufferIsZeroBytes) {
  Floats x, residual, out;
  Bytes bytes;
  EXPECT_EQ(onebit_bytes(0, 7), 0u);
  impl().onebit_encode(x.data(), residual.data(), 0, 7, bytes.data());
  impl().onebit_decode(bytes.data(), 0, 7, out.data());
  impl().onebit_decode_add(bytes.data(), 0, 7, out.data());
}

// Error feedback. Encoding the same gradient g for K iterations transmits, in total,
//   sum_k decoded_k = sum_k (g + r_{k-1} - r_k) = K g - r_K,
// so if r stays bounded every value is eventually transmitted in full.
//
// Bound. Per group (size m), decoding replaces v by its mean on each sign class: the
// orthogonal projection P onto vectors constant on the classes, so r' = v - Pv and
// |r'|^2 = |v|^2 - |Pv|^2. With S+ (p values) and S- (q values) the sums of |v| over
// the classes, |Pv|^2 = S+^2/p + S-^2/q >= (S+ + S-)^2/m = |v|_1^2/m >= |v|^2/m
// (Cauchy-Schwarz), so |r'| <= c |v|, c = sqrt(1 - 1/m). With v = g + r and r_0 = 0:
//   |r_k| <= c (|g| + |r_{k-1}|)  =>  |r_k| <= c / (1 - c) * |g|   (Euclidean norms).
// A bound independent of m such as |r_i| <= 2 max|g| does NOT hold: with g = (1, ...,
// 1, 1 + (m-1)d) every value is positive, the large one gains (m-1)^2 d / m per
// iteration while the others lose (m-1) d / m, and the large residual reaches about
// (m-1) max|g| before the small values turn negative (the adversarial case below).
struct FeedbackCase {
  const char* name;
  Floats g;
  std::size_t column;
  float naive_bound_exceeded_by;  // 0: no claim; else max_k |r_k|_inf > this * max|g| at some k
};

TEST_P(Kernels, OnebitErrorFeedbackTransmitsEverythingEventually) {
  std::vector<FeedbackCase> cases;
  {
    FeedbackCase random_case{"random, column 64, last group 40", Floats(1000), 64, 0.0f};
    std::mt19937 random(42);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (std::size_t i = 0; i < random_case.g.size(); ++i) {
      // Mixed scales and biases per group, some groups of one sign.
      const std::size_t group = i / 64;
      random_case.g[i] = normal(random) * (0.1f + 0.2f * static_cast<float>(group % 5)) +
                         (group % 3 == 0 ? 2.0f : 0.0f) - (group % 7 == 1 ? 3.0f : 0.0f);
    }
    cases.push_back(random_case);
  }
  cases.push_back({"adversarial, column 8", {1, 1, 1, 1, 1, 1, 1, 1.07f}, 8, 4.0f});

  const int iterations = 1000;
  for (const FeedbackCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::size_t n = c.g.size();
    const std::size_t groups = (n + c.column - 1) / c.column;
    std::vector<double> bound(groups);  // c/(1-c) |g_group|, +1e-3 relative slack for float rounding
    for (std::size_t gi = 0; gi < groups; ++gi) {
      const std::size_t begin = gi * c.column, end = std::min(n, begin + c.column);
      double norm2 = 0;
      for (std::size_t i = begin; i < end; ++i) norm2 += static_cast<double>(c.g[i]) * c.g[i];
      const double m = static_cast<double>(end - begin);
      const double contraction = std::sqrt(1.0 - 1.0 / m);
      bound[gi] = (m == 1 ? 0.0 : contraction / (1.0 - contraction)) * std::sqrt(norm2) * (1.0 + 1e-3) + 1e-5;
    }
    const float max_g = std::abs(*std::max_element(c.g.begin(), c.g.end(),
                                                   [](float a, float b) { return std::abs(a) < std::abs(b); }));

    Floats residual(n, 0.0f);
    std::vector<double> transmitted(n, 0.0);
    float max_residual = 0;
    for (int k = 0; k < iterations; ++k) {
      const Encoded e = encode_decode(impl(), c.g, residual, c.column);
      for (std::size_t i = 0; i < n; ++i) {
        transmitted[i] += e.decoded[i];
        max_residual = std::max(max_residual, std::abs(residual[i]));
      }
      for (std::size_t gi = 0; gi < groups; ++gi) {
        const std::size_t begin = gi * c.column, end = std::min(n, begin + c.column);
        double norm2 = 0, sum = 0, magnitude = 0;
        for (std::size_t i = begin; i < end; ++i) {
          norm2 += static_cast<double>(residual[i]) * residual[i];
          sum += residual[i];
          magnitude += std::abs(c.g[i]) + std::abs(residual[i]);
        }
        ASSERT_LE(std::sqrt(norm2), bound[gi]) << "iteration " << k << " group " << gi;
        // The class means are exact up to rounding: a group's residuals sum to ~0.
        ASSERT_LE(std::abs(sum), 1e-5 * magnitude + 1e-6) << "iteration " << k << " group " << gi;
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      const double expected = static_cast<double>(iterations) * c.g[i] - residual[i];
      ASSERT_NEAR(transmitted[i], expected, 1e-3 * (std::abs(static_cast<double>(iterations) * c.g[i]) + 1.0))
          << "i=" << i;
    }
    if (c.naive_bound_exceeded_by > 0) {
      EXPECT_GT(max_residual, c.naive_bound_exceeded_by * max_g);
    }
  }
}

// --- 4. BMUF -------------------------------------------------------------------------

struct BmufCall {
  Floats model, previous, delta;
};

void expect_bmuf(const Impl& impl, bool nesterov, float block_lr, const BmufCall& first, const BmufCall& second) {
  SCOPED_TRACE(std::string(nesterov ? "nesterov" : "plain") + " block_lr " + std::to_string(block_lr));
  const float block_momentum = 0.75f;
  Floats previous = {0, 1, -2};   // the model this block started from (the last block's result)
  Floats delta = {0, 0.5f, 1};    // last block update
  Floats model = {1, 2, -4};      // freshly averaged model
  impl.block_momentum_update(model.data(), previous.data(), delta.data(), 3, block_momentum, block_lr, nesterov);
  EXPECT_EQ(model, first.model);
  EXPECT_EQ(previous, first.previous);
  EXPECT_EQ(delta, first.delta);
  // The next block trains from `model`; the workers' average moved by {1, -1, 0.5}.
  const Floats progress = {1, -1, 0.5f};
  for (std::size_t i = 0; i < 3; ++i) model[i] += progress[i];
  impl.block_momentum_update(model.data(), previous.data(), delta.data(), 3, block_momentum, block_lr, nesterov);
  EXPECT_EQ(model, second.model);
  EXPECT_EQ(previous, second.previous);
  EXPECT_EQ(delta, second.delta);
}

TEST_P(Kernels, BlockMomentumPlainHandComputed) {
  // lr 1, element 1: G = 2-1 = 1, delta = 0.75*0.5 + 1 = 1.375, previous = 1 + 1.375.
  // Second call, element 1: model 2.375-1 = 1.375, G = -1, delta = 0.75*1.375 - 1 = 0.03125.
  expect_bmuf(impl(), false, 1.0f, {{1, 2.375f, -3.25f}, {1, 2.375f, -3.25f}, {1, 1.375f, -1.25f}},
              {{2.75f, 2.40625f, -3.6875f}, {2.75f, 2.40625f, -3.6875f}, {1.75f, 0.03125f, -0.4375f}});
  // lr 0.5, element 1: delta = 0.75*0.5 + 0.5*1 = 0.875, previous = 1.875. Second call:
  // model 1.875 - 1 = 0.875, G = 0.875 - 1.875 = -1, delta = 0.65625 - 0.5 = 0.15625.
  expect_bmuf(impl(), false, 0.5f, {{0.5f, 1.875f, -2.25f}, {0.5f, 1.875f, -2.25f}, {0.5f, 0.875f, -0.25f}},
              {{1.375f, 2.03125f, -2.1875f}, {1.375f, 2.03125f, -2.1875f}, {0.875f, 0.15625f, 0.0625f}});
}

TEST_P(Kernels, BlockMomentumNesterovHandComputed) {
  // lr 1, element 1: delta and the global model as in the plain case (1.375, 2.375); the model
  // looks ahead, 2.375 + 0.75 * 1.375 = 3.40625, and the next block starts from it, so previous
  // becomes it too (CNTK's prevWeight). Second call: the average moved by -1 from there, 2.40625,
  // G = 2.40625 - 3.40625 = -1 (the block's progress alone), delta = 1.03125 - 1 = 0.03125,
  // global = 3.4375, model = previous = 3.4375 + 0.0234375.
  expect_bmuf(impl(), true, 1.0f, {{1.75f, 3.40625f, -4.1875f}, {1.75f, 3.40625f, -4.1875f}, {1, 1.375f, -1.25f}},
              {{4.8125f, 3.4609375f, -4.953125f}, {4.8125f, 3.4609375f, -4.953125f}, {1.75f, 0.03125f, -0.4375f}});
  // lr 0.5, element 1: delta 0.875, global 1.875, model = previous = 1.875 + 0.65625. Second call:
  // G = -1, delta = 0.65625 - 0.5 = 0.15625, global 2.6875, model = previous = 2.6875 + 0.1171875.
  expect_bmuf(impl(), true, 0.5f, {{0.875f, 2.53125f, -2.4375f}, {0.875f, 2.53125f, -2.4375f}, {0.5f, 0.875f, -0.25f}},
              {{2.40625f, 2.8046875f, -2.328125f}, {2.40625f, 2.8046875f, -2.328125f}, {0.875f, 0.15625f, 0.0625f}});
}

TEST_P(Kernels, BlockMomentumWithoutMomentumIsModelAveraging) {
  // block_momentum 0, block_lr 1: the global model becomes the average (exact on
  // integer-valued data), on a buffer large enough for a multi-block launch.
  const std::size_t n = (std::size_t{1} << 20) + 3;
  Floats model = pattern(n, 3), previous = pattern(n, 4), delta = pattern(n, 5);
  const Floats average = model, old_previous = previous;
  impl().block_momentum_update(model.data(), previous.data(), delta.data(), n, 0.0f, 1.0f, false);
  ASSERT_EQ(model, average);
  ASSERT_EQ(previous, average);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(delta[i], average[i] - old_previous[i]) << i;
  impl().block_momentum_update(model.data(), previous.data(), delta.data(), 0, 0.75f, 1.0f, true);  // n = 0
}

// --- 5. gather / scatter -------------------------------------------------------------

TEST_P(Kernels, GatherPacksInSliceOrder) {
  Floats src(10);
  std::iota(src.begin(), src.end(), 0.0f);
  const std::vector<std::uint64_t> offsets = {7, 0, 4, 3, 9};
  const std::vector<std::uint64_t> counts = {2, 0, 3, 0, 1};
  Floats packed(6, -1.0f);
  impl().gather_slices(src.data(), offsets.data(), counts.data(), 5, packed.data());
  EXPECT_EQ(packed, (Floats{7, 8, 4, 5, 6, 9}));
  Floats dst(10, -1.0f);
  impl().scatter_slices(packed.data(), offsets.data(), counts.data(), 5, dst.data());
  EXPECT_EQ(dst, (Floats{-1, -1, -1, -1, 4, 5, 6, 7, 8, 9}));
  // No slices / only empty slices: nothing is touched.
  impl().gather_slices(src.data(), offsets.data(), counts.data(), 0, packed.data());
  const std::vector<std::uint64_t> zeros = {0, 0};
  impl().gather_slices(src.data(), offsets.data(), zeros.data(), 2, packed.data());
  impl().scatter_slices(packed.data(), offsets.data(), zeros.data(), 2, dst.data());
  EXPECT_EQ(packed, (Floats{7, 8, 4, 5, 6, 9}));
  EXPECT_EQ(dst, (Floats{-1, -1, -1, -1, 4, 5, 6, 7, 8, 9}));
}

TEST_P(Kernels, GatherScatterRoundTripOnRandomSlices) {
  std::mt19937 random(2024);
  for (std::size_t wanted_slices : {1u, 37u, 3000u}) {
    SCOPED_TRACE("slices " + std::to_string(wanted_slices));
    // Disjoint rows of a buffer in random order, some empty, sizes 0..300 (skewed).
    std::vector<std::uint64_t> offsets, counts;
    std::uint64_t cursor = 0;
    for (std::size_t s = 0; s < wanted_slices; ++s) {
      cursor += random() % 50;  // gap
      const std::uint64_t count = (random() % 4 == 0) ? 0 : (random() % 8 == 0 ? random() % 300 : random() % 5);
      offsets.push_back(cursor);
      counts.push_back(count);
      cursor += count;
    }
    std::vector<std::size_t> order(wanted_slices);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), random);
    std::vector<std::uint64_t> o(wanted_slices), c(wanted_slices);
    for (std::size_t s = 0; s < wanted_slices; ++s) {
      o[s] = offsets[order[s]];
      c[s] = counts[order[s]];
    }
    const std::size_t length = cursor + 5;
    Floats src(length);
    for (std::size_t i = 0; i < length; ++i) src[i] = static_cast<float>(random() % 100000) + 0.25f;
    const std::uint64_t total = std::accumulate(c.begin(), c.end(), std::uint64_t{0});

    Floats packed(total, -7.0f);
    impl().gather_slices(src.data(), o.data(), c.data(), wanted_slices, packed.data());
    std::size_t p = 0;
    for (std::size_t s = 0; s < wanted_slices; ++s) {
      for (std::uint64_t j = 0; j < c[s]; ++j, ++p) ASSERT_EQ(packed[p], src[o[s] + j]) << "slice " << s;
    }
    ASSERT_EQ(p, total);

    Floats dst(length, -1.0f);
    impl().scatter_slices(packed.data(), o.data(), c.data(), wanted_slices, dst.data());
    std::vector<bool> covered(length, false);
    for (std::size_t s = 0; s < wanted_slices; ++s) {
      for (std::uint64_t j = 0; j < c[s]; ++j) covered[o[s] + j] = true;
    }
    for (std::size_t i = 0; i < length; ++i) ASSERT_EQ(dst[i], covered[i] ? src[i] : -1.0f) << "i=" << i;

    Floats again(total, -7.0f);
    impl().gather_slices(dst.data(), o.data(), c.data(), wanted_slices, again.data());
    ASSERT_EQ(again, packed);
  }
}

// --- errors --------------------------------------------------------------------------

TEST(KernelsWithoutGpu, CudaEntryPointsThrowWithTheReason) {
  const GpuAvailability gpus = gpu_availability();
  if (gpus.count > 0) GTEST_SKIP() << "a GPU is available: the error paths are not reachable this way";
  EXPECT_FALSE(gpus.reason.empty());
  std::vector<float> host(16, 1.0f);
  std::uint64_t offset = 0, count = 4;
  auto expect_error = [](const char* function, auto&& call) {
    try {
      call();
      ADD_FAILURE() << function << " did not throw without a GPU";
    } catch (const std::runtime_error& error) {
      EXPECT_NE(std::string(error.what()).find(function), std::string::npos) << error.what();
      EXPECT_GT(std::string(error.what()).size(), std::string(function).size() + 4) << error.what();
    }
  };
  // Device pointers are irrelevant here: nothing can run without a device.
  expect_error("sum_into_cuda", [&] { sum_into_cuda(host.data(), host.data(), 16); });
  expect_error("divide_cuda", [&] { divide_cuda(host.data(), 16, 2.0f); });
  expect_error("onebit_encode_cuda", [&] { onebit_encode_cuda(host.data(), host.data(), 16, 4, nullptr); });
  expect_error("onebit_decode_cuda", [&] { onebit_decode_cuda(nullptr, 16, 4, host.data()); });
  expect_error("onebit_decode_add_cuda", [&] { onebit_decode_add_cuda(nullptr, 16, 4, host.data()); });
  expect_error("block_momentum_update_cuda",
               [&] { block_momentum_update_cuda(host.data(), host.data(), host.data(), 16, 0.75f, 1.0f, true); });
  expect_error("gather_slices_cuda", [&] { gather_slices_cuda(host.data(), &offset, &count, 1, host.data()); });
  expect_error("scatter_slices_cuda", [&] { scatter_slices_cuda(host.data(), &offset, &count, 1, host.data()); });
#if GRADSYNC_HAVE_CUDA
  // Empty work is not an error, device or not (builds without CUDA always throw).
  EXPECT_NO_THROW(sum_into_cuda(nullptr, nullptr, 0));
#endif
}

}  // namespace
