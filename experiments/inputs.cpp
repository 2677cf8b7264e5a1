#include "experiments/inputs.h"

#include <cctype>
#include <fstream>

#include "models/topology/importers/import.h"
#include "models/topology/matrix_inference.h"

namespace gradsync::experiments {

namespace {

// A file whose first non-blank character is not '{' is a tool's printed output.
bool is_tool_output(const std::string& path) {
  std::ifstream in(path);
  char c = 0;
  while (in.get(c)) {
    if (!std::isspace(static_cast<unsigned char>(c))) return c != '{';
  }
  return false;  // empty or unreadable: the JSON loader says what is wrong
}

}  // namespace

models::LoadedTopology load_topology_arg(const std::string& name_or_path) {
  const std::string path = models::resolve_topology_path(name_or_path);
  if (is_tool_output(path)) {
    // p2pBandwidthLatencyTest, nvbandwidth or nvidia-smi topo -m output, as `gradsync import` reads it.
    const models::ImportResult imported = models::import_tool_files({path});
    models::InferredTopology inferred = models::infer_topology(imported.form);
    return models::LoadedTopology{std::move(inferred.topology), std::move(inferred.report)};
  }
  return models::load_topology_file(path);
}

}  // namespace gradsync::experiments
