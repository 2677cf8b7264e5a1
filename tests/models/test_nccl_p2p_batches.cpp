// An alltoall's messages as NCCL's kernel runs them (point_to_point.cpp steps_us): in NCCL's
// order of rounds (round r to the host r / g hosts on, g ranks a host), in batches of 8 rounds
// (NCCL_MAX_DEV_WORK_P2P_PER_BATCH), one batch after another. A batch within a host takes its
// messages in turn, one step each over its slowest path; a batch that reaches other hosts overlaps
// them, one network step, and each message between hosts adds what NCCL's proxy spends on it
// (net_message_us). The figures are NCCL 2.23's latency table (ring, Simple): base 8.4 us, an
// NVLink step 3.4, a network step 14.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "models/executors/predict.h"
#include "support/nccl_planner.h"

using namespace gradsync::models;

namespace {

// The latency the plan states for an alltoall of 64 MiB on `nodes` HGX hosts, Simple forced.
double latency_us(int nodes, const std::vector<std::string>& more = {}) {
  const Topology t = test_nccl_planner::hgx(nodes);
  std::vector<std::string> params = {"collective=alltoall", "protocol=Simple", "gpudirect=on", "cpu=intel"};
  params.insert(params.end(), more.begin(), more.end());
  const ResultRecord r = predict(test_nccl_planner::nccl_request(t, 8 * nodes, 64.0 * 1048576, params));
  std::string notes;
  for (const auto& n : r.notes) notes += n + "\n";
  std::smatch m;
  if (!std::regex_search(notes, m, std::regex("copies only; latency ([0-9.]+) us"))) {
    ADD_FAILURE() << "no latency stated:\n" << notes;
    return -1;
  }
  return std::stod(m[1].str());
}

}  // namespace

TEST(NcclP2pBatches, AlltoallBatchesCrossingHostsTakeOneNetworkStepAndEachMessageItsPost) {
  // One host of 8: one batch within it, its 14 messages in turn: 8.4 + 13 x 3.4.
  EXPECT_NEAR(latency_us(1), 8.4 + 13 * 3.4, 0.05);
  // Two hosts: rounds 1-7 within the host (as above), rounds 8-15 to the other host at once: one
  // network step and 16 messages of 3 us.
  EXPECT_NEAR(latency_us(2), 8.4 + 13 * 3.4 + 14 + 16 * 3.0, 0.05);
  EXPECT_NEAR(latency_us(2, {"net_message_us=0"}), 8.4 + 13 * 3.4 + 14, 0.05);
  // Four hosts: three batches between hosts. Every message in turn would be 8.4 + 61 x 14 us.
  EXPECT_NEAR(latency_us(4), 8.4 + 13 * 3.4 + 3 * 14 + 48 * 3.0, 0.05);
}
