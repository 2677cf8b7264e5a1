#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <map>
#include <random>

#include "models/support/error.h"
#include "models/support/json_input.h"
#include "models/topology/topology_io.h"
#include "models/support/units.h"
#include "models/topology/cluster_generator.h"
#include "models/topology/contention.h"

using namespace gradsync::models;

namespace {

LoadedTopology load(const std::string& text) { return load_topology(JsonView::parse(text, "test.json")); }

std::string error_of(const std::string& text) {
  try {
    load(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const char* kTwoSwitch = R"({
  "name": "two-switch",
  "nodes": [ {"id": "gpu0", "kind": "gpu"}, {"id": "gpu1", "kind": "gpu"},
             {"id": "gpu2", "kind": "gpu"}, {"id": "gpu3", "kind": "gpu"},
             {"id": "sw0", "kind": "pcie_switch"}, {"id": "sw1", "kind": "pcie_switch"},
             {"id": "rc0", "kind": "root_complex"}, {"id": "host0", "kind": "host_memory"} ],
  "links": [ {"a": "gpu0", "b": "sw0", "bandwidth_GBps": 5.96, "latency_us": 1.0},
             {"a": "gpu1", "b": "sw0", "bandwidth_GBps": 5.96, "latency_us": 1.0},
             {"a": "gpu2", "b": "sw1", "bandwidth_GBps": 5.96, "latency_us": 1.0},
             {"a": "gpu3", "b": "sw1", "bandwidth_GBps": 5.96, "latency_us": 1.0},
             {"a": "sw0", "b": "rc0", "bandwidth_GBps": 4.46, "latency_us": 1.5},
             {"a": "sw1", "b": "rc0", "bandwidth_GBps": 4.46, "latency_us": 1.5, "duplex": "half"},
             {"a": "rc0", "b": "host0", "bandwidth_GBps": 12.0, "latency_us": 0.5} ] })";

}  // namespace

TEST(Topology, RoutesThroughTheTree) {
  auto t = load(kTwoSwitch).topology;
  const auto g0 = *t.find("gpu0"), g1 = *t.find("gpu1"), g2 = *t.find("gpu2");
  EXPECT_EQ(t.route(g0, g1).size(), 2u);
  EXPECT_EQ(t.route(g0, g2).size(), 4u);
  EXPECT_DOUBLE_EQ(t.bottleneck_Bps(g0, g1), GBps_to_Bps(5.96));
  EXPECT_DOUBLE_EQ(t.bottleneck_Bps(g0, g2), GBps_to_Bps(4.46));
  EXPECT_DOUBLE_EQ(t.latency_s(g0, g2), us_to_s(1.0 + 1.5 + 1.5 + 1.0));
  EXPECT_TRUE(t.route(g0, g0).empty());
  // Directions: gpu0 -> gpu2 goes up sw0 (a->b forward) and down sw1 (b->a).
  const auto& r = t.route(g0, g2);
  EXPECT_TRUE(r.front().forward);
  EXPECT_FALSE(r.back().forward);
  EXPECT_FALSE(t.links()[5].full_duplex);
  EXPECT_EQ(t.gpus().size(), 4u);
  EXPECT_EQ(t.host_memories().size(), 1u);
}

TEST(Topology, GpusDoNotForwardTraffic) {
  // gpu0-gpu1 and gpu1-gpu2 by NVLink, everything also on one PCIe switch: gpu0 -> gpu2 must
  // take PCIe, not relay through gpu1.
  auto t = load(R"({"name": "nv", "nodes": [{"id": "gpu0", "kind": "gpu"}, {"id": "gpu1", "kind": "gpu"},
      {"id": "gpu2", "kind": "gpu"}, {"id": "sw", "kind": "pcie_switch"}],
    "links": [{"a": "gpu0", "b": "gpu1", "bandwidth_GBps": 50, "latency_us": 0.5},
              {"a": "gpu1", "b": "gpu2", "bandwidth_GBps": 50, "latency_us": 0.5},
              {"a": "gpu0", "b": "sw", "bandwidth_GBps": 10, "latency_us": 1},
              {"a": "gpu1", "b": "sw", "bandwidth_GBps": 10, "latency_us": 1},
              {"a": "gpu2", "b": "sw", "bandwidth_GBps": 10, "latency_us": 1}]})")
               .topology;
  EXPECT_DOUBLE_EQ(t.bottleneck_Bps(0, 1), GBps_to_Bps(50));
  EXPECT_DOUBLE_EQ(t.bottleneck_Bps(0, 2), GBps_to_Bps(10));
  EXPECT_EQ(t.route(0, 2).size(), 2u);
}

