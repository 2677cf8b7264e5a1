#include "models/topology/placement.h"

#include <algorithm>
#include <set>

#include "models/support/error.h"

namespace gradsync::models {

Placement first_gpus(const Topology& t, int n) {
  const auto gpus = t.gpus();
  if (n < 1 || static_cast<std::size_t>(n) > gpus.size()) {
    throw InputError("--gpus " + std::to_string(n) + ": topology \"" + t.name() + "\" has " + std::to_string(gpus.size()) +
                     " GPUs; expected between 1 and " + std::to_string(gpus.size()));
  }
  Placement p;
  p.ranks.assign(gpus.begin(), gpus.begin() + n);
  return p;
}

Placement named_gpus(const Topology& t, const std::vector<std::string>& ids, const std::string& what) {
  Placement p;
  std::set<std::size_t> seen;
  for (const auto& id : ids) {
    const std::size_t node = t.require(id, what);
    if (t.node(node).kind != NodeKind::gpu) {
      throw InputError(what + ": \"" + id + "\" is a " + to_string(t.node(node).kind) + "; expected a GPU");
    }
    if (!seen.insert(node).second) throw InputError(what + ": \"" + id + "\" is listed twice; expected each GPU once");
    p.ranks.push_back(node);
  }
  if (p.ranks.empty()) throw InputError(what + ": expected at least one GPU id");
  return p;
}

std::size_t resolve_server(const Topology& t, const Placement& placement, const std::string& spec, const std::string& what) {
  if (spec == "host") {
    const auto hosts = t.host_memories();
    if (hosts.empty()) {
      throw InputError(what + "=host: topology \"" + t.name() +
                       "\" has no host-memory node; expected a GPU id (e.g. " + what + "=rank0) or a topology with host memory");
    }
    return hosts.front();
  }
  if (spec.rfind("rank", 0) == 0 && spec.size() > 4 && spec.find_first_not_of("0123456789", 4) == std::string::npos) {
    // Compared as digits: a huge index ("rank99999999999999999999") must not overflow.
    const std::string digits = spec.substr(std::min(spec.find_first_not_of('0', 4), spec.size() - 1));
    const std::size_t r = digits.size() > 9 ? placement.ranks.size() : std::stoul(digits);
    if (r >= placement.ranks.size()) {
      throw InputError(what + "=" + spec + ": there are only " + std::to_string(placement.ranks.size()) +
                       " ranks; expected rank0 to rank" + std::to_string(placement.ranks.size() - 1) + ", host or a node id");
    }
    return placement.ranks[r];
  }
  const std::size_t node = t.require(spec, what);
  const NodeKind kind = t.node(node).kind;
  if (kind != NodeKind::gpu && kind != NodeKind::host_memory) {
    throw InputError(what + "=" + spec + ": a " + to_string(kind) + " cannot hold a parameter server; expected a GPU or host memory");
  }
  return node;
}

std::vector<std::string> split_list(const std::string& text, const std::string& what) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw InputError(what + " \"" + text + "\": empty item; expected a comma-separated list");
    items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

}  // namespace gradsync::models
