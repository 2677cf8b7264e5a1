#include "models/topology/contention.h"

#include <algorithm>
#include <limits>

namespace gradsync::models {

ContentionModel::ContentionModel(const Topology& topology)
    : topology_(topology),
      load_(2 * topology.links().size(), 0),
      saved_(load_.size(), 0),
      saved_at_(load_.size(), 0),
      changed_at_(topology.links().size(), 0) {
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
  scratch_hops_.clear();
  scratch_first_.clear();
  for (const Route* r : routes) {
    scratch_first_.push_back(static_cast<std::uint32_t>(scratch_hops_.size()));
    compile(*r, scratch_hops_);
  }
  scratch_first_.push_back(static_cast<std::uint32_t>(scratch_hops_.size()));
  const SlotHop* hops = scratch_hops_.data();
  for (std::size_t i = 0; i < routes.size(); ++i) {
    add(hops + scratch_first_[i], hops + scratch_first_[i + 1], counts ? (*counts)[i] : 1);
  }
  bandwidth_out.resize(routes.size());
  if (limiting_hop_out) limiting_hop_out->assign(routes.size(), -1);
  for (std::size_t i = 0; i < routes.size(); ++i) {
    bandwidth_out[i] = bandwidth(hops + scratch_first_[i], hops + scratch_first_[i + 1],
                                 limiting_hop_out ? &(*limiting_hop_out)[i] : nullptr);
  }
  clear();
}

void ContentionModel::compile(const Route& route, std::vector<SlotHop>& out) const {
  // A half-duplex link has one capacity for both directions: count both in slot 0.
  for (const Hop& h : route) {
    out.push_back({static_cast<std::uint32_t>(h.link), static_cast<std::uint32_t>(2 * h.link + (h.forward ? 0 : slot_[h.link])), h.forward});
  }
}

void ContentionModel::add(const SlotHop* from, const SlotHop* to, std::int64_t flows) {
  for (const SlotHop* h = from; h != to; ++h) {
    const std::uint32_t s = h->slot;
    if (tracking_ && saved_at_[s] != stamp_) {
      saved_at_[s] = stamp_;
      saved_[s] = load_[s];
      saved_slots_.push_back(s);
    }
    if (load_[s] == 0 && !tracking_) touched_.push_back(s);
    load_[s] = static_cast<std::uint32_t>(static_cast<std::int64_t>(load_[s]) + flows);
  }
}

void ContentionModel::begin_changes() {
  ++stamp_;
  tracking_ = true;
  cleared_by_list_ = false;
}

void ContentionModel::end_changes() {
  for (std::uint32_t s : saved_slots_) {
    if (load_[s] != saved_[s]) changed_at_[s / 2] = stamp_;
  }
  saved_slots_.clear();
  tracking_ = false;
}

double ContentionModel::bandwidth(const SlotHop* from, const SlotHop* to, int* limiting_hop) const {
  double bw = std::numeric_limits<double>::infinity();
  if (limiting_hop) *limiting_hop = -1;
  int position = 0;
  for (const SlotHop* h = from; h != to; ++h, ++position) {
    double here = bandwidth_[h->link] / load_[h->slot];
    if (duplex_[h->link] > 0) {
      // Both directions busy: they share 2 x bandwidth x duplex_share.
      const std::uint32_t both = load_[2 * h->link] + load_[2 * h->link + 1];
      here = std::min(here, duplex_[h->link] / both);
    }
    if (here < bw) {
      bw = here;
      if (limiting_hop) *limiting_hop = position;
    }
  }
  return bw;
}

void ContentionModel::clear() {
  // Slots may be listed more than once (a load that fell to zero and rose again); those
  // changed while tracking are not listed.
  if (!cleared_by_list_ || touched_.size() > load_.size()) {
    std::fill(load_.begin(), load_.end(), 0u);
  } else {
    for (std::size_t s : touched_) load_[s] = 0;
  }
  touched_.clear();
  cleared_by_list_ = true;
}

}  // namespace gradsync::models
