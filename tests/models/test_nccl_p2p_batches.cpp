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
#include "models/support/json_input.h"
#include "models/topology/topology_io.h"
#include "support/nccl_planner.h"

using namespace gradsync::models;

namespace {

// The latency the plan of `collective` states on every GPU of `t`, 64 MiB, Simple forced.
double latency_us(const Topology& t, int gpus, const std::string& collective, const std::vector<std::string>& more) {
  std::vector<std::string> params = {"collective=" + collective, "protocol=Simple", "gpudirect=on", "cpu=intel"};
  params.insert(params.end(), more.begin(), more.end());
  const ResultRecord r = predict(test_nccl_planner::nccl_request(t, gpus, 64.0 * 1048576, params));
  std::string notes;
  for (const auto& n : r.notes) notes += n + "\n";
  std::smatch m;
  if (!std::regex_search(notes, m, std::regex("copies only; latency ([0-9.]+) us"))) {
    ADD_FAILURE() << "no latency stated:\n" << notes;
    return -1;
  }
  return std::stod(m[1].str());
}

// The latency the plan states for an alltoall of 64 MiB on `nodes` HGX hosts, Simple forced.
double latency_us(int nodes, const std::vector<std::string>& more = {}) {
  return latency_us(test_nccl_planner::hgx(nodes), 8 * nodes, "alltoall", more);
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

TEST(NcclP2pBatches, AStepWithinAHostIsOverTheSlowestPathTheMessagesTake) {
  // Six GPUs in a ring of NVLinks, every GPU also on one PCIe switch: neighbours are one NVLink
  // apart, GPUs three apart only meet through the switch (NVLink through one GPU reaches two apart).
  std::string links;
  std::string nodes = R"({"id": "sw", "kind": "pcie_switch"})";
  for (int g = 0; g < 6; ++g) {
    const std::string id = "\"gpu" + std::to_string(g) + "\"";
    nodes += R"(, {"id": )" + id + R"(, "kind": "gpu"})";
    links += (g ? ", " : "") + std::string(R"({"a": )") + id + R"(, "b": "gpu)" + std::to_string((g + 1) % 6) +
             R"(", "bandwidth_GBps": 25, "latency_us": 1}, {"a": )" + id + R"(, "b": "sw", "bandwidth_GBps": 12, "latency_us": 1})";
  }
  const Topology t =
      load_topology(JsonView::parse(R"({"name": "nvlink-ring", "nodes": [)" + nodes + R"(], "links": [)" + links + "]}", "ring.json")).topology;
  // A sendrecv's messages go between ring neighbours only: one NVLink step (8.4 + 3.4 us with
  // Simple), not the PCIe step (5.7 us) of the pairs an alltoall also reaches.
  EXPECT_NEAR(latency_us(t, 6, "sendrecv", {}), 8.4 + 3.4, 0.05);
  // An alltoall's 10 messages in turn over the slowest path any pair takes (PCIe).
  EXPECT_NEAR(latency_us(t, 6, "alltoall", {}), 8.4 + 9 * 5.7, 0.05);
}
