// validate's choices that need no testbed: the probe size it measures with by default, and the
// emulated cluster's frames as it plans them.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "experiments/validate.h"
#include "models/topology/topology_io.h"
#include "runtime/testbed/testbed.h"

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

// The emulated cluster's frames last 0.35 ms at its slowest link (1500-9000 bytes): what a full
// token bucket lets through at once after a pause. Every data link and bridge takes that MTU,
// and every token bucket holds at least two frames with a peak bucket of one (plus its header).
TEST(ValidateOptions, TheEmulatedClustersFramesAreSizedToItsSlowestLink) {
  const auto frames = [](const std::string& topology, double scale) {
    const auto plan = gradsync::testbed::plan_testbed(
        gradsync::models::load_topology_file(gradsync::models::resolve_topology_path(topology)).topology, scale);
    std::set<std::string> mtus;
    for (const auto& c : plan.up) {
      const auto at = std::find(c.begin(), c.end(), std::string("mtu"));
      if (at == c.end() || at + 1 == c.end()) continue;
      const bool tbf = std::find(c.begin(), c.end(), std::string("tbf")) != c.end();
      if (!tbf) {
        mtus.insert(*(at + 1));
        continue;
      }
      const auto burst = std::find(c.begin(), c.end(), std::string("burst"));
      EXPECT_NE(burst, c.end());
      mtus.insert(std::to_string(std::stoll(*(at + 1)) - 100));  // the peak bucket: one frame and its header
      if (burst != c.end()) {
        EXPECT_GE(std::stoll(*(burst + 1)) + 1, 2 * (std::stoll(*(at + 1)) - 100));
      }
    }
    return mtus;
  };
  // Source A's box: 4.46 GB/s across its switches; at 1/500, 8.92 MB/s x 0.35 ms = 3122 bytes.
  EXPECT_EQ(frames("source-a-titanx-4gpu", 0.002), std::set<std::string>{"3122"});
  EXPECT_EQ(frames("source-a-titanx-4gpu", 0.01), std::set<std::string>{"9000"});   // 44.6 MB/s: the largest
  EXPECT_EQ(frames("cluster-2x4gpu-eth-1GBps", 0.002), std::set<std::string>{"1500"});  // 2 MB/s: the smallest
  // The plan says so, from the same constants.
  const auto plan = gradsync::testbed::plan_testbed(
      gradsync::models::load_topology_file(gradsync::models::resolve_topology_path("source-a-titanx-4gpu")).topology, 0.002);
  EXPECT_NE(std::find(plan.notes.begin(), plan.notes.end(), "frames of 3122 bytes (0.35 ms at the slowest link, 1500-9000)"),
            plan.notes.end());
}
