// NCCL's planning as gradsync reproduces it (models/strategies/nccl/): the channel graphs its
// search finds and the bandwidths its cost model gives, on machines where NCCL's own rules
// (src/graph/search.cc, tuning.cc of 2.30.7) can be followed by hand. Each expected figure is
// derived in the comment above it from those rules and NCCL's nominal rates, not from this code.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "models/executors/executor.h"
#include "models/executors/predict.h"
#include "models/schedule/symbolic.h"
#include "models/support/error.h"
#include "models/strategies/nccl/plan.h"
#include "models/strategies/nccl/search.h"
#include "models/strategies/nccl/system.h"
#include "models/strategies/nccl/tuning.h"
#include "models/topology/cluster_generator.h"
#include "models/topology/topology.h"
#include "support/nccl_planner.h"

using namespace gradsync::models;
using namespace gradsync::models::nccl;
using namespace test_nccl_planner;

namespace {

SystemOptions h100() {
  SystemOptions o;
  o.cc = 90;
  o.pcie_GBps = 48;  // Gen5 x16: 16 x 240 / 80
  return o;
}

}  // namespace

// One HGX H100 node: every GPU has 18 NVLinks to the NVSwitch, NCCL's 18 x 20.6 = 370.8 GB/s.
TEST(NcclPlanner, OneHgxH100Node) {
  const Topology t = hgx(1);
  System sys(t, host_gpus(t, 0), h100());
  ASSERT_EQ(sys.gpu_count(), 8);
  EXPECT_TRUE(sys.has_nvswitch());
  EXPECT_DOUBLE_EQ(sys.total_bw(), 18 * 20.6);
  EXPECT_EQ(sys.path(sys.gpu(0), sys.gpu(5)).type, kPathNvl);
  // Ring: at 60 GB/s (the first of the SM90 intra speeds) a channel takes 60 from each GPU's
  // link in each direction: 6 channels fit (360 <= 370.8). Lower speeds give no more than 360;
  // the 6 channels are doubled at 30 GB/s each (ncclTopoDupChannels: 60 >= 25 and not < 50).
  const Graph ring = compute_graph(sys, Pattern::ring, 1, 32, false);
  EXPECT_EQ(ring.n_channels, 12);
  EXPECT_DOUBLE_EQ(ring.bw_intra, 30);
  EXPECT_EQ(ring.type_intra, kPathNvl);
  // NVLS: 8 channels (a head per GPU) needed; the head's link carries twice: (7 + 2) x bw <= 370.8
  // first holds at 40; then the search raises bwInter, which nothing on one node uses, to 60.
  System sys2(t, host_gpus(t, 0), h100());
  const Graph nvls = compute_graph(sys2, Pattern::nvls, 1, 64, false);
  EXPECT_EQ(nvls.n_channels, 8);
  EXPECT_DOUBLE_EQ(nvls.bw_intra, 40);
  EXPECT_DOUBLE_EQ(nvls.bw_inter, 60);
  // The cost model: NVLS bus bandwidth 8 x min(40 x 0.85 x 7/8 x 2, 60) = 476 GB/s; the ring's
  // 12 x 30 = 360.
  Comm comm;
  comm.ranks = 8;
  comm.nodes = 1;
  comm.cc_min = comm.cc_max = 90;
  comm.nvls_support = comm.nvswitch = true;
  comm.ring = ring;
  comm.tree = ring;
  comm.tree.pattern = Pattern::balanced_tree;
  comm.nvls = nvls;
  const Costs c = tune(comm, Collective::all_reduce);
  const double to_bus = 14.0 / 8;  // algorithm -> bus bandwidth for 8 ranks
  EXPECT_NEAR(c.bw[kNvls][kSimple] * to_bus, 476, 1e-9);
  EXPECT_NEAR(c.bw[kRing][kSimple] * to_bus, 360, 1e-9);
  EXPECT_EQ(c.bw[kNvlsTree][kSimple], 0);  // not on one node
  EXPECT_EQ(choose(comm, c, Collective::all_reduce, 1 << 30).algorithm, kNvls);
}

// Two HGX H100 nodes, eight 400 Gb/s NICs each (50 GB/s), one per GPU on its PCIe Gen5 switch (48).
TEST(NcclPlanner, TwoHgxH100NodesEightNics) {
  const Topology t = hgx(2);
  System sys(t, host_gpus(t, 0), h100());
  ASSERT_EQ(sys.net_count(), 8);
  // GPU 0 reaches NIC 0 on its own switch (PIX, 48); NIC 3 through GPU 3 over NVLink (PXN).
  EXPECT_EQ(sys.path(sys.gpu(0), sys.net(0)).type, kPathPix);
  EXPECT_EQ(sys.path(sys.gpu(0), sys.net(3)).type, kPathPxn);
  EXPECT_DOUBLE_EQ(sys.path(sys.gpu(0), sys.net(3)).bw, 48);
  EXPECT_EQ(sys.local_net(5, 0), 5);
  // Ring: 48 GB/s per channel (the first SM90 inter speed <= 48), one channel per NIC (50 >= 48,
  // not 2 x 48). Leaving through the entry NIC (PXN: back over NVLink to the NIC's GPU) costs each
  // channel one more NVLink hop, and 8 x 48 = 384 > 370.8 then fits only 7; leaving through the
  // last GPU's own NIC (cross NIC, the next channel entering there) keeps every path PIX and fits
  // 8 channels: 384 >= 370.8 ends the search; not doubled (48 < 50 with 8 > 4 channels on SM90).
  const Graph ring = compute_graph(sys, Pattern::ring, 1, 32, true);
  EXPECT_EQ(ring.n_channels, 8);
  EXPECT_DOUBLE_EQ(ring.bw_inter, 48);
  EXPECT_DOUBLE_EQ(ring.bw_intra, 48);
  EXPECT_EQ(ring.type_inter, kPathPix);
  EXPECT_EQ(ring.cross_nic, 2);
  ASSERT_EQ(ring.inter.size(), 8u);
  for (int c = 0; c < 8; c += 2) {  // pairs: one channel leaves where the next one enters
    EXPECT_EQ(ring.inter[static_cast<std::size_t>(c)][1], ring.inter[static_cast<std::size_t>(c + 1)][0]);
    EXPECT_EQ(ring.inter[static_cast<std::size_t>(c)][0], ring.inter[static_cast<std::size_t>(c + 1)][1]);
  }
  // NVLS: 8 heads at 40 GB/s intra (as on one node), bwInter raised to 48 (a NIC's 50 allows no more).
  System sys2(t, host_gpus(t, 0), h100());
  const Graph nvls = compute_graph(sys2, Pattern::nvls, 1, 64, true);
  EXPECT_EQ(nvls.n_channels, 8);
  EXPECT_DOUBLE_EQ(nvls.bw_intra, 40);
  EXPECT_DOUBLE_EQ(nvls.bw_inter, 48);
  // NVLS tree: 8 x min(59.5, 2 x 48, 57.7 per channel on two Hopper nodes) = 461.6 GB/s bus
  // bandwidth; the ring 8 x 48 = 384.
  Comm comm;
  comm.ranks = 16;
  comm.nodes = 2;
  comm.cc_min = comm.cc_max = 90;
  comm.nvls_support = comm.nvswitch = true;
  comm.ring = ring;
  comm.tree = ring;
  comm.nvls = nvls;
  comm.channels = 16;
  const Costs c = tune(comm, Collective::all_reduce);
  const double to_bus = 30.0 / 16;
  EXPECT_NEAR(c.bw[kNvlsTree][kSimple] * to_bus, 461.6, 1e-9);
  EXPECT_NEAR(c.bw[kRing][kSimple] * to_bus, 384, 1e-9);
  EXPECT_EQ(c.bw[kNvls][kSimple], 0);  // across nodes only with CollNet
  EXPECT_EQ(choose(comm, c, Collective::all_reduce, 1 << 30).algorithm, kNvlsTree);
}

