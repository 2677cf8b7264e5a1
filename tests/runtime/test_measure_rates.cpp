// What gradsync-run measure makes of a probe's time: the bandwidth term without the latency
// the probe also paid (the models add the latency back once per transfer).
#include <gtest/gtest.h>

#include "runtime/measure.h"

using gradsync::runtime::rate_without_latency;

TEST(MeasureRates, APairProbeLeavesItsLatencyOut) {
  // 4 MiB in 800 us, 75 us of it latency: 4 MiB / 725 us.
  const double bytes = 4 << 20;
  EXPECT_DOUBLE_EQ(rate_without_latency(bytes, bytes / 800e-6, 75e-6), bytes / 725e-6);
  // Both directions at once: twice the bytes, one latency.
  EXPECT_DOUBLE_EQ(rate_without_latency(2 * bytes, 2 * bytes / 800e-6, 75e-6), 2 * bytes / 725e-6);
  // Latency + bytes / the result gives the probe's time back.
  const double rate = rate_without_latency(bytes, bytes / 170e-3, 15e-6);
  EXPECT_NEAR(15e-6 + bytes / rate, 170e-3, 1e-12);
  // No latency measured, or a probe no longer than it: the rate as it was.
  EXPECT_DOUBLE_EQ(rate_without_latency(bytes, 5e9, 0), 5e9);
  EXPECT_DOUBLE_EQ(rate_without_latency(8, 8 / 10e-6, 20e-6), 8 / 10e-6);
}
