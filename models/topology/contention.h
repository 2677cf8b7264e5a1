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

  // The same rule for a caller that keeps the loads from one set of flows to the next and
  // changes only what changed (the analytic walk's consecutive rounds):
  // A route's hops as the rule reads them (compile() appends them to `out`).
  struct SlotHop {
    std::uint32_t link = 0;
    std::uint32_t slot = 0;  // its load's counter
    bool forward = true;
  };
  void compile(const Route& route, std::vector<SlotHop>& out) const;
  // Adds `flows` (negative: removes them) along the hops [from, to).
  void add(const SlotHop* from, const SlotHop* to, std::int64_t flows);
  // Between begin_changes() and end_changes(), add() remembers what it changed; after, changed()
  // says whether a link's load differs from what it was at begin_changes().
  void begin_changes();
  void end_changes();
  bool changed(std::uint32_t link) const { return changed_at_[link] == stamp_; }
  // The share a flow along [from, to) gets under the loads added, and with `limiting_hop`
  // the position of the hop that sets it (-1 for none: a local copy gets +infinity).
  double bandwidth(const SlotHop* from, const SlotHop* to, int* limiting_hop = nullptr) const;
  // Every load back to zero.
  void clear();

 private:
  const Topology& topology_;
  std::vector<std::uint32_t> load_;  // per link and direction: 2 * link + (forward ? 0 : 1)
  // Per link, what share() reads of it, kept together: 1 when its directions count apart (full
  // duplex), its bandwidth, and 2 x bandwidth x duplex_share where both directions interfere (else 0).
  std::vector<std::size_t> slot_;
  std::vector<double> bandwidth_, duplex_;
  std::vector<std::size_t> touched_;  // slots added to since the last clear (some twice)
  std::vector<SlotHop> scratch_hops_;
  std::vector<std::uint32_t> scratch_first_;
  std::vector<const Route*> scratch_routes_;
  // What begin_changes() .. end_changes() changed: per slot, its load at begin_changes() once
  // touched (saved_at_ the stamp it was saved at); per link, the stamp it last changed at.
  bool tracking_ = false;
  bool cleared_by_list_ = true;  // false once loads changed while tracking: clear() resets all
  std::uint64_t stamp_ = 0;
  std::vector<std::uint32_t> saved_;
  std::vector<std::uint64_t> saved_at_, changed_at_;
  std::vector<std::uint32_t> saved_slots_;
};

}  // namespace gradsync::models
