#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/support/error.h"
#include "models/executors/formula_executor.h"
#include "models/support/json_input.h"
#include "models/topology/cluster_generator.h"
#include "models/topology/ring_order.h"
#include "models/topology/topology_io.h"
#include "support/input_error.h"

using namespace gradsync::models;

namespace {

Topology load_file(const std::string& name) {
  return load_topology_file(std::string(GRADSYNC_TOPOLOGIES) + "/" + name).topology;
}

Topology load_json(const json& doc) { return load_topology(JsonView::wrap(doc, "t.json")).topology; }

std::vector<std::size_t> ids(const Topology& t, const std::vector<std::string>& names) {
  std::vector<std::size_t> out;
  for (const auto& n : names) out.push_back(t.find(n).value());
  return out;
}

std::vector<std::size_t> permuted(const std::vector<std::size_t>& nodes, const std::vector<int>& order) {
  std::vector<std::size_t> out;
  for (int p : order) out.push_back(nodes.at(static_cast<std::size_t>(p)));
  return out;
}

bool is_permutation_of_positions(const std::vector<int>& order, std::size_t n) {
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != static_cast<int>(i)) return false;
  }
  return sorted.size() == n;
}

using test_errors::error_of;

// How many ring flows cross link `link` in each direction.
std::pair<int, int> crossings(const Topology& t, const std::vector<std::size_t>& ring, std::size_t link) {
  std::pair<int, int> c{0, 0};
  for (std::size_t i = 0; i < ring.size(); ++i) {
    for (const Hop& h : t.route(ring[i], ring[(i + 1) % ring.size()])) {
      if (h.link == link) ++(h.forward ? c.first : c.second);
    }
  }
  return c;
}

json link(const std::string& a, const std::string& b, double GBps, const std::string& label = "") {
  json l = {{"a", a}, {"b", b}, {"bandwidth_GBps", GBps}, {"latency_us", 1.0}};
  if (!label.empty()) l["label"] = label;
  return l;
}

// A two-level tree: `switches` PCIe switches of `per_switch` GPUs (12.5 GB/s) under one
// root (uplinks `uplink_GBps`). GPUs are declared switch by switch.
json two_level_tree(int switches, int per_switch, double uplink_GBps) {
  json doc = {{"name", "tree"}, {"nodes", json::array()}, {"links", json::array()}};
  doc["nodes"].push_back({{"id", "root"}, {"kind", "root_complex"}});
  for (int s = 0; s < switches; ++s) {
    const std::string sw = "sw" + std::to_string(s);
    doc["nodes"].push_back({{"id", sw}, {"kind", "pcie_switch"}});
    doc["links"].push_back(link(sw, "root", uplink_GBps));
    for (int g = 0; g < per_switch; ++g) {
      const std::string gpu = "gpu" + std::to_string(s * per_switch + g);
      doc["nodes"].push_back({{"id", gpu}, {"kind", "gpu"}});
      doc["links"].push_back(link(gpu, sw, 12.5));
    }
  }
  return doc;
}

