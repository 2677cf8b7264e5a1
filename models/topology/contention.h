// Bandwidth sharing among concurrent flows: the analytic model's one rule. Flows that
// cross the same link in the same direction (either direction for a half-duplex link)
// share it equally; a flow gets the smallest share along its route.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/topology/topology.h"

namespace gradsync::models {

struct Flow {
  std::size_t from = 0;  // topology nodes
  std::size_t to = 0;
};

// Reusable scratch space for repeated evaluations (the analytic executor runs this once
// per round; keeping the counters avoids reallocating them).
class ContentionModel {
 public:
  explicit ContentionModel(const Topology& topology);
  // Bandwidth (bytes/s) each flow gets when all of `flows` run at once. A flow between a
  // node and itself (a local copy) gets +infinity.
  void share(const std::vector<Flow>& flows, std::vector<double>& bandwidth_out);
  // Same, with the routes given (route[i] for flows[i]), for callers that cache routes.
  // With `limiting_hop_out`: for each flow, the position in its route of the hop that sets
  // its share (-1 for a local copy). With `counts`: routes[i] stands for counts[i] flows alike
  // (each gets the share written for it).
  void share(const std::vector<const Route*>& routes, std::vector<double>& bandwidth_out,
             std::vector<int>* limiting_hop_out = nullptr, const std::vector<std::uint32_t>* counts = nullptr);

 private:
  const Topology& topology_;
  std::vector<std::uint32_t> load_;  // per link and direction: 2 * link + (forward ? 0 : 1)
  // Per link, what share() reads of it, kept together: 1 when its directions count apart (full
  // duplex), its bandwidth, and 2 x bandwidth x duplex_share where both directions interfere (else 0).
  std::vector<std::size_t> slot_;
  std::vector<double> bandwidth_, duplex_;
  std::vector<std::size_t> touched_;
  std::vector<const Route*> scratch_routes_;
};

}  // namespace gradsync::models
