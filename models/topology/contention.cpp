#include "models/topology/contention.h"

#include <algorithm>
#include <limits>

namespace gradsync::models {

ContentionModel::ContentionModel(const Topology& topology) : topology_(topology), load_(2 * topology.links().size(), 0) {
  for (const Link& l : topology.links()) {
    slot_.push_back(l.full_duplex ? 1 : 0);
    bandwidth_.push_back(l.bandwidth_Bps);
    duplex_.push_back(l.full_duplex && l.duplex_share < 1 ? 2 * l.bandwidth_Bps * l.duplex_share : 0);
  }
}

void ContentionModel::share(const std::vector<Flow>& flows, std::vector<double>& bandwidth_out) {
  scratch_routes_.clear();
  for (const Flow& f : flows) scratch_routes_.push_back(&topology_.route(f.from, f.to));
  share(scratch_routes_, bandwidth_out);
}

void ContentionModel::share(const std::vector<const Route*>& routes, std::vector<double>& bandwidth_out,
                            std::vector<int>* limiting_hop_out, const std::vector<std::uint32_t>* counts) {
  // A half-duplex link has one capacity for both directions: count both in slot 0.
  auto slot = [&](const Hop& h) { return 2 * h.link + (h.forward ? 0 : slot_[h.link]); };
  for (std::size_t i = 0; i < routes.size(); ++i) {
    const std::uint32_t n = counts ? (*counts)[i] : 1;
    for (const Hop& h : *routes[i]) {
      const std::size_t s = slot(h);
      if (load_[s] == 0) touched_.push_back(s);
      load_[s] += n;
    }
  }
  bandwidth_out.resize(routes.size());
  if (limiting_hop_out) limiting_hop_out->assign(routes.size(), -1);
  for (std::size_t i = 0; i < routes.size(); ++i) {
    double bw = std::numeric_limits<double>::infinity();
    int position = 0;
    for (const Hop& h : *routes[i]) {
      double here = bandwidth_[h.link] / load_[slot(h)];
      if (duplex_[h.link] > 0) {
        // Both directions busy: they share 2 x bandwidth x duplex_share.
        const std::uint32_t both = load_[2 * h.link] + load_[2 * h.link + 1];
        here = std::min(here, duplex_[h.link] / both);
      }
      if (here < bw) {
        bw = here;
        if (limiting_hop_out) (*limiting_hop_out)[i] = position;
      }
      ++position;
    }
    bandwidth_out[i] = bw;
  }
  for (std::size_t s : touched_) load_[s] = 0;
  touched_.clear();
}

}  // namespace gradsync::models