// `machines` DGX-1 (V100) boxes, NVLink hybrid cube mesh inside, joined by one NIC each
// (on cpu0, 10 GB/s) and a network switch.
json dgx1_cluster(int machines) {
  json doc = {{"name", "dgx1-cluster"}, {"nodes", json::array()}, {"links", json::array()}};
  doc["nodes"].push_back({{"id", "net"}, {"kind", "net_switch"}});
  const int nvlink[][3] = {{0, 1, 25}, {0, 2, 25}, {0, 3, 50}, {0, 4, 50}, {1, 2, 50}, {1, 3, 25},
                           {1, 5, 50}, {2, 3, 50}, {2, 6, 25}, {3, 7, 25}, {4, 5, 25}, {4, 6, 25},
                           {4, 7, 50}, {5, 6, 50}, {5, 7, 25}, {6, 7, 50}};
  for (int m = 0; m < machines; ++m) {
    const std::string p = "m" + std::to_string(m) + "-";
    for (int g = 0; g < 8; ++g) doc["nodes"].push_back({{"id", p + "gpu" + std::to_string(g)}, {"kind", "gpu"}});
    for (int s = 0; s < 4; ++s) doc["nodes"].push_back({{"id", p + "pcie" + std::to_string(s)}, {"kind", "pcie_switch"}});
    for (int c = 0; c < 2; ++c) doc["nodes"].push_back({{"id", p + "cpu" + std::to_string(c)}, {"kind", "cpu_socket"}});
    doc["nodes"].push_back({{"id", p + "nic"}, {"kind", "nic"}});
    for (const auto& l : nvlink) {
      doc["links"].push_back(link(p + "gpu" + std::to_string(l[0]), p + "gpu" + std::to_string(l[1]), l[2], "nvlink"));
    }
    for (int g = 0; g < 8; ++g) {
      doc["links"].push_back(link(p + "gpu" + std::to_string(g), p + "pcie" + std::to_string(g / 2), 12.0, "pcie"));
    }
    for (int s = 0; s < 4; ++s) {
      doc["links"].push_back(link(p + "pcie" + std::to_string(s), p + "cpu" + std::to_string(s / 2), 12.0, "pcie"));
    }
    doc["links"].push_back(link(p + "cpu0", p + "cpu1", 19.2, "qpi"));
    doc["links"].push_back(link(p + "cpu0", p + "nic", 12.0, "pcie"));
    doc["links"].push_back(link(p + "nic", "net", 10.0, "infiniband"));
  }
  return doc;
}

std::set<std::set<std::string>> group_ids(const Topology& t, const std::vector<std::size_t>& nodes,
                                          const std::vector<std::vector<int>>& groups) {
  std::set<std::set<std::string>> out;
  for (const auto& g : groups) {
    std::set<std::string> s;
    for (int p : g) s.insert(t.node(nodes.at(static_cast<std::size_t>(p))).id);
    out.insert(s);
  }
  return out;
}

using Groups = std::vector<std::vector<int>>;

}  // namespace

// --- evaluate_ring -------------------------------------------------------------

TEST(RingOrder, SourceAOrderAcrossSwitchesOnceHasTheUplinkBandwidth) {
  const Topology t = load_file("source-a-titanx-4gpu.json");
  const RingEvaluation good = evaluate_ring(t, ids(t, {"gpu0", "gpu1", "gpu2", "gpu3"}));
  const RingEvaluation bad = evaluate_ring(t, ids(t, {"gpu0", "gpu2", "gpu1", "gpu3"}));
  EXPECT_DOUBLE_EQ(good.bottleneck_Bps, 4.46e9);
  EXPECT_DOUBLE_EQ(bad.bottleneck_Bps, 2.23e9);  // each uplink crossed twice per direction
  EXPECT_LT(good.link_crossings, bad.link_crossings);
  EXPECT_TRUE(better_ring(good, bad));
  EXPECT_FALSE(better_ring(bad, good));
  EXPECT_FALSE(better_ring(good, good));
}

TEST(RingOrder, EvaluateCountsHopsAndHandlesTinyRings) {
  const Topology t = load_file("pcie-8gpu-2switch.json");
  // gpu0 -> gpu1 -> gpu0: two hops each way, nothing shared in one direction.
  const RingEvaluation two = evaluate_ring(t, ids(t, {"gpu0", "gpu1"}));
  EXPECT_DOUBLE_EQ(two.bottleneck_Bps, 12.5e9);
  EXPECT_EQ(two.link_crossings, 4u);
  const RingEvaluation one = evaluate_ring(t, ids(t, {"gpu0"}));
  EXPECT_TRUE(std::isinf(one.bottleneck_Bps));
  EXPECT_EQ(one.link_crossings, 0u);
  EXPECT_TRUE(std::isinf(evaluate_ring(t, {}).bottleneck_Bps));
}

// --- best_ring_order -----------------------------------------------------------

TEST(RingOrder, BestOrderOnScrambledSourceACrossesEachUplinkOnce) {
  const Topology t = load_file("source-a-titanx-4gpu.json");
  const auto nodes = ids(t, {"gpu0", "gpu2", "gpu1", "gpu3"});
  const std::vector<int> order = best_ring_order(t, nodes);
  ASSERT_TRUE(is_permutation_of_positions(order, 4));
  EXPECT_EQ(order[0], 0);
  EXPECT_DOUBLE_EQ(evaluate_ring(t, permuted(nodes, order)).bottleneck_Bps, 4.46e9);
  // gpu0, gpu2(1), gpu3(3), gpu1(2): the lexicographically smallest of the four best rings.
  EXPECT_EQ(order, (std::vector<int>{0, 1, 3, 2}));
}

