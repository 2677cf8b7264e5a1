// NCCL's cost model by release (tuning.cpp, Comm::nccl_version): the latency tables and rules
// NCCL changed between 2.16 and 2.30 steer what the release chooses, and the newest price the
// time (Plan::kernel_costs). The expected figures are NCCL's own source arithmetic for these
// communicators (src/graph/tuning.cc of v2.16.5-1 and v2.30.7-1), written out by hand.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "models/executors/predict.h"
#include "models/strategies/nccl/plan.h"
#include "models/strategies/nccl/tuning.h"
#include "models/topology/cluster_generator.h"
#include "support/nccl_planner.h"

using namespace gradsync::models;
using namespace gradsync::models::nccl;

namespace {

// `nodes` hosts of `gpus` A100 PCIe each, the NIC on the CPU as the published pair has it.
Topology a100_pcie(int nodes, int gpus) { return test_nccl_planner::a100_pcie_hosts(nodes, gpus, "cpu"); }

std::vector<std::size_t> first_gpus_of(const Topology& t, int nodes, int gpus) {
  std::vector<std::size_t> out;
  for (int n = 0; n < nodes; ++n) {
    for (int g = 0; g < gpus; ++g) out.push_back(t.require("n" + std::to_string(n) + "-gpu" + std::to_string(g), "test"));
  }
  return out;
}

Plan plan_for(const Topology& t, int nodes, int gpus, double bytes, int version) {
  PlanOptions o;
  o.cpu_vendor = "amd";
  o.gdr_level = kPathSys;  // the pair's log sets NCCL_NET_GDR_LEVEL=SYS
  o.nccl_version = version;
  o.nccl_version_stated = true;
  return make_plan(t, first_gpus_of(t, nodes, gpus), bytes, o);
}

// Every GPU of the first two hosts, host by host.
std::vector<std::size_t> both_hosts_gpus(const Topology& t) {
  std::vector<std::size_t> gpus = test_nccl_planner::host_gpus(t, 0);
  for (std::size_t g : test_nccl_planner::host_gpus(t, 1)) gpus.push_back(g);
  return gpus;
}

}  // namespace

TEST(NcclReleases, OneHostsRingIsPricedWithItsReleasesTables) {
  const Topology t = a100_pcie(1, 2);
  const Plan old = plan_for(t, 1, 2, 65536, 21605), now = plan_for(t, 1, 2, 65536, 23007);
  ASSERT_EQ(old.comm.ring.type_intra, now.comm.ring.type_intra);
  ASSERT_NE(old.comm.ring.type_intra, kPathNvl);  // PCIe steps (hwLat's PCI row)
  // All-reduce on 2 ranks: 2 steps. 2.16: baseLat LL 3.6 + 2 x 1.0; Simple 8.4 + 2 x 5.7. 2.30:
  // LL 6.6 + 2 x 1.0; Simple the same 19.8.
  EXPECT_NEAR(old.costs.lat[kRing][kLL], 5.6, 1e-9);
  EXPECT_NEAR(now.costs.lat[kRing][kLL], 8.6, 1e-9);
  EXPECT_NEAR(old.costs.lat[kRing][kSimple], 19.8, 1e-9);
  EXPECT_NEAR(now.costs.lat[kRing][kSimple], 19.8, 1e-9);
  // LL credited a quarter of the ring's bus bandwidth before 2.21, half since (both under
  // llMaxBw at these rates); Simple alike in both.
  ASSERT_GT(now.costs.bw[kRing][kLL], 0);
  EXPECT_NEAR(old.costs.bw[kRing][kLL] / now.costs.bw[kRing][kLL], 0.5, 1e-9);
  EXPECT_NEAR(old.costs.bw[kRing][kSimple], now.costs.bw[kRing][kSimple], 1e-9);
  // The time is priced by the newest release's figures whatever release chooses.
  EXPECT_EQ(old.kernel_costs.lat, now.kernel_costs.lat);
  EXPECT_EQ(old.kernel_costs.bw, now.kernel_costs.bw);
}