TEST(Topology, BadInputNamesFileAndPlace) {
  EXPECT_EQ(error_of(R"({"name": "x", "nodes": [{"id": "gpu0", "kind": "gpu"}, {"id": "sw", "kind": "pcie_switch"}],
      "links": [{"a": "gpu0", "b": "sw", "bandwidth_GBps": -1, "latency_us": 1}]})"),
            "test.json: /links/0/bandwidth_GBps: got -1; expected a number greater than 0");
  EXPECT_EQ(error_of(R"({"name": "x", "nodes": [{"id": "gpu0", "kind": "gpu"}],
      "links": [], "bandwith": 3})"),
            "test.json: /bandwith: unknown key 'bandwith'; valid keys here: name, description, nodes, links");
  EXPECT_EQ(error_of(R"({"name": "x", "nodes": [{"id": "gpu0", "kind": "gpu"}, {"id": "sw", "kind": "pcie_switch"}],
      "links": [{"a": "gpu0", "b": "sw", "bandwidth_GBps": 1, "latency_us": 1, "duplx": "full"}]})"),
            "test.json: /links/0/duplx: unknown key 'duplx' (did you mean 'duplex'?); valid keys here: a, b, "
            "bandwidth_GBps, latency_us, duplex, label");
  EXPECT_EQ(error_of(R"({"name": "x", "nodes": [{"id": "gpu0", "kind": "gpu"}, {"id": "sw", "kind": "pcie_swich"}],
      "links": []})"),
            "test.json: /nodes/1/kind: got \"pcie_swich\"; expected one of gpu, host_memory, cpu_socket, nic, "
            "pcie_switch, root_complex, nvswitch, net_switch (did you mean 'pcie_switch'?)");
  EXPECT_EQ(error_of(R"({"name": "x", "nodes": [{"id": "gpu0", "kind": "gpu"}, {"id": "gpu1", "kind": "gpu"}],
      "links": []})"),
            "test.json: the graph is disconnected: gpu1 cannot reach \"gpu0\"; expected every node to be linked");
  EXPECT_EQ(error_of(R"({"name": "x", "nodes": [{"id": "gpu0", "kind": "gpu"}, {"id": "gpu1", "kind": "gpu"},
      {"id": "gpu2", "kind": "gpu"}], "links": [{"a": "gpu0", "b": "gpu1", "bandwidth_GBps": 1, "latency_us": 1},
      {"a": "gpu1", "b": "gpu2", "bandwidth_GBps": 1, "latency_us": 1}]})"),
            "test.json: no route from \"gpu0\" to \"gpu2\" that crosses only switches, root complexes, CPU sockets or "
            "NICs (GPUs and host memory do not forward traffic); expected a path between them");
  EXPECT_EQ(error_of("{\"name\": \"x\",\n \"nodes\": [}"),
            "test.json:2:12: not valid JSON (syntax error while parsing value - unexpected '}'; expected '[', '{', or a literal)");
}

namespace {

// The least routing cost between two endpoints by trying every simple path whose inner
// nodes forward traffic (small topologies only): the oracle for route(), whichever way it
// found its route (the one path through a tree of switches, a search stopped at the
// destination, or a cached shortest-path tree).
double cheapest_by_enumeration(const Topology& t, std::size_t a, std::size_t b) {
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> adjacent(t.node_count());  // (neighbour, link)
  for (std::size_t l = 0; l < t.links().size(); ++l) {
    adjacent[t.links()[l].a].push_back({t.links()[l].b, l});
    adjacent[t.links()[l].b].push_back({t.links()[l].a, l});
  }
  const auto cost = [&](std::size_t l) { return t.links()[l].latency_s + kMiB / t.links()[l].bandwidth_Bps; };
  double best = std::numeric_limits<double>::infinity();
  std::vector<bool> on_path(t.node_count(), false);
  std::function<void(std::size_t, double)> walk = [&](std::size_t u, double so_far) {
    if (u == b) {
      best = std::min(best, so_far);
      return;
    }
    if (u != a && !forwards_traffic(t.node(u).kind)) return;
    on_path[u] = true;
    for (const auto& [v, l] : adjacent[u]) {
      if (!on_path[v]) walk(v, so_far + cost(l));
    }
    on_path[u] = false;
  };
  walk(a, 0);
  return best;
}

double cost_of(const Topology& t, const Route& r) {
  double c = 0;
  for (const Hop& h : r) c += t.links()[h.link].latency_s + kMiB / t.links()[h.link].bandwidth_Bps;
  return c;
}

}  // namespace

