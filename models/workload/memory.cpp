#include "models/workload/memory.h"

#include <algorithm>

namespace gradsync::models {

std::string sharding_name(Sharding s) {
  switch (s) {
    case Sharding::none: return "replicated";
    case Sharding::optimizer_state: return "optimizer state sharded (ZeRO-1)";
    case Sharding::gradients: return "optimizer state and gradients sharded (ZeRO-2)";
    case Sharding::parameters: return "optimizer state, gradients and parameters sharded (ZeRO-3)";
  }
  return "";
}

std::string sharding_word(Sharding s) {
  switch (s) {
    case Sharding::none: return "none";
    case Sharding::optimizer_state: return "optimizer_state";
    case Sharding::gradients: return "gradients";
    case Sharding::parameters: return "parameters";
  }
  return "";
}

std::optional<Sharding> sharding_from_word(const std::string& word) {
  for (Sharding s : {Sharding::none, Sharding::optimizer_state, Sharding::gradients, Sharding::parameters}) {
    if (sharding_word(s) == word) return s;
  }
  return std::nullopt;
}

MemoryPerGpu memory_per_gpu(const Workload& w, Sharding sharding, int ranks) {
  MemoryPerGpu m;
  m.sharding = sharding;
  for (const Layer& l : w.layers) {
    const double psi = static_cast<double>(l.params);
    const int b = w.layer_dtype_bytes(l);
    m.parameters_bytes += psi * b;
    m.gradients_bytes += psi * b;
    // Adam's momentum and variance in fp32, and an fp32 master copy below fp32.
    m.optimizer_bytes += psi * (8.0 + (b < 4 ? 4.0 : 0.0));
  }
  const double n = std::max(1, ranks);
  if (sharding >= Sharding::optimizer_state) m.optimizer_bytes /= n;
  if (sharding >= Sharding::gradients) m.gradients_bytes /= n;
  if (sharding >= Sharding::parameters) m.parameters_bytes /= n;
  return m;
}

}  // namespace gradsync::models