TEST(NcclReleases, TwoHostsOfOneGpuCountTheStepsAsTheirReleaseDid) {
  const Topology t = a100_pcie(2, 1);
  const Plan old = plan_for(t, 2, 1, 65536, 21605), now = plan_for(t, 2, 1, 65536, 23007);
  // 2 steps, all between hosts. 2.16 counts 2 x nodes = 4 of them and the other 2 - 4 within a
  // host, the graph's latency (none here) or the table's network step: Simple 8.4 - 2 x 5.7 + 4 x
  // 9.6 = 35.4 us; LL 3.6 - 2 x 1.8 x 1.0 + 4 x 2.7 = 10.8. 2.30 counts 2 x (nodes - 1) = 2: Simple
  // 8.4 + 2 x 14 = 36.4 (one GPU a host: the tree's network step); LL 6.6 + 2 x 5.0 = 16.6.
  EXPECT_NEAR(old.costs.lat[kRing][kSimple], 35.4, 1e-9);
  EXPECT_NEAR(old.costs.lat[kRing][kLL], 10.8, 1e-9);
  EXPECT_NEAR(now.costs.lat[kRing][kSimple], 36.4, 1e-9);
  EXPECT_NEAR(now.costs.lat[kRing][kLL], 16.6, 1e-9);
  // 2.8 - 2.11 counted 2 x (nodes - 1) = 2 steps between hosts with 2.16's tables: Simple 8.4 + 2 x
  // 9.6 = 27.6, LL 3.6 + 2 x 2.7 = 9.0. Before 2.8 (2.4 had no cost model) the newest stand in.
  const Plan v2_8 = plan_for(t, 2, 1, 65536, 20804), v2_4 = plan_for(t, 2, 1, 65536, 20408);
  EXPECT_NEAR(v2_8.costs.lat[kRing][kSimple], 27.6, 1e-9);
  EXPECT_NEAR(v2_8.costs.lat[kRing][kLL], 9.0, 1e-9);
  EXPECT_EQ(v2_4.costs.lat, now.costs.lat);
  EXPECT_EQ(v2_4.costs.bw, now.costs.bw);
  // The ring's plateau once a rank has a 16th of 64 KiB (2.16: 1.9 times) or a channel and rank
  // 64 bytes (2.30: 1.4 times on Ampere).
  EXPECT_NEAR(algorithm_time(old.comm, old.costs, Collective::all_reduce, kRing, kSimple, 1 << 20).latency_us, 35.4 * 1.9, 1e-9);
  EXPECT_NEAR(algorithm_time(now.comm, now.costs, Collective::all_reduce, kRing, kSimple, 1 << 20).latency_us, 36.4 * 1.4, 1e-9);
}

TEST(NcclReleases, TheReleaseMovesTheCrossoverFromLlToSimple) {
  // The published pair (NCCL 2.16.5) switches from LL to Simple between 438 and 487 KB; 2.30's
  // tables would keep LL to about 800 KB.
  const Topology t = a100_pcie(2, 1);
  for (const double kib : {64.0, 256.0}) {
    EXPECT_EQ(plan_for(t, 2, 1, kib * 1024, 21605).protocol(), kLL) << kib;
    EXPECT_EQ(plan_for(t, 2, 1, kib * 1024, 23007).protocol(), kLL) << kib;
  }
  EXPECT_EQ(plan_for(t, 2, 1, 512 * 1024, 21605).protocol(), kSimple);
  EXPECT_EQ(plan_for(t, 2, 1, 512 * 1024, 23007).protocol(), kLL);
  EXPECT_EQ(plan_for(t, 2, 1, 1024 * 1024, 23007).protocol(), kSimple);
}

TEST(NcclReleases, AnUnstatedReleaseIsAnOpenFactWhereItChangesTheChoice) {
  const Topology t = a100_pcie(2, 1);
  auto version_facts = [&](double bytes, bool stated) {
    PlanOptions o;
    o.cpu_vendor = "amd";
    o.gdr_level = kPathSys;
    o.nccl_version_stated = stated;
    std::vector<Assumption> out;
    for (const Assumption& a : make_plan(t, first_gpus_of(t, 2, 1), bytes, o).assumed) {
      if (a.fact == "NCCL version") out.push_back(a);
    }
    return out;
  };
  // 512 KiB: LL by the newest cost model, Simple by 2.8 - 2.17's (and LL by 2.18 - 2.22's).
  const std::vector<Assumption> at_512k = version_facts(512 * 1024, false);
  ASSERT_EQ(at_512k.size(), 1U);
  EXPECT_EQ(at_512k[0].with_other.nccl_version, 21700);
  EXPECT_TRUE(at_512k[0].with_other.nccl_version_stated);
  EXPECT_EQ(make_plan(t, first_gpus_of(t, 2, 1), 512 * 1024, at_512k[0].with_other).protocol(), kSimple);
  // Where every release picks alike, or a log states the release, nothing is open.
  EXPECT_TRUE(version_facts(64 * 1024, false).empty());
  EXPECT_TRUE(version_facts(512 * 1024, true).empty());
}