TEST(Topology, EveryRouteIsTheCheapestPathAndConnected) {
  for (const std::string name : {"source-a-titanx-4gpu", "pcie-8gpu-2switch", "dgx1-v100-hybrid-cube-mesh",
                                 "cluster-2x4gpu-ib-10GBps", "cluster-2x4gpu-eth-1GBps"}) {
    const LoadedTopology loaded = load_topology_file(std::string(GRADSYNC_TOPOLOGIES) + "/" + name + ".json");
    const Topology& t = loaded.topology;
    std::vector<std::size_t> endpoints = t.gpus();
    for (std::size_t h : t.host_memories()) endpoints.push_back(h);
    for (std::size_t a : endpoints) {
      for (std::size_t b : endpoints) {
        if (a == b) continue;
        const Route& r = t.route(a, b);
        ASSERT_FALSE(r.empty()) << name;
        // Hops chain from a to b.
        std::size_t at = a;
        for (const Hop& h : r) {
          const Link& l = t.links()[h.link];
          ASSERT_EQ(h.forward ? l.a : l.b, at) << name << " " << t.node(a).id << "->" << t.node(b).id;
          at = h.forward ? l.b : l.a;
        }
        EXPECT_EQ(at, b) << name;
        EXPECT_NEAR(cost_of(t, r), cheapest_by_enumeration(t, a, b), 1e-15) << name << " " << t.node(a).id << "->" << t.node(b).id;
      }
    }
  }
}