TEST(RingOrder, BestOrderOnPcie8Gpu2SwitchCrossesUplinksOncePerDirection) {
  const Topology t = load_file("pcie-8gpu-2switch.json");
  const auto nodes = ids(t, {"gpu0", "gpu4", "gpu1", "gpu5", "gpu2", "gpu6", "gpu3", "gpu7"});
  const RingEvaluation scrambled = evaluate_ring(t, nodes);
  EXPECT_DOUBLE_EQ(scrambled.bottleneck_Bps, 12.5e9 / 4);

  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> order = best_ring_order(t, nodes);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ timing ] exhaustive best_ring_order, n = 8 (pcie-8gpu-2switch): %.4f s\n", seconds);

  ASSERT_TRUE(is_permutation_of_positions(order, 8));
  EXPECT_EQ(order[0], 0);
  const auto ring = permuted(nodes, order);
  const RingEvaluation best = evaluate_ring(t, ring);
  EXPECT_DOUBLE_EQ(best.bottleneck_Bps, 12.5e9);
  EXPECT_TRUE(better_ring(best, scrambled));
  for (const std::string uplink_of : {"switch0", "switch1"}) {
    const std::size_t sw = t.find(uplink_of).value(), rc = t.find("rc0").value();
    std::size_t uplink = t.links().size();
    for (std::size_t l = 0; l < t.links().size(); ++l) {
      const Link& x = t.links()[l];
      if ((x.a == sw && x.b == rc) || (x.a == rc && x.b == sw)) uplink = l;
    }
    ASSERT_LT(uplink, t.links().size());
    EXPECT_EQ(crossings(t, ring, uplink), (std::pair<int, int>{1, 1})) << uplink_of;
  }
  // Four GPUs of one switch, then the four of the other: 2 hops within, 4 across.
  EXPECT_EQ(best.link_crossings, 6u * 2 + 2u * 4);
}

TEST(RingOrder, BestOrderOnDgx1UsesOnlyNvlink) {
  const Topology t = load_file("dgx1-v100-hybrid-cube-mesh.json");
  const auto nodes = t.gpus();
  ASSERT_EQ(nodes.size(), 8u);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> order = best_ring_order(t, nodes);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ timing ] exhaustive best_ring_order, n = 8 (DGX-1): %.4f s\n", seconds);

  ASSERT_TRUE(is_permutation_of_positions(order, 8));
  EXPECT_EQ(order[0], 0);
  const auto ring = permuted(nodes, order);
  for (std::size_t i = 0; i < ring.size(); ++i) {
    const Route& r = t.route(ring[i], ring[(i + 1) % ring.size()]);
    ASSERT_EQ(r.size(), 1u) << t.node(ring[i]).id << " -> " << t.node(ring[(i + 1) % ring.size()]).id;
    EXPECT_EQ(t.links()[r[0].link].label.rfind("nvlink", 0), 0u);
  }
  // The double NVLinks (50 GB/s) close a Hamiltonian cycle: 0-3-2-1-5-6-7-4.
  const RingEvaluation best = evaluate_ring(t, ring);
  EXPECT_DOUBLE_EQ(best.bottleneck_Bps, 50e9);
  EXPECT_EQ(best.link_crossings, 8u);
}

TEST(RingOrder, TreeOrderKeepsSwitchesTogether) {
  const Topology t = load_file("pcie-8gpu-2switch.json");
  const auto nodes = ids(t, {"gpu5", "gpu0", "gpu6", "gpu1", "gpu7", "gpu2", "gpu4", "gpu3"});
  // From gpu5: its switch's GPUs by node index (gpu4, gpu6, gpu7), then over the root
  // complex to switch0's GPUs (gpu0..gpu3).
  EXPECT_EQ(tree_order(t, nodes), (std::vector<int>{0, 6, 2, 4, 1, 3, 5, 7}));
}