TEST(NcclReleases, NvlsIsNoChoiceBeforeTheReleaseThatBroughtIt) {
  // Two HGX H100 hosts: the newest cost model runs a large all-reduce on NVLink SHARP (NVLS tree
  // across hosts); NVLS came in 2.17 and its tree in 2.18, so 2.16 chooses among the others.
  const Topology t = test_nccl_planner::hgx(2);
  const std::vector<std::size_t> gpus = both_hosts_gpus(t);
  PlanOptions o;
  o.nccl_version_stated = true;
  const int now = make_plan(t, gpus, 1 << 30, o).algorithm();
  EXPECT_TRUE(now == kNvls || now == kNvlsTree) << algorithm_name(now);
  for (const int version : {21605, 21705}) {
    o.nccl_version = version;
    const Plan old = make_plan(t, gpus, 1 << 30, o);
    EXPECT_NE(old.algorithm(), kNvlsTree) << version;
    if (version < 21700) {
      EXPECT_NE(old.algorithm(), kNvls) << version;
    }
    EXPECT_GT(old.choice.time_us, 0) << version;
  }
}

TEST(NcclReleases, CollNetIsTheAlgorithmItsReleaseHad) {
  // Two HGX H100 hosts with CollNet enabled (NCCL_COLLNET_ENABLE=1, switches that reduce). NCCL
  // had one CollNet algorithm before 2.14: a chain through the host up to the switch and back
  // (collTree) to 2.11, heads the GPUs scatter to (collnetDirect) in 2.12 and 2.13; both since.
  const Topology t = test_nccl_planner::hgx(2);
  const std::vector<std::size_t> gpus = both_hosts_gpus(t);
  PlanOptions o;
  o.nccl_version_stated = true;
  o.collnet = true;
  o.gpudirect = true;
  auto enabled = [&](int version) {
    o.nccl_version = version;
    const Plan p = make_plan(t, gpus, 1 << 30, o);
    return std::make_pair(p.costs.bw[kCollnetChain][kSimple] > 0, p.costs.bw[kCollnetDirect][kSimple] > 0);
  };
  EXPECT_EQ(enabled(20804), std::make_pair(true, false));
  EXPECT_EQ(enabled(21107), std::make_pair(true, false));
  EXPECT_EQ(enabled(21207), std::make_pair(false, true));
  EXPECT_EQ(enabled(21304), std::make_pair(false, true));
  EXPECT_EQ(enabled(21403), std::make_pair(true, true));
  EXPECT_EQ(enabled(23007), std::make_pair(true, true));
}

TEST(NcclReleases, BeforeTwoTwelveHalfTheChannelsCarryTheChainsUpAndHalfDown) {
  // enqueue.cc (2.8 - 2.11): CollNet runs on comm->nChannels / 2 logical channels, one channel up
  // and one down each, at every size; since 2.14 every channel carries a chain both ways.
  const Topology t = test_nccl_planner::hgx(2);
  auto chains = [&](const std::string& version) {
    const ResultRecord r = predict(test_nccl_planner::nccl_request(
        t, 16, 1 << 30, {"algorithm=CollnetChain", "collnet=on", "gpudirect=on", "cpu=intel", "nccl_version=" + version}));
    int n = 0;
    for (const std::string& note : r.notes) {
      const auto at = note.find(" channels each a chain");
      if (at == std::string::npos) continue;
      const auto from = note.rfind(' ', at - 1);
      n = std::stoi(note.substr(from + 1, at - from - 1));
    }
    return n;
  };
  PlanOptions o;
  o.nccl_version = 20804;
  o.nccl_version_stated = true;
  o.collnet = true;
  o.gpudirect = true;
  const std::vector<std::size_t> gpus = both_hosts_gpus(t);
  const int channels = make_plan(t, gpus, 1 << 30, o).comm.channels;
  ASSERT_GE(channels, 2);
  EXPECT_EQ(chains("2.8"), channels / 2);
  EXPECT_EQ(chains("2.30"), channels);
}
