// NCCL's network plugins as the planner applies them (models/strategies/nccl/plan.cpp,
// net_plugin_of): AWS's aws-ofi-nccl for EFA and Slingshot, GCP's FasTrak for GPUDirect-TCPXO,
// each with what its source, or the environment its vendor ships beside it, sets.
#include <gtest/gtest.h>

#include <algorithm>

#include "models/executors/executor.h"
#include "models/executors/predict.h"
#include "models/strategies/nccl/plan.h"
#include "models/strategies/nccl/tuning.h"
#include "models/topology/cluster_generator.h"
#include "models/topology/topology.h"
#include "support/nccl_planner.h"

using namespace gradsync::models;
using namespace gradsync::models::nccl;
using namespace test_nccl_planner;

namespace {

// Two generated hosts of 8 GPUs and `nics` NICs of `kind` (and `nic_GBps`) on one network.
ClusterSpec two_hosts(const std::string& kind, int nics, double nic_GBps) {
  ClusterSpec s;
  s.nodes = 2;
  s.gpus_per_node = 8;
  s.nics_per_node = nics;
  s.nic_GBps = nic_GBps;
  s.network = ClusterNetwork::single;
  s.nic_link_layer = kind;
  return s;
}

// NCCL's plan of an all-reduce of `bytes` over every GPU of both hosts, on Intel CPUs.
Plan plan_both(const Topology& t, double bytes, PlanOptions o = {}) {
  o.cpu_vendor = "intel";
  std::vector<std::size_t> gpus;
  for (int h = 0; h < 2; ++h) {
    for (std::size_t g : host_gpus(t, h)) gpus.push_back(g);
  }
  return make_plan(t, gpus, bytes, o);
}

}  // namespace

// EFA and Slingshot go through aws-ofi-nccl, which (src/platform-aws.cpp, nccl_ofi_net.cpp at
// 2daf7d30) reports 75 us of latency for EFA on p4d and p5 and by default, sets NCCL_BUFFSIZE to
// 8 MiB and NCCL_P2P_NET_CHUNKSIZE to 512 KiB where GPUDirect RDMA is on, and NCCL_PROTO=simple
// where it is off. NCCL adds the latency to each step between hosts when it chooses (twice with
// Simple): two HGX nodes' ring all-reduce crosses hosts 2 x (2 - 1) times, +300 us with Simple,
// +150 with LL. The kernels take what they take: with the protocol fixed, LL (whose buffer the
// plugin leaves alone) takes as long over EFA as over InfiniBand.
TEST(NcclNetPlugins, TheOfiPluginSetsWhatItsSourceSays) {
  auto two_nodes = [](const std::string& kind, const std::string& gdr) {
    ClusterSpec s = two_hosts(kind, 4, 12.5);
    s.gpudirect = gdr;
    return generate_cluster(s);
  };
  const Topology ib = two_nodes("infiniband", "true"), efa = two_nodes("efa", "true"), efa_staged = two_nodes("efa", "false"),
                 slingshot = two_nodes("slingshot", "true"), slingshot_staged = two_nodes("slingshot", "false");
  const Plan on_ib = plan_both(ib, 1 << 20), on_efa = plan_both(efa, 1 << 20);
  EXPECT_EQ(on_ib.net.name, "");
  EXPECT_EQ(on_efa.net.name, "aws-ofi-nccl");
  EXPECT_DOUBLE_EQ(on_efa.net.latency_us, 75.0);
  EXPECT_DOUBLE_EQ(on_efa.net.buffer_bytes, 8388608.0);
  EXPECT_DOUBLE_EQ(on_efa.net.p2p_chunk_bytes, 524288.0);
  EXPECT_FALSE(on_efa.net.simple_only);
  EXPECT_NEAR(on_efa.costs.lat[kRing][kSimple] - on_ib.costs.lat[kRing][kSimple], 300.0, 1e-9);
  EXPECT_NEAR(on_efa.costs.lat[kRing][kLL] - on_ib.costs.lat[kRing][kLL], 150.0, 1e-9);
  EXPECT_NEAR(on_efa.kernel_costs.lat[kRing][kSimple], on_ib.kernel_costs.lat[kRing][kSimple], 1e-9);
  for (const std::string bytes : {"8", "65536"}) {
    auto time = [&](const Topology& t) {
      return predict(nccl_request(t, 16, std::stod(bytes), {"cpu=intel", "algorithm=Ring", "protocol=LL"})).time_per_sync_s;
    };
    EXPECT_DOUBLE_EQ(time(efa), time(ib)) << bytes;
  }
  // Without GPUDirect RDMA the plugin allows Simple only; Slingshot's provider keeps NCCL's
  // latency (the plugin's AWS figures are for EFA) and buffers.
  const Plan staged = plan_both(efa_staged, 1024);
  EXPECT_TRUE(staged.net.simple_only);
  EXPECT_EQ(staged.protocol(), kSimple);
  EXPECT_DOUBLE_EQ(staged.net.buffer_bytes, 0.0);
  EXPECT_EQ(plan_both(slingshot_staged, 1024).protocol(), kSimple);
  const Plan on_slingshot = plan_both(slingshot, 1024);
  EXPECT_EQ(on_slingshot.net.name, "aws-ofi-nccl");
  EXPECT_DOUBLE_EQ(on_slingshot.net.latency_us, 0.0);
  EXPECT_EQ(on_slingshot.protocol(), plan_both(ib, 1024).protocol());
  // A point-to-point message over EFA keeps 8 steps of the plugin's 512 KiB in flight.
  const ResultRecord a2a = predict(nccl_request(efa, 16, 64.0 * 1024 * 1024, {"cpu=intel", "collective=alltoall"}));
  EXPECT_TRUE(std::any_of(a2a.notes.begin(), a2a.notes.end(), [](const std::string& n) { return n.find("8 steps of 524.3 kB") != std::string::npos; }))
      << ::testing::PrintToString(a2a.notes);
  // The latency the instance family reports is open where the user does not give it.
  const ResultRecord r = predict(nccl_request(efa, 16, 1 << 20, {"cpu=intel"}));
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) { return n.find("EFA plugin latency: 75 us") != std::string::npos; }))
      << ::testing::PrintToString(r.notes);
}

