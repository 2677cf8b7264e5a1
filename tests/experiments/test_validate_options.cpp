// validate's choices that need no testbed: the probe size it measures with by default.
#include <gtest/gtest.h>

#include "experiments/validate.h"

using gradsync::experiments::default_measure_size;

constexpr double kMiB = 1 << 20;

TEST(ValidateOptions, ProbesAtTheRunsTypicalMessage) {
  // The busy-machine check's points: ring steps of 256 KiB, 512 KiB, 1 MiB and 2 MiB; the
  // upper median is 1 MiB.
  EXPECT_EQ(default_measure_size({1 * kMiB, 4 * kMiB}, {2, 4}), 1u << 20);
  // validate's defaults (1 and 4 MiB on 2, 4 and 8 GPUs): 128 KiB ... 2 MiB, upper median 512 KiB.
  EXPECT_EQ(default_measure_size({1 * kMiB, 4 * kMiB}, {2, 4, 8}), 512u << 10);
  // One point: its step; sizes that do not split into whole bytes round to the nearest.
  EXPECT_EQ(default_measure_size({16 * kMiB}, {4}), 4u << 20);
  EXPECT_EQ(default_measure_size({1000000}, {3}), 333333u);
  // Never below 64 KiB: smaller probes would time the latency, not the links.
  EXPECT_EQ(default_measure_size({64 * 1024}, {8}), 64u << 10);
  EXPECT_EQ(default_measure_size({}, {}), 64u << 10);
}
