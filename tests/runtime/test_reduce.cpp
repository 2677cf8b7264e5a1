// One reference for every reduction implementation: integer-valued floats sum exactly
// in any order, so results compare with ==.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "gradsync/config.h"
#include "runtime/kernels/reduce.h"

#if GRADSYNC_HAVE_CUDA
#include <cuda_runtime.h>
#endif

using namespace gradsync::runtime;

namespace {
std::vector<float> pattern(std::size_t n, int seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7 + seed * 13) % 1000) - 500.0f;
  return v;
}
}  // namespace

TEST(Reduce, CpuSumIsExact) {
  for (std::size_t n : {0u, 1u, 7u, 1000u, (1u << 20) + 3u}) {
    auto dst = pattern(n, 1);
    const auto src = pattern(n, 2);
    const auto expected_a = pattern(n, 1);
    sum_into_cpu(dst.data(), src.data(), n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(dst[i], expected_a[i] + src[i]) << "n=" << n << " i=" << i;
  }
}

TEST(Reduce, CudaSumMatchesCpu) {
  const auto gpus = gpu_availability();
  if (gpus.count == 0) GTEST_SKIP() << "no GPU: " << gpus.reason;
#if GRADSYNC_HAVE_CUDA
  const std::size_t n = (1u << 20) + 3u;
  auto a = pattern(n, 3);
  const auto b = pattern(n, 4);
  float *da = nullptr, *db = nullptr;
  ASSERT_EQ(cudaMalloc(&da, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&db, n * sizeof(float)), cudaSuccess);
  cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  sum_into_cuda(da, db, n);
  std::vector<float> out(n);
  cudaMemcpy(out.data(), da, n * sizeof(float), cudaMemcpyDeviceToHost);
  sum_into_cpu(a.data(), b.data(), n);
  EXPECT_EQ(out, a);
  cudaFree(da);
  cudaFree(db);
#endif
}
