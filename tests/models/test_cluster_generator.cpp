// gradsync topology generate (issue 16): clusters from a few parameters. Counts, where the
// routes go (inside a node over its fabric, between nodes over NICs and the network, across
// rails through the core), the fat-tree's uplinks, and bad parameters named.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "models/topology/cluster_generator.h"
#include "models/topology/node_cluster.h"
#include "models/support/format.h"
#include "models/support/error.h"
#include "models/support/json_input.h"
#include "models/topology/topology_io.h"

using namespace gradsync::models;

namespace {

std::set<std::string> crossed(const Topology& t, const std::string& from, const std::string& to) {
  std::set<std::string> nodes;
  for (const Hop& h : t.route(t.require(from, "test"), t.require(to, "test"))) {
    const Link& l = t.links()[h.link];
    nodes.insert(t.node(l.a).id);
    nodes.insert(t.node(l.b).id);
  }
  return nodes;
}

std::string error_of(const ClusterSpec& s) {
  try {
    generate_cluster(s);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ClusterGenerator, RailClusterWithNvswitch) {
  ClusterSpec s;
  s.nodes = 4;
  s.gpus_per_node = 8;
  s.nodes_per_leaf = 2;
  const Topology t = generate_cluster(s);
  EXPECT_EQ(t.gpus().size(), 32u);
  EXPECT_EQ(t.nodes_of_kind(NodeKind::nic).size(), 32u);
  EXPECT_EQ(t.nodes_of_kind(NodeKind::nvswitch).size(), 4u);
  EXPECT_EQ(t.nodes_of_kind(NodeKind::net_switch).size(), 8u * 2 + 1);  // 8 rails x 2 leaves, one core
  // Inside a node: over the NVSwitch only.
  EXPECT_EQ(crossed(t, "n0-gpu0", "n0-gpu5"), (std::set<std::string>{"n0-gpu0", "n0-nvswitch", "n0-gpu5"}));
  // Same rail, same leaf: NIC 0 to NIC 0 through rail 0's leaf, not the core.
  const auto same_rail = crossed(t, "n0-gpu0", "n1-gpu0");
  EXPECT_TRUE(same_rail.count("n0-nic0") && same_rail.count("rail0-leaf0") && same_rail.count("n1-nic0"));
  EXPECT_FALSE(same_rail.count("core"));
  // Same rail, other leaf: through the core. Other rail: through the core too.
  EXPECT_TRUE(crossed(t, "n0-gpu0", "n3-gpu0").count("core"));
  EXPECT_TRUE(crossed(t, "n0-gpu0", "n1-gpu2").count("core"));
  // Rail leaves' uplinks: 2 nodes x 1 NIC x 50 GB/s at 1:1.
  for (const Link& l : t.links()) {
    if (t.node(l.b).id == "core") {
      EXPECT_DOUBLE_EQ(l.bandwidth_Bps, 100e9) << t.node(l.a).id;
    }
  }
}

TEST(ClusterGenerator, FatTreeUplinksFollowTheOversubscription) {
  ClusterSpec s;
  s.nodes = 5;  // the last leaf holds one node
  s.gpus_per_node = 4;
  s.intra = IntraFabric::pcie;
  s.nics_per_node = 2;
  s.nic_GBps = 25;
  s.network = ClusterNetwork::fat_tree;
  s.oversubscription = 2;
  s.nodes_per_leaf = 2;
  s.gpus_per_pcie_switch = 2;
  const Topology t = generate_cluster(s);
  EXPECT_EQ(t.gpus().size(), 20u);
  std::vector<double> uplinks;
  for (const Link& l : t.links()) {
    if (t.node(l.b).id == "core") uplinks.push_back(l.bandwidth_Bps);
  }
  // 2 nodes x 2 NICs x 25 GB/s / 2, and 1 node's worth under the last leaf.
  EXPECT_EQ(uplinks, (std::vector<double>{50e9, 50e9, 25e9}));
  // PCIe inside a node: one switch for GPUs 0 and 1, the root complex between switches.
  EXPECT_EQ(crossed(t, "n0-gpu0", "n0-gpu1"), (std::set<std::string>{"n0-gpu0", "n0-pcie0", "n0-gpu1"}));
  EXPECT_TRUE(crossed(t, "n0-gpu0", "n0-gpu2").count("n0-rc"));
  // Between leaves: NIC, leaf, core, leaf, NIC.
  const auto across = crossed(t, "n0-gpu0", "n4-gpu0");
  EXPECT_TRUE(across.count("leaf0") && across.count("core") && across.count("leaf2")) << across.size();
}

TEST(ClusterGenerator, NvlinkMeshAndSingleSwitch) {
  ClusterSpec s;
  s.nodes = 2;
  s.gpus_per_node = 4;
  s.intra = IntraFabric::nvlink;
  s.nics_per_node = 1;
  s.network = ClusterNetwork::single;
  const Topology t = generate_cluster(s);
  // A direct NVLink between every pair in a node: 6 per node; 18 links of 25 GB/s over 3 peers.
  int nvlinks = 0;
  for (const Link& l : t.links()) {
    if (l.label == "nvlink") {
      ++nvlinks;
      EXPECT_DOUBLE_EQ(l.bandwidth_Bps, 150e9);
    }
  }
  EXPECT_EQ(nvlinks, 12);
  EXPECT_EQ(crossed(t, "n1-gpu1", "n1-gpu3"), (std::set<std::string>{"n1-gpu1", "n1-gpu3"}));
  EXPECT_TRUE(crossed(t, "n0-gpu1", "n1-gpu3").count("net-switch"));
}

// A NIC on a PCIe switch beside its GPU (the default) or on the CPU's root complex (nic_attach
// cpu): there a GPU's traffic to the network crosses the host bridge.
TEST(ClusterGenerator, ANicSitsOnItsGpusSwitchOrOnTheCpu) {
  ClusterSpec s{.nodes = 2, .gpus_per_node = 2, .nics_per_node = 2, .network = ClusterNetwork::single};
  const std::set<std::string> beside = crossed(generate_cluster(s), "n0-gpu0", "n1-gpu0");
  EXPECT_TRUE(beside.count("n0-nic0") && beside.count("n0-pcie0")) << ::testing::PrintToString(beside);
  EXPECT_FALSE(beside.count("n0-rc"));
  s.nic_attach = "cpu";
  const Topology t = generate_cluster(s);
  const std::set<std::string> across = crossed(t, "n0-gpu0", "n1-gpu0");
  EXPECT_TRUE(across.count("n0-rc") && across.count("n0-pcie0")) << ::testing::PrintToString(across);
  // Read back from the generated form as written.
  const ordered_json form = cluster_spec_to_json(s);
  EXPECT_EQ(form["generate"]["nic_attach"], "cpu");
}

// A GPU that carries its own CPU (GH200): each GPU on its Grace by NVLink-C2C, the NICs on those
// CPUs' root ports (nic_attach auto), no PCIe switch; a NIC on a switch is refused.
TEST(ClusterGenerator, AGraceHopperGpuSitsOnItsOwnCpu) {
  ClusterSpec s{.nodes = 2, .gpus_per_node = 4, .intra = IntraFabric::nvlink, .nics_per_node = 4, .network = ClusterNetwork::single};
  s.gpu = "GH200";
  const Topology t = generate_cluster(s);
  int c2c = 0;
  for (const Link& l : t.links()) {
    if (l.label != "nvlink-c2c") continue;
    ++c2c;
    EXPECT_EQ(t.node(l.a).kind, NodeKind::gpu);
    EXPECT_EQ(t.node(l.b).kind, NodeKind::root_complex);
    EXPECT_DOUBLE_EQ(l.bandwidth_Bps, 450e9);
    EXPECT_EQ(t.node(l.a).id.substr(t.node(l.a).id.find("-gpu") + 4), t.node(l.b).id.substr(t.node(l.b).id.find("-cpu") + 4));
  }
  EXPECT_EQ(c2c, 8);
  for (std::size_t i = 0; i < t.node_count(); ++i) EXPECT_NE(t.node(i).kind, NodeKind::pcie_switch) << t.node(i).id;
  // GPU k leaves its host by NIC k, over its own CPU.
  const std::set<std::string> out = crossed(t, "n0-gpu2", "n1-gpu2");
  EXPECT_TRUE(out.count("n0-cpu2") && out.count("n0-nic2")) << ::testing::PrintToString(out);
  EXPECT_EQ(nic_attach_of(s), "cpu");
  s.nic_attach = "switch";
  EXPECT_NE(error_of(s).find("--nic-attach switch: a GH200 reaches its NICs through its own CPU"), std::string::npos) << error_of(s);
  s.gpu = "H100";
  EXPECT_EQ(nic_attach_of(ClusterSpec{}), "switch");
}

TEST(ClusterGenerator, BadParametersAreNamed) {
  ClusterSpec s;
  s.nodes = 0;
  EXPECT_NE(error_of(s).find("--nodes 0: expected an integer of at least 1"), std::string::npos) << error_of(s);
  s = ClusterSpec{};
  s.oversubscription = 0.5;
  EXPECT_NE(error_of(s).find("--oversubscription 0.5"), std::string::npos) << error_of(s);
  s = ClusterSpec{};
  s.nic_GBps = -1;
  EXPECT_NE(error_of(s).find("--nic-GBps -1"), std::string::npos) << error_of(s);
  s = ClusterSpec{};
  s.nic_attach = "socket";
  EXPECT_NE(error_of(s).find("--nic-attach socket: expected auto, switch, cpu"), std::string::npos) << error_of(s);
  s = ClusterSpec{};
  s.ports_per_nic = 0;
  EXPECT_NE(error_of(s).find("--ports-per-nic 0: expected an integer of at least 1"), std::string::npos) << error_of(s);
  s.ports_per_nic = 9;
  EXPECT_NE(error_of(s).find("--ports-per-nic 9: expected at most 8"), std::string::npos) << error_of(s);
  // Every link within what a topology file holds (the graph form it is written as reads it back).
  s = ClusterSpec{};
  s.nic_GBps = 4e20;
  EXPECT_NE(error_of(s).find("--nic-GBps 4e+20: each NIC's link would carry 4e+20 GB/s; expected a bandwidth in GB/s between 1e-06"),
            std::string::npos) << error_of(s);
  s.nic_GBps = 2e5;
  s.ports_per_nic = 8;
  EXPECT_NE(error_of(s).find("each NIC's link (its 8 ports) would carry 1.6e+06 GB/s"), std::string::npos) << error_of(s);
  s = ClusterSpec{};
  s.nodes = 64;
  s.network = ClusterNetwork::fat_tree;
  s.oversubscription = 1e12;
  EXPECT_NE(error_of(s).find("--oversubscription 1e+12: a leaf's uplink (256 NICs' links / the oversubscription) would carry"),
            std::string::npos) << error_of(s);
  s.oversubscription = 1e6;  // 256 x 50 GB/s / 1e6: 0.0128 GB/s, a slow link but a link
  EXPECT_EQ(error_of(s), "");
  s = ClusterSpec{};
  s.network_latency_us = 1e10;
  EXPECT_NE(error_of(s).find("--network-latency-us 1e+10: expected a latency in us of at most 1e+09"), std::string::npos) << error_of(s);
  EXPECT_THROW(intra_fabric_from("infiniband"), InputError);
  EXPECT_THROW(cluster_network_from("torus"), InputError);
}

TEST(ClusterGenerator, RoutesOnALargeClusterCostWhatBoostsDijkstraFinds) {
  // 3,461 nodes: routes from a search from both ends (graphs over 2,048 nodes) against the
  // whole shortest-path tree from the source (Boost's Dijkstra), which a source asked for
  // more than nodes / 256 routes keeps: the same cost for every pair.
  ClusterSpec s;
  s.nodes = 128;
  s.network = ClusterNetwork::fat_tree;
  s.oversubscription = 2;
  const Topology searched = generate_cluster(s), from_tree = generate_cluster(s);
  const auto gpus = searched.gpus();
  const auto cost = [](const Topology& t, const Route& r) {
    double c = 0;
    for (const Hop& h : r) c += t.links()[h.link].latency_s + 1048576.0 / t.links()[h.link].bandwidth_Bps;
    return c;
  };
  int compared = 0;
  for (std::size_t a : {gpus[0], gpus[13], gpus[700]}) {
    std::vector<std::size_t> destinations;
    for (std::size_t i = 1; i < gpus.size(); i += 97) destinations.push_back(gpus[(i + a) % gpus.size()]);
    destinations.push_back(searched.host_memories().back());
    // The tree first: more routes from a than the threshold.
    for (std::size_t k = 0; k < 20; ++k) from_tree.route(a, gpus[(a + 3 * k + 1) % gpus.size()]);
    for (std::size_t b : destinations) {
      if (b == a) continue;
      const Route& r = searched.route(a, b);
      ASSERT_FALSE(r.empty());
      // Connected hop to hop.
      std::size_t at = a;
      for (const Hop& h : r) {
        const Link& l = searched.links()[h.link];
        ASSERT_EQ(h.forward ? l.a : l.b, at);
        at = h.forward ? l.b : l.a;
      }
      EXPECT_EQ(at, b);
      EXPECT_NEAR(cost(searched, r), cost(from_tree, from_tree.route(a, b)), 1e-15) << searched.node(a).id << "->" << searched.node(b).id;
      ++compared;
    }
  }
  EXPECT_GT(compared, 20);
}

// The facts NCCL plans with travel on the nodes: stated ones are written and read back,
// auto ones stay unset; a fact on a kind of node it does not belong to is refused.
TEST(ClusterGenerator, NodeFactsAreWrittenAndReadBack) {
  ClusterSpec s;
  s.nodes = 2;
  s.gpus_per_node = 2;
  s.nics_per_node = 2;
  s.gpu = "A100";
  s.cpu = "amd";
  s.gpudirect = "false";
  s.nvlink_sharp = "true";
  s.vm = "true";
  s.adaptive_routing = "false";
  const Topology t = generate_cluster(s);
  const auto back = load_topology(JsonView::wrap(topology_to_graph_json(t), "round-trip.json")).topology;
  for (const Topology* x : {&t, &back}) {
    EXPECT_EQ(x->node(x->require("n0-gpu1", "test")).facts.gpu_model, "A100");
    EXPECT_EQ(x->node(x->require("n1-rc", "test")).facts.cpu_vendor, "amd");
    EXPECT_EQ(x->node(x->require("n1-rc", "test")).facts.vm, true);
    const NodeFacts& nic = x->node(x->require("n1-nic0", "test")).facts;
    EXPECT_EQ(nic.link_layer, "infiniband");
    EXPECT_EQ(nic.gpudirect, false);
    EXPECT_FALSE(nic.sharp);  // auto: not stated
    EXPECT_EQ(nic.adaptive_routing, false);
    EXPECT_EQ(x->node(x->require("n0-nvswitch", "test")).facts.sharp, true);
  }
  // The A100's NVLink: 12 links of 25 GB/s to the NVSwitch; its PCIe Gen4 x16 (NCCL's 24 GB/s).
  for (const Link& l : t.links()) {
    if (t.node(l.a).id == "n0-gpu0" && t.node(l.b).id == "n0-nvswitch") {
      EXPECT_DOUBLE_EQ(l.bandwidth_Bps, 300e9);
    }
    if (t.node(l.a).id == "n0-gpu0" && t.node(l.b).id == "n0-pcie0") {
      EXPECT_DOUBLE_EQ(l.bandwidth_Bps, 24e9);
    }
  }
  s.gpu = "H1000";
  EXPECT_NE(error_of(s).find("--gpu H1000: expected TITAN X,"), std::string::npos) << error_of(s);
}

// topology generate --node: each NIC where nvidia-smi topo -m's NIC columns put it. In this PCIe
// box NIC0 is PIX to GPU0 and GPU1 (their switch) and NIC1 to GPU2 and GPU3; on a rail network
// NIC k of every node is on rail k, and the routes between nodes leave through the NIC beside
// the GPU.
// A node whose NICs sit on CPU root ports (PHB to one GPU each, as ALCF Polaris's topo table has
// them): no NIC is PIX or PXB to a GPU, so every one is the network's, and the notes say so; a
// GPU reaches its NIC across the host bridge.
TEST(ClusterGenerator, NodeWhoseNicsSitOnTheCpuTakesEveryNic) {
  ClusterSpec s{.nodes = 2, .network = ClusterNetwork::single, .gpu = "A100-SXM4"};
  const NodeCluster c = cluster_from_node({std::string(GRADSYNC_TEST_FIXTURES) + "/topo-4gpu-nvlink-2nic-phb.txt"}, s);
  EXPECT_EQ(c.topology.nodes_of_kind(NodeKind::nic).size(), 4u);
  const std::string notes = join(c.notes, "\n");
  EXPECT_NE(notes.find("cxi0, cxi1 (every NIC)"), std::string::npos) << notes;
  EXPECT_EQ(notes.find("(PIX or PXB to a GPU)"), std::string::npos) << notes;
  const std::set<std::string> across = crossed(c.topology, "n0-gpu1", "n1-gpu1");
  EXPECT_TRUE(across.count("n0-cxi0") && across.count("n1-cxi0")) << ::testing::PrintToString(across);
  EXPECT_TRUE(std::any_of(across.begin(), across.end(), [](const std::string& id) { return id.rfind("n0-root", 0) == 0; }))
      << ::testing::PrintToString(across);
}

TEST(ClusterGenerator, NodeFromTopoMatrixPlacesEachNicOnItsSwitch) {
  ClusterSpec s;
  s.nodes = 3;
  s.network = ClusterNetwork::rail;
  s.gpu = "RTX 4090";
  const NodeCluster c = cluster_from_node({std::string(GRADSYNC_TEST_FIXTURES) + "/topo-4gpu-2switch-2nic.txt"}, s);
  const Topology& t = c.topology;
  EXPECT_EQ(t.gpus().size(), 12u);
  EXPECT_EQ(t.nodes_of_kind(NodeKind::nic).size(), 6u);
  EXPECT_EQ(t.nodes_of_kind(NodeKind::net_switch).size(), 3u);  // two rails' leaves and the core
  // Each NIC's PCIe link goes to the switch of the GPUs it is PIX to.
  const auto pcie_neighbour = [&](const std::string& id) {
    const std::size_t u = t.require(id, "test");
    for (std::size_t li : t.incident_links(u)) {
      const Link& l = t.links()[li];
      const std::size_t v = l.a == u ? l.b : l.a;
      if (t.node(v).kind == NodeKind::pcie_switch) return t.node(v).id;
    }
    return std::string("none");
  };
  EXPECT_NE(pcie_neighbour("n1-NIC0"), "none");
  EXPECT_EQ(pcie_neighbour("n1-NIC0"), pcie_neighbour("n1-gpu0"));
  EXPECT_EQ(pcie_neighbour("n1-NIC0"), pcie_neighbour("n1-gpu1"));
  EXPECT_EQ(pcie_neighbour("n1-NIC1"), pcie_neighbour("n1-gpu3"));
  EXPECT_NE(pcie_neighbour("n1-NIC0"), pcie_neighbour("n1-NIC1"));
  const auto across = crossed(t, "n0-gpu3", "n2-gpu3");
  EXPECT_TRUE(across.count("n0-NIC1") && across.count("n2-NIC1") && across.count("rail1-leaf0")) << join(std::vector<std::string>(across.begin(), across.end()));
  EXPECT_FALSE(across.count("core"));
  for (const Link& l : t.links()) {
    if (t.node(l.a).kind == NodeKind::nic || t.node(l.b).kind == NodeKind::nic) {
      const bool network = t.node(l.a).kind == NodeKind::net_switch || t.node(l.b).kind == NodeKind::net_switch;
      EXPECT_DOUBLE_EQ(l.bandwidth_Bps, network ? 50e9 : 24e9);  // 400 Gb/s; the 4090's PCIe Gen4 x16 at NCCL's rate
    }
  }
  EXPECT_EQ(t.node(t.require("n2-NIC0", "test")).facts.link_layer, "infiniband");
}