// The analytic walk keeps the contention model's loads from one round to the next and
// changes only the flows that changed. Kept loads must give every flow the share a fresh
// count gives it, and changed() must name exactly the links whose load moved: on a star of
// full-duplex, half-duplex and interfering (duplex share) links, over random changes.
TEST(Contention, KeptLoadsGiveTheSharesOfAFreshCount) {
  const LoadedTopology loaded = load(R"({
    "name": "mixed-star",
    "nodes": [ {"id": "g0", "kind": "gpu"}, {"id": "g1", "kind": "gpu"}, {"id": "g2", "kind": "gpu"},
               {"id": "g3", "kind": "gpu"}, {"id": "g4", "kind": "gpu"}, {"id": "sw", "kind": "pcie_switch"} ],
    "links": [ {"a": "g0", "b": "sw", "bandwidth_GBps": 10, "latency_us": 1},
               {"a": "g1", "b": "sw", "bandwidth_GBps": 10, "latency_us": 1, "duplex": "half"},
               {"a": "g2", "b": "sw", "bandwidth_GBps": 7, "latency_us": 1, "duplex": 0.75},
               {"a": "g3", "b": "sw", "bandwidth_GBps": 12, "latency_us": 1, "duplex": "half"},
               {"a": "g4", "b": "sw", "bandwidth_GBps": 25, "latency_us": 1} ] })");
  const Topology& t = loaded.topology;
  const std::vector<std::size_t> gpus = t.gpus();
  using SlotHop = ContentionModel::SlotHop;
  ContentionModel kept(t), fresh(t);
  std::mt19937 random(7);
  std::vector<std::pair<std::size_t, std::size_t>> flows;  // (from, to)
  std::map<std::pair<std::size_t, bool>, long> count;    // flows per link and direction, counted here
  auto loads = [&](std::size_t link) {
    const long f = count[{link, true}], b = count[{link, false}];
    return t.links()[link].full_duplex ? std::pair<long, long>{f, b} : std::pair<long, long>{f + b, 0};
  };
  auto move = [&](std::size_t from, std::size_t to, int flows_added) {
    std::vector<SlotHop> hops;
    kept.compile(t.route(from, to), hops);
    kept.add(hops.data(), hops.data() + hops.size(), flows_added);
    for (const Hop& h : t.route(from, to)) count[{h.link, h.forward}] += flows_added;
  };
  for (int round = 0; round < 200; ++round) {
    std::map<std::size_t, std::pair<long, long>> before;
    for (std::size_t l = 0; l < t.links().size(); ++l) before[l] = loads(l);
    kept.begin_changes();
    // Remove a few flows and add a few (sometimes the same pair back: no net change).
    for (int k = static_cast<int>(random() % 3); k > 0 && !flows.empty(); --k) {
      const std::size_t i = random() % flows.size();
      move(flows[i].first, flows[i].second, -1);
      flows.erase(flows.begin() + static_cast<std::ptrdiff_t>(i));
    }
    for (int k = static_cast<int>(random() % 4); k > 0; --k) {
      const std::size_t a = gpus[random() % gpus.size()], b = gpus[random() % gpus.size()];
      if (a == b) continue;
      flows.push_back({a, b});
      move(a, b, 1);
    }
    kept.end_changes();
    for (std::size_t l = 0; l < t.links().size(); ++l) {
      EXPECT_EQ(kept.changed(static_cast<std::uint32_t>(l)), loads(l) != before[l]) << "round " << round << " link " << l;
    }
    std::vector<const Route*> routes;
    for (const auto& [a, b] : flows) routes.push_back(&t.route(a, b));
    std::vector<double> shares;
    std::vector<int> limiting;
    fresh.share(routes, shares, &limiting);
    for (std::size_t i = 0; i < flows.size(); ++i) {
      std::vector<SlotHop> hops;
      kept.compile(*routes[i], hops);
      int hop = -2;
      EXPECT_EQ(kept.bandwidth(hops.data(), hops.data() + hops.size(), &hop), shares[i]) << "round " << round << " flow " << i;
      EXPECT_EQ(hop, limiting[i]) << "round " << round << " flow " << i;
    }
  }
  // The loads kept are the flows left: clearing them leaves a model that shares as a fresh one.
  kept.clear();
  std::vector<const Route*> one{&t.route(gpus[0], gpus[1])};
  std::vector<double> a, b;
  kept.share(one, a);
  fresh.share(one, b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a[0], 10e9);  // g0 -> sw (10) then sw -> g1 (half duplex, 10) alone
}

// A transfer NCCL sends through chosen NICs: from n0-gpu1 out by n0-nic0 (not its own nic1) and
// into n1-gpu0 by n1-nic3. Its GPU reaches the NIC within its host (over PCIe, through the root
// complex), never out through its own NIC and back in through the switch, though that costs
// about the same; so the route crosses the network exactly twice, leaving by n0-nic0 and
// entering by n1-nic3. Without chosen nodes it is the plain route.
TEST(Topology, RouteThroughChosenNicsStaysWithinTheHostsToThem) {
  ClusterSpec s;
  s.nodes = 2;
  s.gpus_per_node = 8;
  s.nics_per_node = 8;
  s.network = ClusterNetwork::single;
  const Topology t = generate_cluster(s);
  const auto id = [&](const char* name) { return t.require(name, "test"); };
  const Route& r = t.route_through(id("n0-gpu1"), id("n0-nic0"), id("n1-nic3"), id("n1-gpu0"));
  std::vector<std::string> network;
  for (const Hop& h : r) {
    const Link& l = t.links()[h.link];
    const std::string a = t.node(l.a).id, b = t.node(l.b).id;
    if (a == "net-switch" || b == "net-switch") network.push_back(h.forward ? a + ">" + b : b + ">" + a);
  }
  EXPECT_EQ(network, (std::vector<std::string>{"n0-nic0>net-switch", "net-switch>n1-nic3"}));
  EXPECT_EQ(t.route_through(id("n0-gpu1"), Topology::npos, Topology::npos, id("n1-gpu0")), t.route(id("n0-gpu1"), id("n1-gpu0")));
}