namespace {

Topology cluster(int nodes, int gpus, IntraFabric intra, int nics) {
  ClusterSpec s;
  s.nodes = nodes;
  s.gpus_per_node = gpus;
  s.intra = intra;
  s.nics_per_node = nics;
  s.network = ClusterNetwork::single;
  return generate_cluster(s);
}

// One rank on each of the first `per_node` GPUs of every node.
Placement spread(const Topology& t, int nodes, int per_node) {
  Placement p;
  for (int n = 0; n < nodes; ++n) {
    for (int g = 0; g < per_node; ++g) p.ranks.push_back(t.require("n" + std::to_string(n) + "-gpu" + std::to_string(g), "test"));
  }
  return p;
}

}  // namespace

// Every algorithm NCCL's planner can pick, on clusters of 2 and 3 hosts (odd: the double
// binary tree's shifted second tree), NVSwitch and PCIe inside, whole and partial hosts, odd
// sizes: each schedule proved to leave every rank with every contribution exactly once.
TEST(NcclPlanner, EveryPlannedScheduleIsAnAllReduce) {
  struct Case {
    int nodes, gpus, per_node;
    IntraFabric intra;
    std::vector<std::string> algorithms;
  };
  const std::vector<Case> cases = {
      {2, 8, 8, IntraFabric::nvswitch, {"auto", "Ring", "Tree", "NVLSTree"}},
      {3, 4, 4, IntraFabric::nvswitch, {"auto", "Ring", "Tree", "NVLSTree"}},
      {3, 4, 3, IntraFabric::nvswitch, {"Ring", "Tree", "NVLSTree"}},
      {1, 8, 8, IntraFabric::nvswitch, {"auto", "NVLS", "Ring", "Tree"}},
      {3, 2, 2, IntraFabric::pcie, {"auto", "Ring", "Tree"}},
      {5, 2, 1, IntraFabric::pcie, {"Ring", "Tree"}},
  };
  int checked = 0;
  for (const Case& c : cases) {
    const Topology t = cluster(c.nodes, c.gpus, c.intra, c.gpus);
    const Placement placement = spread(t, c.nodes, c.per_node);
    const int n = placement.size();
    for (const std::string& algorithm : c.algorithms) {
      for (const char* protocol : {"auto", "LL", "LL128", "Simple"}) {
        if ((algorithm == "NVLS" || algorithm == "NVLSTree") && std::string(protocol) != "Simple" && std::string(protocol) != "auto") continue;
        for (std::uint64_t elements : {std::uint64_t{1}, std::uint64_t{7}, static_cast<std::uint64_t>(n + 1), std::uint64_t{1024 * 1024 + 3}}) {
          PredictRequest q;
          q.topology = &t;
          q.strategy = &find_strategy("nccl");
          q.placement = placement;
          q.bytes = 4.0 * static_cast<double>(elements);
          q.params = SyncParams::parse({"algorithm=" + algorithm, std::string("protocol=") + protocol});
          const BuiltSchedule b = build_schedule(q);
          if (algorithm != "auto") {
            EXPECT_EQ(b.resolved.at("algorithm"), algorithm);
          }
          const SymbolicResult r = check_schedule(b.schedule);
          ASSERT_TRUE(r.ok) << c.nodes << " nodes x " << c.per_node << " " << algorithm << "/" << protocol << " elements=" << elements
                            << ": " << r.message;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 150);
}

namespace {

// Clusters the collectives other than all-reduce are planned on: two and three hosts of
// NVSwitch (whole and partial), one NVSwitch host, three of PCIe.
struct PlannedCase {
  int nodes, gpus, per_node;
  IntraFabric intra;
};

const std::vector<PlannedCase>& planned_cases() {
  static const std::vector<PlannedCase> all = {{2, 8, 8, IntraFabric::nvswitch}, {3, 4, 3, IntraFabric::nvswitch},
                                              {1, 8, 8, IntraFabric::nvswitch}, {3, 2, 2, IntraFabric::pcie}};
  return all;
}

// The nccl strategy's request for one collective of `elements` floats on a placement.
PredictRequest planned_collective(const Topology& t, const Placement& placement, const std::string& collective, const std::string& protocol,
                                  std::uint64_t elements) {
  PredictRequest q;
  q.topology = &t;
  q.strategy = &find_strategy("nccl");
  q.placement = placement;
  q.bytes = 4.0 * static_cast<double>(elements);
  q.params = SyncParams::parse({"collective=" + collective, "protocol=" + protocol});
  return q;
}

// Its schedule, on NCCL's ring, proved by the symbolic checker (`what` names the case).
BuiltSchedule proved_on_ring(const PredictRequest& q, const std::string& what) {
  BuiltSchedule b = build_schedule(q);
  EXPECT_EQ(b.resolved.at("algorithm"), "Ring") << what;
  const SymbolicResult r = check_schedule(b.schedule);
  EXPECT_TRUE(r.ok) << what << ": " << r.message;
  return b;
}

// The schedule walked takes what the plan's closed form gives, within 2 %.
void expect_walked_as_closed(const PredictRequest& q, const ResultRecord& walked, const std::string& what) {
  const ResultRecord closed = find_executor("formula").evaluate(q, ExecutorSettings{});
  EXPECT_NEAR(walked.time_per_sync_s, closed.time_per_sync_s, 0.02 * closed.time_per_sync_s) << what;
}

}  // namespace

// All-gather and reduce-scatter across hosts and on NVSwitch hosts: half of NCCL's channel rings,
// each rank's result as the collective's kind says (proved), timed as NCCL's cost model times
// that collective (the schedule walked = the plan's closed form), the bus factor (N-1)/N.
TEST(NcclPlanner, AllGatherAndReduceScatterAreHalfOfItsRings) {
  int checked = 0;
  for (const PlannedCase& c : planned_cases()) {
    const Topology t = cluster(c.nodes, c.gpus, c.intra, c.gpus);
    const Placement placement = spread(t, c.nodes, c.per_node);
    const int n = placement.size();
    for (const char* collective : {"all_gather", "reduce_scatter"}) {
      for (const char* protocol : {"auto", "LL", "Simple"}) {
        for (std::uint64_t elements : {std::uint64_t{7}, static_cast<std::uint64_t>(n + 1), std::uint64_t{1024 * 1024 + 3}}) {
          const std::string what = std::to_string(c.nodes) + " nodes x " + std::to_string(c.per_node) + " " + collective + "/" + protocol +
                                   " elements=" + std::to_string(elements);
          const PredictRequest q = planned_collective(t, placement, collective, protocol, elements);
          const BuiltSchedule b = proved_on_ring(q, what);
          ASSERT_FALSE(b.schedule.expected.empty());
          for (const ExpectedRegion& e : b.schedule.expected) {
            EXPECT_EQ(e.holders.size() + e.contributors.size(), 1u) << collective;  // one owner per block
          }
          const ResultRecord walked = predict(q);
          EXPECT_NEAR(walked.busbw_factor, (n - 1.0) / n, 1e-12);
          // Below a block per channel and rank the remainder ring carries no step latencies.
          if (elements > 1024) expect_walked_as_closed(q, walked, what);
          ++checked;
        }
      }
    }
    // One half moves half an all-reduce's ring bytes: at 64 MiB, where bandwidth rules, it takes
    // about half the ring all-reduce's time.
    PredictRequest q;
    q.topology = &t;
    q.strategy = &find_strategy("nccl");
    q.placement = placement;
    q.bytes = 64.0 * 1024 * 1024;
    q.params = SyncParams::parse({"collective=all_gather", "protocol=Simple"});
    const double gather = predict(q).time_per_sync_s;
    q.params = SyncParams::parse({"algorithm=Ring", "protocol=Simple"});
    const double ring = predict(q).time_per_sync_s;
    EXPECT_GT(gather, 0.4 * ring) << c.nodes << " x " << c.per_node;
    EXPECT_LT(gather, 0.6 * ring) << c.nodes << " x " << c.per_node;
  }
  EXPECT_GE(checked, 70);
  // Only NCCL's ring is built for them.
  const Topology t = cluster(2, 8, IntraFabric::nvswitch, 8);
  PredictRequest q;
  q.topology = &t;
  q.strategy = &find_strategy("nccl");
  q.placement = spread(t, 2, 8);
  q.bytes = 1e6;
  q.params = SyncParams::parse({"collective=all_gather", "algorithm=NVLSTree"});
  EXPECT_THROW(build_schedule(q), gradsync::models::InputError);
  q.params = SyncParams::parse({"collective=broadcast", "algorithm=Tree"});
  EXPECT_THROW(build_schedule(q), gradsync::models::InputError);
}

// Out of place (nccl-tests' first columns), an all-gather on rings and an alltoall also copy each
// rank's own block within its GPU: S/N bytes at half the memory's bandwidth (a copy reads and
// writes each byte), after the transfers. The generated cluster's GPUs are H100 SXM, whose
// memory moves 3,350 GB/s (NVIDIA's H100 datasheet); in place there is no such copy, and an
// all-reduce, a reduce-scatter and a broadcast copy nothing of their own either way.
TEST(NcclPlanner, OutOfPlaceAllGatherAndAlltoallCopyTheOwnBlock) {
  const Topology t = cluster(1, 8, IntraFabric::nvswitch, 8);
  const double bytes = 1024.0 * 1024 * 1024;
  for (int n : {2, 8}) {
    const double own_s = bytes / n / (3350e9 / 2);
    for (const char* collective : {"all_gather", "alltoall", "all_reduce", "reduce_scatter", "broadcast"}) {
      const std::string c = collective;
      const bool copies = c == "all_gather" || c == "alltoall";
      std::vector<std::string> params{"collective=" + c};
      if (c != "alltoall") params.push_back("algorithm=Ring");
      PredictRequest q = nccl_request(t, n, bytes, params);
      for (const char* executor : {"analytic", "formula"}) {
        const Executor& e = find_executor(executor);
        q.params.set("in_place", "off");
        const ResultRecord out_of_place = e.evaluate(q, {});
        q.params.set("in_place", "on");
        const ResultRecord in_place = e.evaluate(q, {});
        EXPECT_NEAR(out_of_place.time_per_sync_s - in_place.time_per_sync_s, copies ? own_s : 0.0, own_s * 1e-3)
            << collective << " on " << n << " GPUs, " << executor;
        if (!copies || std::string(executor) != "analytic") continue;  // the walked schedule names its phases
        double phase_s = 0;
        for (const auto& ph : out_of_place.phases) phase_s += ph.name == "own block copy" ? ph.seconds : 0.0;
        EXPECT_NEAR(phase_s, own_s, own_s * 1e-3) << collective << ", " << executor;
      }
    }
  }
}

// A ring's all-reduce, reduce-scatter or all-gather on one host over P2P: each loop of each channel
// spends one of its operations copying its block within the GPU while the links wait
// (all_reduce.h, reduce_scatter.h, all_gather.h), S/N bytes in all at half the memory's bandwidth
// (H100 SXM: 3,350 GB/s), in place or not. Not on a tree, not for a broadcast (a chain, whose
// root's copy overlaps the next rank's transfer), not across hosts.
TEST(NcclPlanner, ARingsReductionOnOneHostCopiesABlockWithinTheGpuEachLoop) {
  const Topology host = cluster(1, 8, IntraFabric::nvswitch, 8);
  const Topology two = cluster(2, 8, IntraFabric::nvswitch, 8);
  const double bytes = 1024.0 * 1024 * 1024;
  const auto copy_phase = [](const ResultRecord& r) {
    double s = 0;
    for (const auto& ph : r.phases) s += ph.name == "copy within the GPU" ? ph.seconds : 0.0;
    return s;
  };
  for (int n : {2, 8}) {
    const double copy_s = bytes / n / (3350e9 / 2);
    for (const char* collective : {"all_reduce", "reduce_scatter", "all_gather", "broadcast"}) {
      const std::string c = collective;
      const bool copies = c != "broadcast";
      for (const char* in_place : {"in_place=on", "in_place=off"}) {
        const ResultRecord r = predict(nccl_request(host, n, bytes, {"collective=" + c, "algorithm=Ring", "protocol=Simple", in_place}));
        EXPECT_NEAR(copy_phase(r), copies ? copy_s : 0.0, copy_s * 1e-3) << c << " on " << n << " GPUs, " << in_place;
        const ResultRecord f = find_executor("formula").evaluate(
            nccl_request(host, n, bytes, {"collective=" + c, "algorithm=Ring", "protocol=Simple", in_place}), {});
        EXPECT_NEAR(r.time_per_sync_s, f.time_per_sync_s, 0.02 * f.time_per_sync_s) << c << " on " << n << ": the closed form adds it too";
      }
    }
  }
  // A tree reduces no block of its own that way; across hosts the network's proxy moves the data.
  EXPECT_EQ(copy_phase(predict(nccl_request(host, 8, bytes, {"algorithm=Tree", "protocol=Simple"}))), 0.0);
  EXPECT_EQ(copy_phase(predict(nccl_request(two, 16, bytes, {"algorithm=Ring", "protocol=Simple"}))), 0.0);
}

// An alltoall's block to each peer is S/N; NCCL copies point-to-point work as bytes, 16 at a time
// a thread only where every pointer is 16-byte aligned (common_kernel.h, reduceCopy), else one.
// 5 ranks of 2^24 and 2^25 floats each: blocks of 2^26 and 2^27 bytes, aligned; one float more a
// block (4 bytes off) and each further byte takes bytewise_slowdown times as long to move, the
// latency as before. The range goes from there to the instruction-bound 16 times.
TEST(NcclPlanner, AnAlltoallOfMisalignedBlocksCopiesAByteAtATime) {
  const Topology t = cluster(1, 8, IntraFabric::nvswitch, 8);
  auto bytes = [](int floats_a_block) { return 4.0 * 5 * floats_a_block; };
  auto seconds = [&](double b, const std::vector<std::string>& params, const char* executor) {
    std::vector<std::string> all{"collective=alltoall", "in_place=on"};
    all.insert(all.end(), params.begin(), params.end());
    return find_executor(executor).evaluate(nccl_request(t, 5, b, all), {}).time_per_sync_s;
  };
  const double misaligned = bytes((1 << 24) + 1);
  for (const char* executor : {"analytic", "formula"}) {
    const double aligned_slope = seconds(bytes(1 << 25), {}, executor) - seconds(bytes(1 << 24), {}, executor);
    ASSERT_GT(aligned_slope, 0) << executor;
    for (const int slowdown : {32, 16}) {
      const std::vector<std::string> p{"bytewise_slowdown=" + std::to_string(slowdown)};
      const double slope = seconds(bytes((1 << 25) + 1), p, executor) - seconds(misaligned, p, executor);
      EXPECT_NEAR(slope / aligned_slope, slowdown, 0.01 * slowdown) << executor;
      EXPECT_NEAR(seconds(bytes(1 << 24), p, executor), seconds(bytes(1 << 24), {}, executor), 1e-12) << executor;
    }
  }
  const ResultRecord r = predict(nccl_request(t, 5, misaligned, {"collective=alltoall", "in_place=on"}));
  const auto fact = std::find_if(r.open_facts.begin(), r.open_facts.end(),
                                 [](const OpenFact& f) { return f.name == "byte-wise copies of misaligned alltoall blocks"; });
  ASSERT_NE(fact, r.open_facts.end());
  ASSERT_EQ(fact->relative_time.size(), 1U);
  EXPECT_NEAR(fact->relative_time[0].second, 0.5, 0.02);
  const auto range = r.busbw_range_GBps();
  ASSERT_TRUE(range.has_value());
  EXPECT_GE(range->second, 1.9 * *r.busbw_GBps());
  const ResultRecord none = predict(nccl_request(t, 5, bytes(1 << 24), {"collective=alltoall", "in_place=on"}));
  EXPECT_TRUE(std::none_of(none.open_facts.begin(), none.open_facts.end(),
                           [](const OpenFact& f) { return f.name == "byte-wise copies of misaligned alltoall blocks"; }));
}

// Broadcast and reduce across hosts and on NVSwitch hosts: each channel's ring cut into a chain at
// rank 0, its part pipelined along it in chunks of one step (NCCL's BROADCAST_CHUNKSTEPS and
// REDUCE_CHUNKSTEPS are 1); the root's buffer on every rank, or every rank's sum on the root
// (proved); nccl-tests' bus factor 1; the schedule walked = the plan's closed form.
TEST(NcclPlanner, BroadcastAndReduceAreChainsOfItsRings) {
  int checked = 0;
  for (const PlannedCase& c : planned_cases()) {
    const Topology t = cluster(c.nodes, c.gpus, c.intra, c.gpus);
    const Placement placement = spread(t, c.nodes, c.per_node);
    for (const char* collective : {"broadcast", "reduce"}) {
      for (const char* protocol : {"auto", "LL", "Simple"}) {
        for (std::uint64_t elements : {std::uint64_t{7}, static_cast<std::uint64_t>(placement.size() + 1), std::uint64_t{1024 * 1024 + 3},
                                       std::uint64_t{64} * 1024 * 1024}) {
          const std::string what = std::to_string(c.nodes) + " nodes x " + std::to_string(c.per_node) + " " + collective + "/" + protocol +
                                   " elements=" + std::to_string(elements);
          const PredictRequest q = planned_collective(t, placement, collective, protocol, elements);
          const BuiltSchedule b = proved_on_ring(q, what);
          ASSERT_EQ(b.schedule.expected.size(), 1u);
          const ExpectedRegion& e = b.schedule.expected.front();
          if (std::string(collective) == "broadcast") {
            EXPECT_EQ(e.contributors, std::vector<int>{0});
            EXPECT_TRUE(e.holders.empty());
          } else {
            EXPECT_TRUE(e.all_workers);
            EXPECT_EQ(e.holders, std::vector<int>{0});
          }
          const ResultRecord walked = predict(q);
          EXPECT_DOUBLE_EQ(walked.busbw_factor, 1.0);
          if (elements > 1024) expect_walked_as_closed(q, walked, what);
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 2 * 3 * 4);
}

// 256 MiB on two HGX H100 nodes: a broadcast moves each byte once through every hop of its chains,
// the ring all-reduce 2(N-1)/N times round its rings, both at the same per-channel rate (what
// each channel carries between hosts). The broadcast's chains pipeline chunks of one step
// (Simple: 4 MiB / NCCL_STEPS = 512 KiB): 256 MiB over 16 channels is 32 chunks each, and the
// last leaves the root after 31 chunk times and reaches the end N - 1 hops on, 46 in all; NCCL's
// ring graph gives the hops within a host no more per channel than those between hosts, so each
// of them takes a whole chunk time too. So, bytes alone (latencies apart): the broadcast takes
// 46/32 x N / (2(N-1)) of the all-reduce's time.
TEST(NcclPlanner, ABroadcastAcrossHostsMovesEachByteOncePerHopInChunks) {
  const Topology t = hgx(2);
  PredictRequest q = nccl_request(t, 16, 256.0 * 1024 * 1024, {"algorithm=Ring", "protocol=Simple"});
  const ResultRecord ring = predict(q);
  q.params = SyncParams::parse({"collective=broadcast", "protocol=Simple"});
  const ResultRecord broadcast = predict(q);
  const double n = 16;
  auto seconds_in = [](const ResultRecord& r, const std::string& phase) {
    double s = 0;
    for (const auto& p : r.phases) s += p.name == phase ? p.seconds : 0.0;
    return s;
  };
  const double ring_bytes = seconds_in(ring, "reduce-scatter") + seconds_in(ring, "all-gather");
  ASSERT_GT(ring_bytes, 0);
  EXPECT_NEAR(seconds_in(broadcast, "broadcast") / ring_bytes, 46.0 / 32 * n / (2 * (n - 1)), 1e-3);
}

// What NCCL refuses to run is refused: NVLS without an NVSwitch, NVLS tree on one host.
TEST(NcclPlanner, AnAlgorithmTheMachineCannotRunIsAnInputError) {
  const Topology pcie = cluster(2, 2, IntraFabric::pcie, 2);
  const Topology one = cluster(1, 8, IntraFabric::nvswitch, 8);
  for (const auto& [t, algorithm] : {std::pair<const Topology*, const char*>{&pcie, "NVLS"}, {&pcie, "NVLSTree"}, {&one, "NVLSTree"}}) {
    PredictRequest q;
    q.topology = t;
    q.strategy = &find_strategy("nccl");
    q.placement = first_gpus(*t, t == &one ? 8 : 4);
    q.bytes = 1 << 20;
    q.params = SyncParams::parse({std::string("algorithm=") + algorithm});
    EXPECT_THROW(build_schedule(q), gradsync::models::InputError) << algorithm;
  }
  // Nor NVLS where a node holds one of the GPUs (nvls.cc: NCCL turns it off below two): one GPU
  // on each of four HGX nodes is offered no NVLS tree, refused it when forced, and planned
  // without it (the schedule fuzzer found NVLSTree offered there and then refused).
  const Topology four = cluster(4, 8, IntraFabric::nvswitch, 8);
  PredictRequest q = nccl_request(four, 4, 1070, {});
  q.placement = spread(four, 4, 1);
  EXPECT_TRUE(nvls_algorithms(four, q.placement.ranks).empty());
  EXPECT_EQ(nvls_algorithms(four, spread(four, 4, 2).ranks), std::vector<std::string>{"NVLSTree"});
  q.params = SyncParams::parse({"algorithm=NVLSTree"});
  EXPECT_THROW(build_schedule(q), gradsync::models::InputError);
  for (double bytes : {1070.0, 1e9}) {
    q.bytes = bytes;
    q.params = SyncParams::parse({});
    const std::string picked = build_schedule(q).resolved.at("algorithm");
    EXPECT_TRUE(picked == "Ring" || picked == "Tree") << picked;
  }
}

// One HGX H100 node, 1 GiB: NCCL picks NVLS (its model: 8 searched channels x 40 GB/s x 0.85 x
// 7/8 x 2 = 476 GB/s of bus bandwidth). Its kernels move, each way over a GPU's 18 NVLinks, S/N
// to every rank's multimem.ld_reduce of its part and S from the multimem.st of all N parts:
// S (1 + 1/N), at NCCL's 18 x 20.6 GB/s x 0.85 (Hopper's NVLS efficiency) = 315.2 GB/s. The bus
// bandwidth 2(N-1)/N x 315.2 x N/(N+1) is 490.3 GB/s on 8 GPUs (nccl-tests on such nodes report
// about 480) and 450.3 on 6 (the published 6-GPU run: 443 at 8 GiB); the pipeline reaches it
// within its fill (64 chunks, 3 more rounds), never above it.
TEST(NcclPlanner, OneHgxNodeNvlsMovesItsMulticastBytes) {
  const Topology t = hgx(1);
  for (const auto& [gpus, busbw] : {std::pair{8, 490.3}, std::pair{6, 450.3}}) {
    const ResultRecord r = predict(nccl_request(t, gpus, 1024.0 * 1024 * 1024, {"cpu=intel", "algorithm=NVLS"}));
    ASSERT_TRUE(r.busbw_GBps());
    EXPECT_LE(*r.busbw_GBps(), busbw * 1.001) << gpus;
    EXPECT_GE(*r.busbw_GBps(), busbw * 64 / 67 * 0.99) << gpus;
  }
  EXPECT_EQ(predict(nccl_request(t, 8, 1024.0 * 1024 * 1024, {"cpu=intel"})).params.at("algorithm"), "NVLS");
}

// The range over the facts the inputs leave open (GPUDirect RDMA, NVLink SHARP, the CPU) plans
// again under each: a note predict shows, and a search turns off (PredictRequest::explain);
// the prediction itself is the same either way.
TEST(NcclPlanner, OpenFactsOnlyWhenExplained) {
  const Topology t = hgx(2);
  // The CPU left open (a cheap plan again); GPUDirect RDMA stated, whose other value's search
  // runs to NCCL's step budget.
  PredictRequest q = nccl_request(t, 16, 64.0 * 1024 * 1024, {"gpudirect=on"});
  auto has_open_facts = [](const ResultRecord& r) {
    return std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) { return n.rfind("open facts: ", 0) == 0; });
  };
  const ResultRecord explained = predict(q);
  q.explain = false;
  const ResultRecord quiet = predict(q);
  EXPECT_TRUE(has_open_facts(explained));
  EXPECT_FALSE(has_open_facts(quiet));
  EXPECT_EQ(explained.time_per_sync_s, quiet.time_per_sync_s);
  EXPECT_EQ(explained.params, quiet.params);
}

// What a prediction rests on, said: two generated HGX H100 nodes (8 GPUs on an NVSwitch, 8
// InfiniBand NICs of 400 Gb/s each) as NCCL's view of a host holds them, with GPUDirect RDMA
// on or, stated off, the NICs reached through host memory.
TEST(NcclPlanner, ThePlanSaysWhatItRestsOn) {
  const Topology t = hgx(2);
  auto facts = [&](const std::string& gdr) {
    const ResultRecord r = predict(nccl_request(t, 16, 1 << 20, {"gpudirect=" + gdr, "cpu=intel"}));
    for (const std::string& n : r.notes) {
      if (n.rfind("facts: ", 0) == 0) return n;
    }
    return std::string();
  };
  const std::string on = facts("on");
  EXPECT_EQ(on.rfind("facts: NCCL 2.30.7; a host: 8 GPUs (sm90) on an NVSwitch with NVLink SHARP, ", 0), 0u) << on;
  EXPECT_NE(on.find("(intel)"), std::string::npos) << on;
  EXPECT_NE(on.find(", 8 NICs at 50.0 GB/s (infiniband), GPUDirect RDMA on (GDR level "), std::string::npos) << on;
  const std::string off = facts("off");
  EXPECT_NE(off.find(", 8 NICs at 50.0 GB/s (infiniband), GPUDirect RDMA off: through host memory"), std::string::npos) << off;
}

// Two HGX H100 nodes, the ring forced (NCCL_ALGO=Ring), 1 GiB: NCCL's model gives the ring a
// bus bandwidth of 8 searched channels x 48 = 384 GB/s (TwoHgxH100NodesEightNics). Its 16
// channels cross between the nodes on 8 NICs of 50 GB/s, so no ring can pass 400 GB/s of bus
// bandwidth (each rank's step crosses one NIC per channel). A channel's connection keeps NCCL's
// 8 steps of Simple's 4 MiB buffer in flight: by default (4 MiB fill a NIC) all of its NIC's
// 50 GB/s, 16 x 50 = 800 GB/s, so NCCL's 384 bounds it; the schedule run by the analytic model
// lands between 90 % and 100 % of the lower limit. Where a NIC needed 16 MiB in flight a channel
// would carry a quarter of it: 16 x 12.5 = 200 GB/s; with 24 channels (NCCL_MIN_CTAS=24) 300,
// still below NCCL's 384; at 32 MiB, 100.
TEST(NcclPlanner, TwoHgxNodesRingRunsAtNcclsBandwidthWithinWhatItsChannelsCarry) {
  const Topology t = hgx(2);
  auto busbw = [&](std::vector<std::string> params) {
    // (GPUDirect RDMA and the CPU stated: no plan again under their other values.)
    // (The fabric routes adaptively: no queue pair kept to one path, test_nccl_routing.cpp.)
    params.insert(params.end(), {"algorithm=Ring", "protocol=Simple", "gpudirect=on", "cpu=intel", "adaptive_routing=on"});
    const ResultRecord r = predict(nccl_request(t, 16, 1024.0 * 1024 * 1024, params));
    EXPECT_TRUE(r.busbw_GBps());
    return r.busbw_GBps().value_or(0);
  };
  for (const auto& [params, limit] : std::vector<std::pair<std::vector<std::string>, double>>{
           {{"net_window_MiB=4"}, 384.0},
           {{}, 384.0},
           {{"net_window_MiB=16"}, 16 * 50 * 4.0 / 16},
           {{"min_ctas=24", "net_window_MiB=16"}, 24 * 50 * 4.0 / 16},
           {{"net_window_MiB=32"}, 16 * 50 * 4.0 / 32}}) {
    const double b = busbw(params);
    EXPECT_LE(b, limit * 1.001) << testing::PrintToString(params);
    EXPECT_GE(b, 0.9 * limit) << testing::PrintToString(params);
  }
}

// Two HGX nodes, the tree forced, 64 KiB. NCCL runs the tree on as many of its 16 channels as
// give each thread its threshold (enqueue.cc: 64 B a thread with Simple, 8 with LL and LL128; 512
// threads, 640 with LL128): Simple 65536 / (512 x 64) = 2 channels of 32 KiB, LL all 16 (4 KiB
// each), LL128 65536 / (640 x 8) = 12 (5461 B each); one chunk each. A channel's tree (NCCL's
// search settles on the plain tree pattern on Hopper) hangs host 1's chain of 8 GPUs under host
// 0's first GPU: a chunk goes up 8 hops (7 in host 1's chain, one between the hosts; host 0's
// chain alongside) and down 8, in 16 rounds, 2 of them between the hosts. With Simple each hop
// forwards whole chunks: 16 chunk times. LL and LL128 pass a warp's unit on as it arrives (256
// bytes, 480 bytes), so a hop within a host costs that unit's share of the chunk and a hop
// between hosts (the proxy sends whole steps) the chunk: 2 + 14 x 256 / 4096 and
// 2 + 14 x 480 / 5461 chunk times. A chunk time is a channel's part at NCCL's algorithm bandwidth
// per channel (its model's bandwidth / 16): the time is the launch (3 us), NCCL's latency, and
// those chunk times.
TEST(NcclPlanner, TreeWithLinesPassesThemOnWithinAHost) {
  const Topology t = hgx(2);
  struct Case {
    std::string protocol;
    double channels, chunk_times;
  };
  for (const Case& c : std::vector<Case>{{"Simple", 2, 16.0}, {"LL", 16, 2 + 14 * 256.0 / 4096}, {"LL128", 12, 2 + 14 * 480.0 / (65536.0 / 12)}}) {
    const ResultRecord r =
        predict(nccl_request(t, 16, 65536, {"algorithm=Tree", "protocol=" + c.protocol, "gpudirect=on", "cpu=intel", "launch_us=3"}));
    double latency_us = 0, bw_GBps = 0;
    for (const std::string& note : r.notes) {
      const auto at = note.find("NCCL's model: ");
      if (at != std::string::npos) std::sscanf(note.c_str() + at, "NCCL's model: %lf us + bytes at %lf GB/s", &latency_us, &bw_GBps);
    }
    ASSERT_GT(bw_GBps, 0) << c.protocol;
    const double part = 65536 / c.channels, channel_GBps = bw_GBps / 16;
    const double expected = 3e-6 + latency_us * 1e-6 + c.chunk_times * part / (channel_GBps * 1e9);
    EXPECT_NEAR(r.time_per_sync_s, expected, 0.03 * expected) << c.protocol;
  }
}

// CollNet (collnet=on, NCCL_COLLNET_ENABLE=1): the network's switch reduces across hosts. Every
// CollNet plan is an all-reduce by the symbolic checker: chains into the switch on PCIe hosts,
// chains and direct heads on NVSwitch hosts, and (NCCL's own pick on two HGX nodes at 4 MiB) NVLS
// carried across hosts by the switch; the analytic schedule keeps NCCL's bandwidth for the chosen
// algorithm (within its pipeline's fill).
TEST(NcclPlanner, CollNetPlansAreAllReducesThroughTheNetworksSwitch) {
  struct Case {
    int nodes, gpus;
    IntraFabric intra;
    std::vector<std::string> algorithms;
  };
  const std::vector<Case> cases = {
      {2, 8, IntraFabric::nvswitch, {"auto", "CollnetChain", "CollnetDirect"}},
      {3, 4, IntraFabric::nvswitch, {"CollnetChain", "CollnetDirect"}},
      {3, 2, IntraFabric::pcie, {"auto", "CollnetChain"}},
  };
  int checked = 0;
  for (const Case& c : cases) {
    const Topology t = cluster(c.nodes, c.gpus, c.intra, c.gpus);
    const Placement placement = spread(t, c.nodes, c.gpus);
    for (const std::string& algorithm : c.algorithms) {
      for (std::uint64_t elements : {std::uint64_t{1}, std::uint64_t{37}, std::uint64_t{1024 * 1024 + 3}, std::uint64_t{64} << 20}) {
        PredictRequest q;
        q.topology = &t;
        q.strategy = &find_strategy("nccl");
        q.placement = placement;
        q.bytes = 4.0 * static_cast<double>(elements);
        q.params = SyncParams::parse({"algorithm=" + algorithm, "collnet=on"});
        const BuiltSchedule b = build_schedule(q);
        if (algorithm != "auto") {
          EXPECT_EQ(b.resolved.at("algorithm"), algorithm);
        }
        const SymbolicResult r = check_schedule(b.schedule);
        ASSERT_TRUE(r.ok) << c.nodes << " nodes x " << c.gpus << " " << algorithm << " elements=" << elements << ": " << r.message;
        // One participant more than the ranks' (and their NVSwitches'): the network's switch.
        bool sharp = false;
        for (const Participant& p : b.schedule.participants) sharp = sharp || t.node(p.node).kind == NodeKind::net_switch;
        EXPECT_TRUE(sharp || b.resolved.at("algorithm").rfind("Collnet", 0) != 0) << algorithm;
        if (elements == (std::uint64_t{64} << 20)) {
          const ResultRecord closed = find_executor("formula").evaluate(q, {});
          const ResultRecord walked = predict(q);
          ASSERT_TRUE(closed.busbw_GBps() && walked.busbw_GBps());
          EXPECT_NEAR(*walked.busbw_GBps(), *closed.busbw_GBps(), 0.1 * *closed.busbw_GBps()) << algorithm;
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 28);
  // Not asked for, not run: CollNet needs collnet=on.
  const Topology t = cluster(2, 8, IntraFabric::nvswitch, 8);
  PredictRequest q;
  q.topology = &t;
  q.strategy = &find_strategy("nccl");
  q.placement = first_gpus(t, 16);
  q.bytes = 1 << 20;
  q.params = SyncParams::parse({"algorithm=CollnetChain"});
  EXPECT_THROW(build_schedule(q), gradsync::models::InputError);
}

// The search does not run again a pass that repeats one which found nothing (the same pattern,
// speed and budget, path type limits that admit the same paths, the same best graph so far):
// it would find nothing again and spend the same steps. Every graph is as the search that runs
// each pass finds it, on hosts where passes repeat: an HGX node with GPUDirect RDMA off (every
// NIC path through the CPU, PHB, so the tree's first passes find nothing at each of eight
// intra-host limits that all admit the NVLink paths alike), AMD and Intel hosts, PCIe nodes.
TEST(NcclPlanner, PassesThatFoundNothingAreNotRunAgain) {
  struct Case {
    const char* name;
    Topology t;
    SystemOptions o;
  };
  SystemOptions gdr_off = h100();
  gdr_off.gdr = 0;
  SystemOptions amd = h100();
  amd.cpu_vendor = "amd";
  SystemOptions intel_off = gdr_off;
  intel_off.cpu_vendor = "intel";
  SystemOptions pcie;
  pcie.cc = 80;
  std::vector<Case> cases;
  cases.push_back({"hgx, GPUDirect RDMA off", hgx(2), gdr_off});
  cases.push_back({"hgx, AMD", hgx(2), amd});
  cases.push_back({"hgx, Intel, GPUDirect RDMA off", hgx(2), intel_off});
  cases.push_back({"PCIe, 2 NICs", cluster(2, 8, IntraFabric::pcie, 2), pcie});
  cases.push_back({"PCIe, 2 NICs, GPUDirect RDMA off", cluster(2, 8, IntraFabric::pcie, 2), [] {
                     SystemOptions o;
                     o.gdr = 0;
                     return o;
                   }()});
  // Two GPUs a PCIe switch, four switches under the root complex: rings within a switch (PIX)
  // find nothing, through the root complex (PHB) they do.
  ClusterSpec pairs;
  pairs.nodes = 2;
  pairs.intra = IntraFabric::pcie;
  pairs.gpus_per_pcie_switch = 2;
  pairs.nics_per_node = 4;
  cases.push_back({"PCIe, two GPUs a switch", generate_cluster(pairs), pcie});
  int trees_through_the_cpu = 0;
  for (const Case& c : cases) {
    for (bool inter : {true, false}) {
      for (Pattern p : {Pattern::ring, Pattern::balanced_tree, Pattern::nvls}) {
        SCOPED_TRACE(std::string(c.name) + (inter ? ", across hosts" : ", one host") + ", pattern " + std::to_string(static_cast<int>(p)));
        System a(c.t, host_gpus(c.t, 0), c.o), b(c.t, host_gpus(c.t, 0), c.o);
        const Graph once = compute_graph(a, p, 1, 32, inter);
        const Graph every = compute_graph(b, p, 1, 32, inter, false, true);
        EXPECT_EQ(once.n_channels, every.n_channels);
        EXPECT_EQ(once.bw_intra, every.bw_intra);
        EXPECT_EQ(once.bw_inter, every.bw_inter);
        EXPECT_EQ(once.type_intra, every.type_intra);
        EXPECT_EQ(once.type_inter, every.type_inter);
        EXPECT_EQ(once.pattern, every.pattern);
        EXPECT_EQ(once.same_channels, every.same_channels);
        EXPECT_EQ(once.cross_nic, every.cross_nic);
        EXPECT_EQ(once.n_hops, every.n_hops);
        EXPECT_EQ(once.intra, every.intra);
        EXPECT_EQ(once.inter, every.inter);
        if (!inter && p == Pattern::ring && std::string(c.name) == "PCIe, two GPUs a switch") {
          EXPECT_EQ(once.type_intra, kPathPhb);
        }
        if (inter && p == Pattern::balanced_tree && c.o.gdr == 0 && c.o.cc == 90) {
          // Without GPUDirect RDMA NCCL routes each GPU's NIC traffic through the CPU.
          EXPECT_EQ(once.type_inter, kPathPhb);
          EXPECT_GT(once.n_channels, 0);
          ++trees_through_the_cpu;
        }
      }
    }
  }
  EXPECT_EQ(trees_through_the_cpu, 2);
}

// A point-to-point message rides the channels NCCL gives it (p2p_channels.h), each network
// channel keeping 8 steps of 128 KiB in flight, 1 MiB of the 4 MiB that fill a NIC by default
// (net_window_MiB): 0.25 of its NIC's 50 GB/s, 12.5 GB/s. sendrecv of 1 GiB
// on HGX H100 nodes of 8 NICs (PCIe Gen5: NCCL's 48 GB/s), by 2.29's rules (paths.cc,
// enqueue.cc):
// - one rank on each of 10 hosts: the communicator's 4 channels (asserted) make 4 point-to-point
//   channels; a network peer gets max(1 NIC, ceil(48 / 14)) = 4, across hosts halved while
//   4 x ceil(10 / 8) > 4: 2 a peer; a message takes 1 (1 x 10 > 4 halves 2 to 1), doubled while its
//   part exceeds one 128 KiB step, up to 2: 2 channels, 25 GB/s.
// - 8 ranks on each: 16 channels (asserted); a peer's least is 4 (its NVLink peers have 36),
//   4 x ceil(80 / 8) = 40 > 16 halves it to 2, 20 > 16 to 1: 1 channel, 12.5 GB/s.
// - 2.18's rules, one rank a host: a network peer gets 2; a message 1 (2 x 10 > 4), at most 1
//   (2 x 10 > 4 x 4): 12.5 GB/s.
TEST(NcclPlanner, PointToPointMessagesRideTheChannelsNcclGivesThem) {
  const Topology t = hgx(10);
  const auto busbw = [&](int per_node, const std::string& version, int expect_channels) {
    PredictRequest q = nccl_request(t, 1, 1 << 30, {"collective=sendrecv", "nccl_version=" + version, "gpudirect=on"});
    q.placement = spread(t, 10, per_node);
    std::vector<std::size_t> gpus = q.placement.ranks;
    PlanOptions o;
    o.nccl_version = nccl_version_code(version + ".0");
    o.gpudirect = true;
    EXPECT_EQ(make_plan(t, gpus, 1 << 30, o).comm.channels, expect_channels);
    const ResultRecord r = find_executor("analytic").evaluate(q, ExecutorSettings{});
    std::string notes;
    for (const auto& n : r.notes) notes += n + "\n";
    return std::make_pair(r.busbw_GBps().value_or(0), notes);
  };
  auto [ten, ten_notes] = busbw(1, "2.29", 4);
  const double channel = 50 * (8 * 131072.0) / (4 * 1048576.0);
  EXPECT_NEAR(ten, 2 * channel, 0.5);
  EXPECT_NE(ten_notes.find("2 channels a message (of 2 a peer, 4 for point-to-point work)"), std::string::npos) << ten_notes;
  auto [eighty, eighty_notes] = busbw(8, "2.29", 16);
  EXPECT_NEAR(eighty, channel, 0.3);
  EXPECT_NE(eighty_notes.find("1 channel a message (of 1 a peer, 16 for point-to-point work)"), std::string::npos) << eighty_notes;
  auto [old, old_notes] = busbw(1, "2.18", 4);
  EXPECT_NEAR(old, channel, 0.3);
  EXPECT_NE(old_notes.find("1 channel a message (of 2 a peer"), std::string::npos) << old_notes;
}

// More NIC ports than GPUs (an OCI A100 shape: 8 GPUs two to a PCIe switch, 16 ports of
// 100 Gb/s, four to a switch): NCCL's search spreads its channels over the NICs
// (Graph::inter) and each channel's transfers between hosts leave and enter by its own
// (search.cc ncclTopoGetNetDev), not by the NIC nearest the GPU. A 1 GiB tree all-reduce on two
// such nodes moves each byte across the network once each way (up one tree, down the other):
// per host S a direction. Through the four NICs nearest the GPUs that is at most 4 x 12.5 = 50
// GB/s of algorithm bandwidth (93.75 of bus bandwidth, x 2 x 15 / 16); through all sixteen 200
// (375). The prediction lies half again above the first and within the second.
TEST(NcclPlanner, ChannelsLeaveByTheNicsTheSearchGaveThem) {
  ClusterSpec s;
  s.nodes = 2;
  s.gpus_per_node = 8;
  s.gpus_per_pcie_switch = 2;
  s.nics_per_node = 16;
  s.nic_GBps = 12.5;
  s.gpu = "A100-SXM4";
  s.nvlink_GBps = 300;
  s.gpudirect = "true";
  const Topology t = generate_cluster(s);
  const ResultRecord r = predict(nccl_request(t, 16, 1024.0 * 1024 * 1024, {"algorithm=Tree", "protocol=Simple", "cpu=intel"}));
  const double busbw = r.busbw_GBps().value_or(0);
  EXPECT_GT(busbw, 1.5 * 93.75);
  EXPECT_LE(busbw, 375.0);
}

// Two B200 nodes, eight 400 Gb/s NICs each, 1 GiB: NCCL plans the NVLS tree. Its model
// (tuning.cc) prices a channel at min(NVSwitch term, network term, per-channel ceiling): the NVLS
// graph's one search speed, 48 GB/s (the NIC's 50 sets it), x 0.74 (Blackwell's NVLS efficiency)
// x 7/8 x 2 = 62.2; the network's 2 x 48 = 96 (two nodes); the ceiling 96 (perChMaxNVLSTreeBws,
// Blackwell, two nodes). Eight channels: 497 GB/s of bus bandwidth in NCCL's model, of which only
// the NVSwitch term, priced at the NIC's speed, holds it below 768. The kernels run at the ceiling,
// so the prediction passes 1.2 x 497; each host sends S a direction across its 8 x 50 GB/s, so
// it stays within 400 GB/s of algorithm bandwidth, 750 of bus bandwidth.
TEST(NcclPlanner, BlackwellNvlsTreeRunsAtNcclsPerChannelCeiling) {
  ClusterSpec s;
  s.nodes = 2;
  s.gpus_per_node = 8;
  s.nics_per_node = 8;
  s.gpu = "B200";
  s.gpudirect = "true";
  s.nvlink_sharp = "true";
  const Topology t = generate_cluster(s);
  const ResultRecord r = predict(nccl_request(t, 16, 1024.0 * 1024 * 1024, {"cpu=intel"}));
  ASSERT_FALSE(r.notes.empty());
  EXPECT_EQ(r.notes.front().rfind("NVLSTree/Simple", 0), 0u) << r.notes.front();
  const double busbw = r.busbw_GBps().value_or(0);
  EXPECT_GT(busbw, 1.2 * 8 * 48 * 0.74 * 7 / 8 * 2);
  EXPECT_LE(busbw, 750.0);
}
