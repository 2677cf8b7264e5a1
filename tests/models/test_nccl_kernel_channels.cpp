// The channels NCCL's kernels run a small collective on (tuning.h kernel_channels): enqueue.cc
// topoGetAlgoInfo drops channels while a channel's threads would each get less than their
// threshold of the buffer (comm.h: 64 B with Simple, 8 with LL and LL128, a ring's LL threshold
// times the ranks; tuning.cc: 512 threads, 640 with LL128, a ring's Simple 256 where its channels
// carry no more than PCI_BW, 24 GB/s). The expected counts are that loop worked by hand.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "models/executors/predict.h"
#include "models/strategies/nccl/tuning.h"
#include "support/nccl_planner.h"

using namespace gradsync::models;
using namespace gradsync::models::nccl;

namespace {

Comm nvlink_comm(int ranks, int channels) {
  Comm c;
  c.ranks = ranks;
  c.channels = channels;
  c.ring.n_channels = channels / 2;
  c.ring.bw_intra = 20;  // 12 x 20 GB/s > PCI_BW: 512 Simple threads
  return c;
}

// The bus bandwidth the plan's note gives NCCL's model and the schedule, and the note itself.
struct Noted {
  double model_GBps = 0, run_GBps = 0;
  std::string note;
};
Noted noted(const ResultRecord& r) {
  Noted out;
  for (const std::string& n : r.notes) {
    const auto at = n.find("NCCL's model: ");
    if (at == std::string::npos) continue;
    out.note = n;
    double latency_us = 0;
    std::sscanf(n.c_str() + at, "NCCL's model: %lf us + bytes at %lf GB/s", &latency_us, &out.model_GBps);
    const auto most = n.find(", at most ");
    out.run_GBps = out.model_GBps;
    if (most != std::string::npos) std::sscanf(n.c_str() + most, ", at most %lf GB/s", &out.run_GBps);
  }
  return out;
}

}  // namespace

TEST(NcclKernelChannels, SmallBuffersRunOnFewerChannelsByNcclsThreadThresholds) {
  const Comm c = nvlink_comm(8, 24);
  // Ring LL on 8 ranks: 8 x 8 = 64 B a thread, 512 threads: 32 KiB a channel.
  EXPECT_EQ(kernel_channels(c, kRing, kLL, 1 << 20), 24);   // 32 channels' worth, all 24
  EXPECT_EQ(kernel_channels(c, kRing, kLL, 262144), 8);     // exactly 8 x 32 KiB
  EXPECT_EQ(kernel_channels(c, kRing, kLL, 100000), 3);
  EXPECT_EQ(kernel_channels(c, kRing, kLL, 96), 1);
  // Ring Simple: 64 B x 512 threads.
  EXPECT_EQ(kernel_channels(c, kRing, kSimple, 262144), 8);
  // Tree LL128: 8 B x 640 threads = 5120 B a channel: 65536 / 5120 = 12.8.
  EXPECT_EQ(kernel_channels(c, kTree, kLL128, 65536), 12);
  // Tree LL: the ring's LL threshold alone grows with the ranks.
  EXPECT_EQ(kernel_channels(c, kTree, kLL, 65536), 16);
  // NVLS and CollNet direct keep their channels.
  EXPECT_EQ(kernel_channels(c, kNvls, kSimple, 96), 24);
  EXPECT_EQ(kernel_channels(c, kCollnetDirect, kSimple, 96), 24);
  // CollNet chain Simple: 512 B x 640 threads.
  EXPECT_EQ(kernel_channels(c, kCollnetChain, kSimple, 1 << 20), 3);
  // A ring whose channels carry no more than PCIe runs Simple on 256 threads: 16 KiB a channel.
  Comm pcie = c;
  pcie.ring.n_channels = 2;
  pcie.ring.bw_intra = 12;
  EXPECT_EQ(kernel_channels(pcie, kRing, kSimple, 65536), 4);
  EXPECT_EQ(kernel_channels(pcie, kRing, kSimple, 1 << 30), 24);
}

// On one HGX H100 host the ring's Simple kernel at 256 KiB runs on 8 of its channels (64 B x 512
// threads each): each at NCCL's per-channel rate, so the schedule runs at 8 / C of NCCL's
// bandwidth and says so; at 64 MiB every channel runs.
TEST(NcclKernelChannels, AFewChannelsCarryAFewChannelsBandwidth) {
  const Topology t = test_nccl_planner::hgx(1);
  const Noted small = noted(predict(test_nccl_planner::nccl_request(t, 8, 262144, {"algorithm=Ring", "protocol=Simple"})));
  ASSERT_GT(small.model_GBps, 0) << small.note;
  int runs = 0, of = 0;
  const auto at = small.note.find("NCCL runs ");
  ASSERT_NE(at, std::string::npos) << small.note;
  ASSERT_EQ(std::sscanf(small.note.c_str() + at, "NCCL runs %d of its %d channels", &runs, &of), 2) << small.note;
  EXPECT_EQ(runs, 8);
  EXPECT_GT(of, runs);
  EXPECT_NEAR(small.run_GBps, small.model_GBps * runs / of, 0.01 * small.model_GBps) << small.note;
  const Noted big = noted(predict(test_nccl_planner::nccl_request(t, 8, 64 << 20, {"algorithm=Ring", "protocol=Simple"})));
  EXPECT_EQ(big.note.find("NCCL runs "), std::string::npos) << big.note;
}

// LL on NVLink: a channel's threads move what LL's flags allow (ll_channel_GBps on the wire), more
// than NCCL's per-channel share of its model where few channels run: 2 channels of 8 ranks at
// 64 KiB carry 2 x 7 / (2 x 7 / 8) = 8 GB/s of algorithm bandwidth, not 2 / C of NCCL's.
TEST(NcclKernelChannels, AFewLlChannelsRunAtLlsOwnRate) {
  const Topology t = test_nccl_planner::hgx(1);
  const Noted r = noted(predict(test_nccl_planner::nccl_request(t, 8, 65536, {"algorithm=Ring", "protocol=LL", "ll_channel_GBps=7"})));
  ASSERT_NE(r.note.find("NCCL runs 2 of its "), std::string::npos) << r.note;
  EXPECT_NEAR(r.run_GBps, 8.0, 0.05) << r.note;
}
