// Finding and loading what the command line names: a topology file or a shipped
// topology name (topologies/<name>.json), a workload file or preset.
#pragma once

#include <string>
#include <vector>

#include "models/topology_io.h"
#include "models/workload.h"

namespace gradsync::experiments {

inline constexpr const char* kDefaultTopology = "source-a-titanx-4gpu";
inline constexpr const char* kDefaultWorkload = "source-a-ffnn-lm";

// The folder of shipped topologies: $GRADSYNC_TOPOLOGY_DIR, else <source>/topologies.
std::string topology_dir();
std::vector<std::string> shipped_topology_names();
// A path to an existing file, or the name of a shipped topology.
std::string resolve_topology_path(const std::string& name_or_path);
models::LoadedTopology load_topology_arg(const std::string& name_or_path);

}  // namespace gradsync::experiments
