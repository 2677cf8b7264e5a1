// Which topology endpoint each rank runs on (rank order matters: a ring's speed depends
// on it), and where a parameter server lives.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/topology/topology.h"

namespace gradsync::models {

struct Placement {
  std::vector<std::size_t> ranks;  // node index of each rank, in rank order
  std::optional<std::size_t> server;  // node index of the parameter server, when a strategy uses one

  int size() const { return static_cast<int>(ranks.size()); }
};

// The first `n` GPUs of the topology, in declaration order. Throws InputError when the
// topology has fewer GPUs.
Placement first_gpus(const Topology& topology, int n);

// Ranks on the named GPUs, in the given order ("gpu0,gpu2"). Throws InputError on unknown
// or repeated ids, or ids that are not GPUs. `what` names the list in messages ("--ranks",
// or "FILE: /ranks" for an experiment file).
Placement named_gpus(const Topology& topology, const std::vector<std::string>& ids, const std::string& what = "--ranks");

// Resolves a server location: "host" (the first host-memory node), "rank0" (the GPU of
// rank 0) or a node id. `what` names the setting in messages.
std::size_t resolve_server(const Topology& topology, const Placement& placement, const std::string& spec,
                           const std::string& what);

// Splits "a,b,c" into items (empty items are errors).
std::vector<std::string> split_list(const std::string& text, const std::string& what);

}  // namespace gradsync::models