TEST(RingOrder, TwoOptImprovesOnTheTreeOrderForTwoDgx1) {
  // 16 ranks: beyond the exhaustive search, so tree order + 2-opt.
  const Topology t = load_json(dgx1_cluster(2));
  const auto nodes = t.gpus();
  ASSERT_EQ(nodes.size(), 16u);
  const RingEvaluation tree = evaluate_ring(t, permuted(nodes, tree_order(t, nodes)));
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> order = best_ring_order(t, nodes);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(is_permutation_of_positions(order, 16));
  EXPECT_EQ(order[0], 0);
  const RingEvaluation best = evaluate_ring(t, permuted(nodes, order));
  std::printf("[ timing ] 2-opt best_ring_order, n = 16 (2 x DGX-1): %.4f s; tree %.2f GB/s %zu hops -> %.2f GB/s %zu hops\n",
              seconds, tree.bottleneck_Bps / 1e9, tree.link_crossings, best.bottleneck_Bps / 1e9, best.link_crossings);
  EXPECT_TRUE(better_ring(best, tree));
  // The network link carries one flow per direction: the ring leaves each machine once.
  EXPECT_DOUBLE_EQ(best.bottleneck_Bps, 10e9);
}

TEST(RingOrder, TreeOrderFor1024GpusIsFastAndCrossesEachUplinkOnce) {
  const Topology t = load_json(two_level_tree(64, 16, 10.0));
  const auto nodes = t.gpus();
  ASSERT_EQ(nodes.size(), 1024u);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> order = best_ring_order(t, nodes);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ timing ] best_ring_order, n = 1024 (tree order): %.4f s\n", seconds);
  ASSERT_TRUE(is_permutation_of_positions(order, 1024));
  EXPECT_EQ(order[0], 0);
  EXPECT_DOUBLE_EQ(evaluate_ring(t, permuted(nodes, order)).bottleneck_Bps, 10e9);
}

TEST(RingOrder, MidSizeTreeScrambledGetsTheUplinkBandwidth) {
  // 64 ranks given switch-interleaved: the 2-opt path must still return the switch-by-switch ring.
  const Topology t = load_json(two_level_tree(4, 16, 10.0));
  std::vector<std::size_t> nodes;
  for (int g = 0; g < 16; ++g) {
    for (int s = 0; s < 4; ++s) nodes.push_back(t.find("gpu" + std::to_string(s * 16 + g)).value());
  }
  EXPECT_DOUBLE_EQ(evaluate_ring(t, nodes).bottleneck_Bps, 10e9 / 16);
  const std::vector<int> order = best_ring_order(t, nodes);
  ASSERT_TRUE(is_permutation_of_positions(order, 64));
  const RingEvaluation best = evaluate_ring(t, permuted(nodes, order));
  EXPECT_DOUBLE_EQ(best.bottleneck_Bps, 10e9);
  EXPECT_EQ(best.link_crossings, 60u * 2 + 4u * 4);
}

// --- ring_order_from_param -------------------------------------------------------

