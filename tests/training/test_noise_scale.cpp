// The gradient noise scale's estimator (training/noise_scale.h) against a case whose truth is
// known by construction: a true gradient g of d values and per-example noise of variance s^2 in
// each, so tr(S) = d s^2 and B_simple = d s^2 / |g|^2; each rank's gradient over b rows is g
// plus noise of variance s^2 / b a value, the synchronised one their mean.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "training/noise_scale.h"

TEST(NoiseScale, RecoversTheTrueNormAndNoiseOfAKnownCase) {
  const int d = 50, ranks = 4, b = 8;
  const double s = 0.3;
  std::vector<double> g(d);
  for (int i = 0; i < d; ++i) g[static_cast<std::size_t>(i)] = 0.05 * (i % 7 - 3);
  double g_sq = 0;
  for (double v : g) g_sq += v * v;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, s / std::sqrt(static_cast<double>(b)));
  gradsync::training::NoiseScale n;
  for (int step = 0; step < 4000; ++step) {
    std::vector<double> mean(d, 0.0);
    double small_sq = 0;
    for (int r = 0; r < ranks; ++r) {
      for (int i = 0; i < d; ++i) {
        const double v = g[static_cast<std::size_t>(i)] + noise(rng);
        small_sq += v * v / ranks;
        mean[static_cast<std::size_t>(i)] += v / ranks;
      }
    }
    double big_sq = 0;
    for (double v : mean) big_sq += v * v;
    n.add(small_sq, big_sq, b, b * ranks);
  }
  EXPECT_EQ(n.steps(), 4000U);
  EXPECT_NEAR(n.gradient_norm_sq(), g_sq, 0.03 * g_sq);
  EXPECT_NEAR(n.trace(), d * s * s, 0.03 * d * s * s);
  EXPECT_NEAR(n.simple(), d * s * s / g_sq, 0.05 * d * s * s / g_sq);
}

TEST(NoiseScale, NothingBeforeAStepAndNoBatchesOutOfOrder) {
  gradsync::training::NoiseScale n;
  EXPECT_EQ(n.simple(), 0.0);
  EXPECT_THROW(n.add(1, 1, 8, 8), std::invalid_argument);
  EXPECT_THROW(n.add(1, 1, 0, 8), std::invalid_argument);
}
