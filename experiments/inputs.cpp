#include "experiments/inputs.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "gradsync/config.h"
#include "models/error.h"

namespace gradsync::experiments {

namespace fs = std::filesystem;

std::string topology_dir() {
  if (const char* env = std::getenv("GRADSYNC_TOPOLOGY_DIR"); env && *env) return env;
  return std::string(GRADSYNC_SOURCE_DIR) + "/topologies";
}

std::vector<std::string> shipped_topology_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(topology_dir(), ec)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string resolve_topology_path(const std::string& name_or_path) {
  std::error_code ec;
  if (fs::exists(name_or_path, ec)) return name_or_path;
  const fs::path shipped = fs::path(topology_dir()) / (name_or_path + ".json");
  if (fs::exists(shipped, ec)) return shipped.string();
  const auto names = shipped_topology_names();
  throw models::InputError("--topology " + name_or_path + ": no such file, nor a shipped topology" +
                           models::did_you_mean(name_or_path, names) + "; shipped topologies (in " + topology_dir() +
                           "): " + models::join(names));
}

models::LoadedTopology load_topology_arg(const std::string& name_or_path) {
  return models::load_topology_file(resolve_topology_path(name_or_path));
}

}  // namespace gradsync::experiments
