// Reading and writing topology files. One loader takes any of the three forms:
//   graph form     — {"name", "nodes": [...], "links": [...]}
//   matrix form    — {"name", "gpus": [...], "bandwidth_GBps": [[...]], ...} (see matrix_form.h),
//                    turned into a graph by matrix_inference.h;
//   generated form — {"name", "generate": {"nodes": 128, ...}}: a cluster built from the
//                    parameters of `gradsync topology generate` (cluster_generator.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/support/json_input.h"
#include "models/topology/matrix_inference.h"
#include "models/topology/topology.h"

namespace gradsync::models {

struct LoadedTopology {
  Topology topology;
  std::optional<InferenceReport> inference;  // set when the file was in matrix form
};

LoadedTopology load_topology(const JsonView& doc, const InferenceOptions& options = {});
LoadedTopology load_topology_file(const std::string& path, const InferenceOptions& options = {});

// Graph form of any topology (an inferred one included).
ordered_json topology_to_graph_json(const Topology& topology);

// The folder of shipped topologies: $GRADSYNC_TOPOLOGY_DIR, else <source>/topologies.
std::string topology_dir();
std::vector<std::string> shipped_topology_names();
// A path to an existing file, or the name of a shipped topology (else InputError listing them).
std::string resolve_topology_path(const std::string& name_or_path);

}  // namespace gradsync::models