// GCP's GPUDirect-TCPXO goes through its FasTrak plugin with the environment Google ships for it
// (nccl-env-profile.sh, enforced by its guest config checker): NCCL_ALGO=Ring,Tree,
// NCCL_PROTO=Simple, NCCL_NVLS_ENABLE=0, NCCL_MIN_NCHANNELS=4, NCCL_BUFFSIZE 8 MiB,
// NCCL_P2P_NET_CHUNKSIZE 512 KiB. Two HGX H100 nodes over InfiniBand plan the NVLS tree at 64 MiB
// and LL at 64 KiB; over TCPXO the same nodes plan the tree or the ring, with Simple, at both; a
// user's NCCL_ALGO (algorithm=) still rules, and a one-NIC host gets four channels at least.
TEST(NcclNetPlugins, TcpxoRunsWithTheEnvironmentGoogleShipsForIt) {
  auto two_nodes = [](const std::string& kind, int nics) {
    ClusterSpec s = two_hosts(kind, nics, 25);
    s.gpudirect = "true";
    s.nvlink_sharp = "true";
    return generate_cluster(s);
  };
  const Topology ib = two_nodes("infiniband", 8), tcpxo = two_nodes("tcpxo", 8);
  const double big = 64.0 * 1024 * 1024;
  EXPECT_EQ(plan_both(ib, big).algorithm(), kNvlsTree);
  EXPECT_NE(plan_both(ib, 65536).protocol(), kSimple);
  for (const double bytes : {65536.0, big}) {
    const Plan p = plan_both(tcpxo, bytes);
    EXPECT_EQ(p.net.name, "FasTrak");
    EXPECT_TRUE(p.algorithm() == kTree || p.algorithm() == kRing) << p.algorithm();
    EXPECT_EQ(p.protocol(), kSimple);
    EXPECT_FALSE(p.comm.nvls_support);
    EXPECT_DOUBLE_EQ(p.net.buffer_bytes, 8388608.0);
    EXPECT_DOUBLE_EQ(p.net.p2p_chunk_bytes, 524288.0);
  }
  PlanOptions ring;
  ring.forced_algorithm = kRing;
  EXPECT_EQ(plan_both(tcpxo, big, ring).algorithm(), kRing);
  PlanOptions nvls;
  nvls.nvls = true;
  nvls.forced_algorithm = kNvlsTree;
  EXPECT_EQ(plan_both(tcpxo, big, nvls).algorithm(), kNvlsTree);
  EXPECT_GE(plan_both(two_nodes("tcpxo", 1), big).comm.channels, 4);
  // GPUDirect by design: a tcpxo NIC whose GPUDirect the spec leaves open has it.
  ClusterSpec open;
  open.nic_link_layer = "tcpxo";
  EXPECT_EQ(cluster_facts(open).nic.gpudirect, std::optional<bool>(true));
  open.nic_link_layer = "ethernet";
  EXPECT_FALSE(cluster_facts(open).nic.gpudirect.has_value());
  const ResultRecord r = predict(nccl_request(tcpxo, 16, big, {"cpu=intel"}));
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(),
                          [](const std::string& n) { return n.find("through FasTrak") != std::string::npos && n.find("NCCL_ALGO=Ring,Tree") != std::string::npos; }))
      << ::testing::PrintToString(r.notes);
}

// CollNet takes a plugin with NCCL's CollNet API (the SHARP plugin beside NCCL's own InfiniBand
// transport). aws-ofi-nccl offers the network API alone (NCCL logs "NET/Plugin: Failed to find
// ncclCollNetPlugin symbol" with it), so NCCL_COLLNET_ENABLE=1 leaves EFA and Slingshot runs on
// NCCL's own algorithms, while InfiniBand NICs whose switches reduce plan CollNet.
TEST(NcclNetPlugins, CollNetNeedsAPluginWithItsApi) {
  auto two_nodes = [](const std::string& kind) {
    ClusterSpec s = two_hosts(kind, 4, 25);
    s.nic_sharp = "true";
    s.gpudirect = "true";
    return generate_cluster(s);
  };
  auto plan_of = [](const Topology& t) {
    PlanOptions o;
    o.collnet = true;
    return plan_both(t, 256.0 * 1024 * 1024, o);
  };
  const Plan ib = plan_of(two_nodes("infiniband"));
  EXPECT_TRUE(ib.net.collnet);
  EXPECT_TRUE(ib.comm.collnet_enable);
  for (const char* kind : {"efa", "slingshot", "tcpxo"}) {
    const Plan p = plan_of(two_nodes(kind));
    EXPECT_FALSE(p.net.collnet) << kind;
    EXPECT_FALSE(p.comm.collnet_enable) << kind;
    EXPECT_NE(p.algorithm(), kCollnetChain) << kind;
    EXPECT_NE(p.algorithm(), kCollnetDirect) << kind;
  }
}
