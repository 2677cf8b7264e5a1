// Uniform topologies the executors are compared on (models/topology/uniform_topologies.h).
#pragma once

#include <string>

#include "models/topology/topology.h"
#include "models/topology/uniform_topologies.h"

namespace test_topologies {

// Every GPU pair joined by its own link.
inline gradsync::models::Topology full_mesh(int n, double GBps = 10, double latency_us = 4) {
  return gradsync::models::mesh_topology("mesh", n, [&](int, int) { return gradsync::models::UniformLink{GBps, latency_us}; });
}

// N GPUs and host memory, each on its own link to one switch (pair latency `latency_us`).
inline gradsync::models::Topology star(int n, double GBps = 10, double latency_us = 4) {
  gradsync::models::StarSpec s;
  s.gpus = n;
  s.hub_id = "sw";
  s.gpu_link = {GBps, latency_us / 2};
  s.host = gradsync::models::UniformLink{GBps, latency_us / 2};
  return gradsync::models::star_topology(s);
}

// `switches` PCIe switches of `per_switch` GPUs under one root, with host memory on it.
inline gradsync::models::Topology switch_tree(const std::string& name, int switches, int per_switch,
                                              gradsync::models::UniformLink gpu_link, gradsync::models::UniformLink uplink,
                                              gradsync::models::UniformLink host) {
  gradsync::models::TreeSpec s;
  s.name = name;
  s.switches = switches;
  s.per_switch = per_switch;
  s.gpu_link = gpu_link;
  s.uplink = uplink;
  s.host = host;
  return gradsync::models::tree_topology(s);
}

// The node right above a GPU in a switch tree: the first forwarding node (switch, bridge,
// NIC...) it has a link to; "" when it has none.
inline std::string parent_of(const gradsync::models::Topology& t, const std::string& gpu) {
  const std::size_t g = *t.find(gpu);
  for (const auto& l : t.links()) {
    const std::size_t other = l.a == g ? l.b : (l.b == g ? l.a : g);
    if (other != g && gradsync::models::forwards_traffic(t.node(other).kind)) return t.node(other).id;
  }
  return "";
}

}  // namespace test_topologies
