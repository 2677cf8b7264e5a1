// Loading what the command line names: a topology file or a shipped topology name
// (topologies/<name>.json; see models/topology/topology_io.h), with the front end's defaults. A file
// that is not JSON is read as a measuring tool's output (p2pBandwidthLatencyTest,
// nvbandwidth, nvidia-smi topo -m), exactly as `gradsync import` reads it with its defaults
// (nvidia-smi topo -m alone: a nominal topology, the GPU model from nccl-tests' device lines).
#pragma once

#include <string>

#include "models/topology/topology_io.h"

namespace gradsync::experiments {

inline constexpr const char* kDefaultTopology = "source-a-titanx-4gpu";
inline constexpr const char* kDefaultWorkload = "source-a-ffnn-lm";

models::LoadedTopology load_topology_arg(const std::string& name_or_path);

}  // namespace gradsync::experiments
