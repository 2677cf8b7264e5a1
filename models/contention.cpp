#include "models/contention.h"

#include <algorithm>
#include <limits>

namespace gradsync::models {

ContentionModel::ContentionModel(const Topology& topology)
    : topology_(topology), load_(2 * topology.links().size(), 0) {}

void ContentionModel::share(const std::vector<Flow>& flows, std::vector<double>& bandwidth_out) {
  scratch_routes_.clear();
  for (const Flow& f : flows) scratch_routes_.push_back(&topology_.route(f.from, f.to));
  share(scratch_routes_, bandwidth_out);
}

void ContentionModel::share(const std::vector<const Route*>& routes, std::vector<double>& bandwidth_out) {
  const auto& links = topology_.links();
  auto slot = [&](const Hop& h) {
    // A half-duplex link has one capacity for both directions: count both in slot 0.
    return 2 * h.link + ((links[h.link].full_duplex && !h.forward) ? 1 : 0);
  };
  for (const Route* r : routes) {
    for (const Hop& h : *r) {
      const std::size_t s = slot(h);
      if (load_[s]++ == 0) touched_.push_back(s);
    }
  }
  bandwidth_out.resize(routes.size());
  for (std::size_t i = 0; i < routes.size(); ++i) {
    double bw = std::numeric_limits<double>::infinity();
    for (const Hop& h : *routes[i]) bw = std::min(bw, links[h.link].bandwidth_Bps / load_[slot(h)]);
    bandwidth_out[i] = bw;
  }
  for (std::size_t s : touched_) load_[s] = 0;
  touched_.clear();
}

}  // namespace gradsync::models
