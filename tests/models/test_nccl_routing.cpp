// Static routing between hosts (plan.h: Plan::static_routing): each queue pair of NCCL's IB
// transport keeps to one path through the fabric, so a NIC moves at most `net_flow_share` of its
// rate for each queue pair that leaves by it (NCCL_IB_QPS_PER_CONNECTION's "routing entropy");
// a ring channel's one connection out of a host has NCCL_IB_QPS_PER_CONNECTION of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "models/executors/predict.h"
#include "models/support/json_input.h"
#include "models/topology/topology_io.h"
#include "support/nccl_planner.h"

using namespace gradsync::models;
using test_nccl_planner::hgx;
using test_nccl_planner::nccl_request;

namespace {

// Two HGX H100 nodes (8 NICs of 50 GB/s each), the ring forced with Simple, 1 GiB: NCCL's 16
// channels leave each host by its 8 NICs, two a NIC. NCCL's own model bounds the ring at 8
// searched channels x 48 = 384 GB/s of bus bandwidth (test_nccl_planner.cpp).
ResultRecord ring(std::vector<std::string> params) {
  static const Topology t = hgx(2);
  params.insert(params.end(), {"algorithm=Ring", "protocol=Simple", "gpudirect=on", "cpu=intel", "vm=off"});
  return predict(nccl_request(t, 16, 1024.0 * 1048576, params));
}

const OpenFact* routing_fact(const ResultRecord& r) {
  const auto it = std::find_if(r.open_facts.begin(), r.open_facts.end(),
                               [](const OpenFact& f) { return f.name == "adaptive routing in the fabric"; });
  return it == r.open_facts.end() ? nullptr : &*it;
}

}  // namespace

TEST(NcclRouting, EachQueuePairMovesItsShareOfTheNicWhereTheFabricRoutesItOnOnePath) {
  // Each hop of the ring carries a channel's part once (bus bandwidth = what each channel moves
  // between the hosts x 16 channels); each channel's connection has one queue pair by default.
  struct Case {
    std::vector<std::string> params;
    double limit;  // GB/s of bus bandwidth at most
  };
  for (const Case& c : std::vector<Case>{
           {{"net_flow_share=0.4"}, 16 * 0.4 * 50},                            // 2 queue pairs a NIC: 40 of its 50 GB/s
           {{"net_flow_share=0.25"}, 16 * 0.25 * 50},                          // 25 of 50
           {{"net_flow_share=0.4", "ib_qps=2"}, 384},                          // 4 a NIC: NCCL's 384 bounds it
           {{"net_flow_share=0.4", "min_ctas=24"}, 384},                       // 3 a NIC
           {{"net_flow_share=0.4", "adaptive_routing=on"}, 384},               // no path kept
           {{"net_flow_share=0.25", "ib_qps=2", "adaptive_routing=off"}, 16 * 0.5 * 50},
       }) {
    const ResultRecord r = ring(c.params);
    ASSERT_TRUE(r.busbw_GBps()) << ::testing::PrintToString(c.params);
    EXPECT_LE(*r.busbw_GBps(), c.limit * 1.001) << ::testing::PrintToString(c.params);
    EXPECT_GE(*r.busbw_GBps(), 0.9 * c.limit) << ::testing::PrintToString(c.params);
  }
  const ResultRecord one = ring({"net_flow_share=0.4"});
  EXPECT_TRUE(std::any_of(one.notes.begin(), one.notes.end(), [](const std::string& n) {
    return n.find("the fabric routes each queue pair on one path: 1 a connection (NCCL_IB_QPS_PER_CONNECTION)") != std::string::npos;
  })) << ::testing::PrintToString(one.notes);
}

TEST(NcclRouting, WhetherTheFabricRoutesAdaptivelyIsAnOpenFactWhereItMatters) {
  // Not stated, two queue pairs a NIC at 0.4 each: the range reaches the ring without the limit.
  const ResultRecord open = ring({"net_flow_share=0.4"});
  const OpenFact* fact = routing_fact(open);
  ASSERT_NE(fact, nullptr) << ::testing::PrintToString(open.notes);
  EXPECT_EQ(fact->assumed.rfind("no", 0), 0u) << fact->assumed;
  const double adaptive = *ring({"net_flow_share=0.4", "adaptive_routing=on"}).busbw_GBps();
  const auto range = open.busbw_range_GBps();
  ASSERT_TRUE(range.has_value());
  EXPECT_GE(range->second, adaptive * 0.999);
  EXPECT_LE(range->first, *open.busbw_GBps());
  // Stated, or enough queue pairs a NIC to fill it either way: not said.
  EXPECT_EQ(routing_fact(ring({"net_flow_share=0.4", "adaptive_routing=off"})), nullptr);
  EXPECT_EQ(routing_fact(ring({"net_flow_share=0.4", "adaptive_routing=on"})), nullptr);
  EXPECT_EQ(routing_fact(ring({"net_flow_share=0.4", "ib_qps=2"})), nullptr);
  // One host has no fabric between hosts.
  static const Topology one_host = hgx(1);
  const ResultRecord single = predict(nccl_request(one_host, 8, 1024.0 * 1048576, {"cpu=intel"}));
  EXPECT_EQ(routing_fact(single), nullptr);
}