TEST(RingOrder, ParamGivenAutoAndExplicit) {
  const Topology t = load_file("source-a-titanx-4gpu.json");
  const auto nodes = ids(t, {"gpu0", "gpu2", "gpu1", "gpu3"});
  EXPECT_EQ(ring_order_from_param(t, nodes, "given"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(ring_order_from_param(t, nodes, "auto"), best_ring_order(t, nodes));
  EXPECT_EQ(ring_order_from_param(t, nodes, "2,0,1,3"), (std::vector<int>{2, 0, 1, 3}));
  EXPECT_EQ(ring_order_from_param(t, nodes, " 3, 2,1 ,0 "), (std::vector<int>{3, 2, 1, 0}));
}

TEST(RingOrder, ParamErrorsNameTheValueAndWhatWasExpected) {
  const Topology t = load_file("pcie-8gpu-2switch.json");
  const auto three = ids(t, {"gpu0", "gpu1", "gpu2"});
  auto err = [&](const std::string& v) { return error_of([&] { ring_order_from_param(t, three, v); }); };
  EXPECT_EQ(err("0,1,1"), "--param ring_order=0,1,1: position 1 appears twice; expected a permutation of 0..2");
  EXPECT_EQ(err("0,1,3"), "--param ring_order=0,1,3: position 3 is out of range; expected a permutation of 0..2");
  EXPECT_EQ(err("0,2"), "--param ring_order=0,2: 2 positions for 3 ranks (position 1 is missing); expected a permutation of 0..2");
  EXPECT_EQ(err("0,x,2"), "--param ring_order=0,x,2: \"x\" is not a position; expected a permutation of 0..2");
  EXPECT_EQ(err("0,-1,2"), "--param ring_order=0,-1,2: \"-1\" is not a position; expected a permutation of 0..2");
  EXPECT_EQ(err("0,,1,2"), "--param ring_order=0,,1,2: an empty position; expected a permutation of 0..2, separated by commas");
  EXPECT_EQ(err("0,1,2,0"), "--param ring_order=0,1,2,0: position 0 appears twice; expected a permutation of 0..2");
  EXPECT_EQ(err("99999999999999999999999,1,2"),
            "--param ring_order=99999999999999999999999,1,2: position 99999999999999999999999 is out of range; expected a "
            "permutation of 0..2");
  const std::string typo = err("gven");
  EXPECT_NE(typo.find("--param ring_order=gven: expected auto, given or a comma-separated permutation of the positions 0..2"),
            std::string::npos)
      << typo;
  EXPECT_NE(typo.find("did you mean 'given'"), std::string::npos) << typo;
  EXPECT_NE(err(""), "");
}

// --- group_ranks / groups_by_switch -------------------------------------------------

TEST(Grouping, BySwitchGroupsPositionsByTheirSwitch) {
  const Topology t = load_file("source-a-titanx-4gpu.json");
  const auto natural = ids(t, {"gpu0", "gpu1", "gpu2", "gpu3"});
  EXPECT_EQ(group_ranks(t, natural, 2, "switch"), (Groups{{0, 1}, {2, 3}}));

  const auto scrambled = ids(t, {"gpu2", "gpu0", "gpu3", "gpu1"});
  const Groups g = group_ranks(t, scrambled, 2, "switch");
  // As GPUs, {gpu0, gpu1} and {gpu2, gpu3}; as positions (gpu2 = 0, gpu0 = 1, gpu3 = 2, gpu1 = 3)
  // {0, 2} (rank 0's switch first) and {1, 3}.
  EXPECT_EQ(group_ids(t, scrambled, g), (std::set<std::set<std::string>>{{"gpu0", "gpu1"}, {"gpu2", "gpu3"}}));
  EXPECT_EQ(g, (Groups{{0, 2}, {1, 3}}));
  EXPECT_EQ(group_ranks(t, scrambled, 1, "switch"), (Groups{{0, 1, 2, 3}}));
  EXPECT_EQ(group_ranks(t, scrambled, 4, "switch").size(), 4u);
}

TEST(Grouping, BySwitchOnDgx1FollowsPcieSwitchesNotNvlink) {
  const Topology t = load_file("dgx1-v100-hybrid-cube-mesh.json");
  const auto nodes = t.gpus();
  EXPECT_EQ(group_ranks(t, nodes, 4, "switch"), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(group_ranks(t, nodes, 2, "switch"), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(Grouping, BySwitchOnTheIbClusterGroupsByNode) {
  const Topology t = load_file("cluster-2x4gpu-ib-10GBps.json");
  const auto nodes = ids(t, {"n1-gpu0", "n0-gpu0", "n1-gpu1", "n0-gpu1", "n1-gpu2", "n0-gpu2", "n1-gpu3", "n0-gpu3"});
  EXPECT_EQ(group_ranks(t, nodes, 2, "switch"), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
}

TEST(Grouping, BySpeedQueuesFastestFirst) {
  const Topology t = load_file("source-a-titanx-4gpu.json");
  const auto nodes = t.gpus();
  EXPECT_EQ(group_ranks(t, nodes, 2, "speed", {1.0, 0.5, 0.9, 0.4}), (Groups{{0, 2}, {1, 3}}));
  // Ties by rank: queue 1, 2, 0, 3.
  EXPECT_EQ(group_ranks(t, nodes, 2, "speed", {0.5, 0.9, 0.9, 0.1}), (Groups{{1, 2}, {0, 3}}));
  EXPECT_EQ(group_ranks(t, nodes, 4, "speed", {0.1, 0.2, 0.3, 0.4}), (Groups{{3}, {2}, {1}, {0}}));
  EXPECT_EQ(error_of([&] { group_ranks(t, nodes, 2, "speed", {1.0, 2.0}); }),
            "--param grouping=speed: 2 measured speeds for 4 ranks; expected one speed per rank");
  EXPECT_NE(error_of([&] { group_ranks(t, nodes, 2, "speed", {1.0, 2.0, NAN, 1.0}); }).find("expected a finite number"),
            std::string::npos);
}

TEST(Grouping, ByOrderCutsConsecutiveChunks) {
  const Topology t = load_file("pcie-8gpu-2switch.json");
  const auto nodes = ids(t, {"gpu0", "gpu4", "gpu1", "gpu5", "gpu2", "gpu6", "gpu3", "gpu7"});
  EXPECT_EQ(group_ranks(t, nodes, 2, "order"), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(group_ranks(t, nodes, 4, "order"), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(group_ranks(t, nodes, 2, "switch"), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
}

TEST(Grouping, Errors) {
  const Topology t = load_file("source-a-titanx-4gpu.json");
  const auto nodes = t.gpus();
  EXPECT_EQ(error_of([&] { group_ranks(t, nodes, 3, "switch"); }),
            "--param k=3: N = 4 ranks cannot be split into 3 equal groups; expected k to divide N");
  EXPECT_NE(error_of([&] { group_ranks(t, nodes, 0, "order"); }).find("k=0: expected a positive number"),
            std::string::npos);
  EXPECT_NE(error_of([&] { group_ranks(t, nodes, 8, "order"); }), "");
  EXPECT_EQ(error_of([&] { group_ranks(t, nodes, 2, "swich"); }),
            "--param grouping=swich: unknown grouping; expected one of switch, speed, order (did you mean 'switch'?)");
}

TEST(Grouping, GroupsBySwitch) {
  const Topology a = load_file("source-a-titanx-4gpu.json");
  EXPECT_EQ(groups_by_switch(a, a.gpus()), 2);
  EXPECT_EQ(groups_by_switch(a, ids(a, {"gpu0", "gpu1", "gpu2"})), 1);  // 2 + 1 ranks on 2 switches
  EXPECT_EQ(groups_by_switch(a, ids(a, {"gpu0", "gpu2"})), 2);
  EXPECT_EQ(groups_by_switch(a, ids(a, {"gpu0"})), 1);
  const Topology dgx = load_file("dgx1-v100-hybrid-cube-mesh.json");
  EXPECT_EQ(groups_by_switch(dgx, dgx.gpus()), 4);
  for (const char* cluster : {"cluster-2x4gpu-ib-10GBps.json", "cluster-2x4gpu-eth-1GBps.json"}) {
    const Topology c = load_file(cluster);
    EXPECT_EQ(groups_by_switch(c, c.gpus()), 2) << cluster;
  }
  const Topology tree = load_json(two_level_tree(64, 16, 10.0));
  EXPECT_EQ(groups_by_switch(tree, tree.gpus()), 64);
}

TEST(RingOrder, AlikeGroupsShareOneSearchWithTheSameResult) {
  // Nodes of a generated cluster (alike link for link) and groups that are not alike (a
  // group spanning two nodes, one inside a node): each group's order is what searching it
  // alone gives.
  gradsync::models::ClusterSpec spec;
  spec.nodes = 4;
  spec.gpus_per_node = 6;
  spec.intra = gradsync::models::IntraFabric::pcie;
  spec.gpus_per_pcie_switch = 2;
  const Topology t = gradsync::models::generate_cluster(spec);
  const auto gpus = t.gpus();
  std::vector<std::vector<std::size_t>> groups;
  for (int n = 0; n < 4; ++n) groups.push_back({gpus[6 * n + 5], gpus[6 * n + 0], gpus[6 * n + 3], gpus[6 * n + 1], gpus[6 * n + 4]});
  groups.push_back({gpus[0], gpus[7], gpus[2], gpus[9], gpus[4]});
  const auto orders = best_ring_orders(t, groups);
  ASSERT_EQ(orders.size(), groups.size());
  for (std::size_t i = 0; i < groups.size(); ++i) EXPECT_EQ(orders[i], best_ring_order(t, groups[i])) << i;
}
