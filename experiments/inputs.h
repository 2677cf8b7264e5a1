// Loading what the command line names: a topology file or a shipped topology name
// (topologies/<name>.json; see models/topology_io.h), with the front end's defaults.
#pragma once

#include <string>

#include "models/topology_io.h"

namespace gradsync::experiments {

inline constexpr const char* kDefaultTopology = "source-a-titanx-4gpu";
inline constexpr const char* kDefaultWorkload = "source-a-ffnn-lm";

models::LoadedTopology load_topology_arg(const std::string& name_or_path);

}  // namespace gradsync::experiments