TEST(NcclRouting, TwoHostsOfOneNicEachShareNoPathWithAnotherNic) {
  // Two hosts of one A100 PCIe and one 25 GB/s NIC each: every queue pair one way leaves by the
  // one port and arrives at the one port, so no path it keeps to is shared with another NIC's:
  // the plan is the same whatever the fabric's routing, and it is not said. A third host makes
  // the ring's hops between hosts cross the fabric from different NICs at once: said again.
  const double big = 1024.0 * 1048576;
  auto run = [&](int hosts, std::vector<std::string> params) {
    params.insert(params.end(), {"cpu=amd", "gpudirect=on", "vm=off", "net_flow_share=0.25"});
    return predict(nccl_request(test_nccl_planner::a100_pcie_hosts(hosts, 1, "switch"), hosts, big, params));
  };
  const ResultRecord pair = run(2, {});
  EXPECT_EQ(routing_fact(pair), nullptr) << ::testing::PrintToString(pair.notes);
  EXPECT_NEAR(*pair.busbw_GBps(), *run(2, {"adaptive_routing=on"}).busbw_GBps(), 1e-9);
  const ResultRecord three = run(3, {});
  EXPECT_NE(routing_fact(three), nullptr) << ::testing::PrintToString(three.notes);
  EXPECT_LT(*three.busbw_GBps(), *run(3, {"adaptive_routing=on"}).busbw_GBps() * 0.99);
}

TEST(NcclRouting, TheNicsSayHowTheFabricRoutes) {
  // topology generate --adaptive-routing writes the fact on every NIC ("adaptive_routing" in the
  // graph form): stated, it closes the open fact and plans as the parameter would; one NIC of
  // static routing makes the fabric static for the communicator; the user's parameter wins.
  const auto hosts = [](const std::string& adaptive_routing) {
    ClusterSpec s;
    s.nodes = 2;
    s.gpus_per_node = 8;
    s.nics_per_node = 8;
    s.network = ClusterNetwork::single;
    s.adaptive_routing = adaptive_routing;
    return generate_cluster(s);
  };
  const std::vector<std::string> fixed = {"algorithm=Ring", "protocol=Simple", "gpudirect=on", "cpu=intel", "vm=off", "net_flow_share=0.4"};
  const auto run = [&](const Topology& t, std::vector<std::string> params) {
    params.insert(params.end(), fixed.begin(), fixed.end());
    return predict(nccl_request(t, 16, 1024.0 * 1048576, params));
  };
  const auto says = [](const ResultRecord& r, const std::string& text) {
    return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.rfind("facts:", 0) == 0 && n.find(text) != std::string::npos; });
  };
  const double on = *ring({"net_flow_share=0.4", "adaptive_routing=on"}).busbw_GBps();
  const double off = *ring({"net_flow_share=0.4", "adaptive_routing=off"}).busbw_GBps();
  ASSERT_LT(off, on * 0.95);  // the fact matters here

  static const Topology adaptive = hosts("true"), fixed_paths = hosts("false"), open = hosts("auto");
  for (std::size_t i = 0; i < adaptive.node_count(); ++i) {
    if (adaptive.node(i).kind == NodeKind::nic) EXPECT_EQ(adaptive.node(i).facts.adaptive_routing, true) << adaptive.node(i).id;
    if (open.node(i).kind == NodeKind::nic) EXPECT_FALSE(open.node(i).facts.adaptive_routing.has_value()) << open.node(i).id;
  }
  const ResultRecord a = run(adaptive, {});
  EXPECT_EQ(routing_fact(a), nullptr) << ::testing::PrintToString(a.notes);
  EXPECT_NEAR(*a.busbw_GBps(), on, 1e-9);
  EXPECT_TRUE(says(a, ", adaptive routing")) << ::testing::PrintToString(a.notes);
  const ResultRecord f = run(fixed_paths, {});
  EXPECT_EQ(routing_fact(f), nullptr) << ::testing::PrintToString(f.notes);
  EXPECT_NEAR(*f.busbw_GBps(), off, 1e-9);
  EXPECT_TRUE(says(f, ", static routing (each queue pair on one path)")) << ::testing::PrintToString(f.notes);
  EXPECT_NE(routing_fact(run(open, {})), nullptr);
  // The user's parameter over the NICs'.
  EXPECT_NEAR(*run(adaptive, {"adaptive_routing=off"}).busbw_GBps(), off, 1e-9);
  EXPECT_NEAR(*run(fixed_paths, {"adaptive_routing=on"}).busbw_GBps(), on, 1e-9);

  // Read back from the graph form, and with one NIC of the second host saying static routing.
  ordered_json doc = topology_to_graph_json(adaptive);
  const Topology back = load_topology(JsonView::wrap(doc, "adaptive.json")).topology;
  EXPECT_NEAR(*run(back, {}).busbw_GBps(), on, 1e-9);
  bool changed = false;
  for (auto& n : doc["nodes"]) {
    if (n["id"] == "n1-nic3") {
      n["adaptive_routing"] = false;
      changed = true;
    }
  }
  ASSERT_TRUE(changed);
  const Topology one_static = load_topology(JsonView::wrap(doc, "one-static.json")).topology;
  const ResultRecord mixed = run(one_static, {});
  EXPECT_EQ(routing_fact(mixed), nullptr) << ::testing::PrintToString(mixed.notes);
  EXPECT_NEAR(*mixed.busbw_GBps(), off, 1e-9);
}

TEST(NcclRouting, ALogsQueuePairsPerConnectionAreItsSetting) {
  const Strategy& nccl = find_strategy("nccl");
  EXPECT_EQ(nccl.params_from_environment({{"NCCL_IB_QPS_PER_CONNECTION", "2"}}).at("ib_qps"), "2");
  EXPECT_EQ(nccl.params_from_environment({{"NCCL_IB_QPS_PER_CONNECTION", "two"}}).count("ib_qps"), 0u);
  EXPECT_EQ(nccl.params_from_environment({{"NCCL_IB_QPS_PER_CONNECTION", "0"}}).count("ib_qps"), 0u);
}
