// Topologies built from a few numbers — a star of GPUs on one switch, a two-level tree of
// switches, a mesh of direct links — for the tests, the fuzzer, source B's reproduction,
// the benchmark and gradsync-run's default (every rank alike). One generator, so that the
// same shape is built the same way everywhere (node and link order included).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "models/topology/topology.h"

namespace gradsync::models {

struct UniformLink {
  double GBps = 10;
  double latency_us = 1;  // of the link (a route's latency is the sum over its links)
};

// GPUs (and host memory, when `host` is given) each on its own link to one hub.
struct StarSpec {
  std::string name = "star";
  int gpus = 1;
  std::string gpu_prefix = "gpu";  // GPU ids: gpu0, gpu1, ...
  NodeKind hub = NodeKind::pcie_switch;
  std::string hub_id = "switch";
  UniformLink gpu_link;
  std::optional<UniformLink> host;
  std::string host_id = "host";
  std::string label;  // every link's label
  std::string description;
};
Topology star_topology(const StarSpec& spec);

// `switches` PCIe switches of `per_switch` GPUs each under one root complex (host memory
// on the root, when `host` is given). GPU ids run switch by switch.
struct TreeSpec {
  std::string name = "tree";
  int switches = 1;
  int per_switch = 1;
  UniformLink gpu_link;  // GPU -- switch
  UniformLink uplink;  // switch -- root
  std::optional<UniformLink> host;  // root -- host memory
};
Topology tree_topology(const TreeSpec& spec);

// Every pair of `gpus` GPUs joined by its own link (`link(a, b)`, a < b).
Topology mesh_topology(const std::string& name, int gpus, const std::function<UniformLink(int a, int b)>& link);

// N GPUs ("gpu0".."gpuN-1") and host memory on one switch, every link `GBps`, any two
// endpoints `latency_us` apart: the topology a run uses when none is given.
Topology flat_topology(int gpus, double GBps = 10.0, double latency_us = 1.0);

}  // namespace gradsync::models
