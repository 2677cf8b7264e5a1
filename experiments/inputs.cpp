#include "experiments/inputs.h"

namespace gradsync::experiments {

models::LoadedTopology load_topology_arg(const std::string& name_or_path) {
  return models::load_topology_file(models::resolve_topology_path(name_or_path));
}

}  // namespace gradsync::experiments
