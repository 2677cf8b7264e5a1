// A network connection's steps in flight bound a stream (transports.h net_channel_cap): a channel
// that keeps NCCL's 8 steps of Simple's 4 MiB buffer in flight moves 8 x 512 KiB / window of its
// NIC. A channel whose bytes across a hop all fit in those steps never waits for one to come back,
// so the window does not bound it: NCCL's step latencies price it (planned.cpp capped_GBps,
// point_to_point.cpp cap_by_channels).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/executors/predict.h"
#include "support/nccl_planner.h"

using namespace gradsync::models;

namespace {

struct RingRun {
  double busbw = 0;
  std::string notes;
};

// Two HGX H100 nodes, the ring forced with Simple, a NIC filled only by 32 MiB in flight: a
// channel moves 4 MiB / 32 MiB of its NIC's 50 GB/s, 6.25 GB/s; the ring's 16 channels at most
// 16 x 6.25 = 100 GB/s of bus bandwidth (each hop carries 2 (N - 1) / N of a channel's part).
RingRun ring(double bytes) {
  static const Topology t = test_nccl_planner::hgx(2);
  const ResultRecord r = predict(test_nccl_planner::nccl_request(
      t, 16, bytes, {"algorithm=Ring", "protocol=Simple", "gpudirect=on", "cpu=intel", "net_window_MiB=32"}));
  RingRun out{r.busbw_GBps().value_or(0), ""};
  for (const auto& n : r.notes) out.notes += n + "\n";
  return out;
}

}  // namespace

TEST(NcclWindow, TheStepsInFlightBoundAStreamNotWhatFitsInThem) {
  const double limit = 16 * 50 * 4.0 / 32;
  // 64 MiB: 64 / 16 x 30 / 16 = 7.5 MiB a channel across a hop, more than its 4 MiB in flight.
  const RingRun big = ring(64.0 * 1048576);
  EXPECT_LE(big.busbw, limit * 1.001) << big.notes;
  EXPECT_NE(big.notes.find("8 steps of 524.3 kB in flight"), std::string::npos) << big.notes;
  // 16 MiB: 1.875 MiB a channel, all in flight at once: not held to the window.
  const RingRun small = ring(16.0 * 1048576);
  EXPECT_GT(small.busbw, limit * 1.05) << small.notes;
  EXPECT_EQ(small.notes.find("in flight of the"), std::string::npos) << small.notes;
}
