#include "models/topology/concurrent_probes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "models/topology/contention.h"

namespace gradsync::models {

namespace {

std::map<std::string, std::size_t> gpu_index(const MatrixForm& form) {
  std::map<std::string, std::size_t> index_of;
  for (std::size_t i = 0; i < form.gpus.size(); ++i) index_of[form.gpus[i]] = i;
  return index_of;
}

}  // namespace

bool ProbeGroups::one_group(const std::vector<std::size_t>& a, const std::vector<std::size_t>& b) const {
  const int g = of[a.front()];
  if (g < 0) return true;
  for (std::size_t i : a) if (of[i] != g) return false;
  for (std::size_t i : b) if (of[i] != g) return false;
  return true;
}

ProbeGroups find_probe_groups(const MatrixForm& form, const std::vector<std::vector<bool>>& direct) {
  const std::size_t n = form.size();
  // Concurrent-flow probes reveal switches whose uplink is as fast as the GPUs' own links
  // (pair bandwidths alone cannot): flows that slow each other down cross a shared link.
  // In a probe where every GPU sends and receives at most one flow, no GPU link is shared,
  // so a slowed flow crosses a shared uplink: its two ends sit behind different switches.
  // (slowed: below 70 % of the pair's bandwidth alone, well under the few percent two
  // directions of one link may cost, by more than twice the flow's measured spread). GPUs whose sets of such partners look alike
  // (Jaccard >= 0.5) and that never slowed
  // each other form one group; groups are clustered first.
  ProbeGroups g;
  g.of.assign(n, -1);
  std::vector<int>& probe_group = g.of;
  std::vector<std::set<std::size_t>> slowed_partners(n);
  std::vector<std::vector<bool>> slowed(n, std::vector<bool>(n, false));
  {
    const auto index_of = gpu_index(form);
    for (const auto& probe : form.concurrent_probes) {
      std::vector<int> sends(n, 0), receives(n, 0);
      for (const auto& [a, b] : probe.flows) {
        ++sends[index_of.at(a)];
        ++receives[index_of.at(b)];
      }
      if (*std::max_element(sends.begin(), sends.end()) > 1 || *std::max_element(receives.begin(), receives.end()) > 1) continue;
      for (std::size_t f = 0; f < probe.flows.size(); ++f) {
        const std::size_t i = index_of.at(probe.flows[f].first), j = index_of.at(probe.flows[f].second);
        // Slowed beyond what the flow's own repetitions disagreed by (twice its spread).
        const double noise = f < probe.spread.size() ? 2 * probe.spread[f] : 0.0;
        if (probe.bandwidth_Bps[f] * (1 + noise) < 0.7 * *form.bandwidth_Bps.at(i, j)) {
          slowed[i][j] = slowed[j][i] = true;
          slowed_partners[i].insert(j);
          slowed_partners[j].insert(i);
        }
      }
    }
    bool any = false;
    for (const auto& partners : slowed_partners) any = any || !partners.empty();
    if (any) {
      std::vector<std::size_t> parent(n);
      for (std::size_t i = 0; i < n; ++i) parent[i] = i;
      auto root = [&](std::size_t x) {
        while (parent[x] != x) x = parent[x] = parent[parent[x]];
        return x;
      };
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = i + 1; j < n; ++j) {
          if (slowed[i][j]) continue;
          std::set<std::size_t> a = slowed_partners[i], b = slowed_partners[j];
          a.erase(j);
          b.erase(i);
          std::size_t common = 0;
          for (std::size_t x : a) common += b.count(x);
          const std::size_t all = a.size() + b.size() - common;
          if (all > 0 && 2 * common >= all) parent[root(i)] = root(j);
        }
      }
      std::map<std::size_t, int> ids;
      for (std::size_t i = 0; i < n; ++i) {
        const auto r = root(i);
        if (!ids.count(r)) ids[r] = static_cast<int>(ids.size());
        probe_group[i] = ids[r];
      }
      // Every GPU a group of its own (a ring whose every flow ran slow: its neighbours look
      // alike to none) is no grouping.
      if (ids.size() > 1 && ids.size() < n) {
        std::string text = "concurrent-flow probes show " + std::to_string(ids.size()) + " groups behind shared links:";
        for (const auto& [r, id] : ids) {
          text += " {";
          bool first = true;
          for (std::size_t i = 0; i < n; ++i) {
            if (probe_group[i] == id) {
              text += (first ? "" : " ") + form.gpus[i];
              first = false;
            }
          }
          text += "}";
        }
        g.note = text;
      } else {
        std::fill(probe_group.begin(), probe_group.end(), -1);
      }
    }
  }
  // The slowest pair between two probe groups, measured alone: where a probe group's own pairs
  // are no faster than that, the pairs alone show no hierarchy in it (its uplink is as fast as
  // its GPUs' links, what the probes are for), and the few percent between them is the pairs'
  // noise: the group joins one switch at once.
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      if (probe_group[i] < 0 || probe_group[i] == probe_group[j] || direct[i][j]) continue;
      const double bw = *form.bandwidth_Bps.symmetric(i, j);
      g.across_Bps = std::min(g.across_Bps.value_or(bw), bw);
    }
  }
  return g;
}

double probe_uplink_Bps(const MatrixForm& form, const std::vector<std::size_t>& members) {
  std::vector<bool> inside(form.size(), false);
  for (std::size_t i : members) inside[i] = true;
  const auto index_of = gpu_index(form);
  double best = 0;
  for (const auto& probe : form.concurrent_probes) {
    double out = 0, in = 0;
    for (std::size_t f = 0; f < probe.flows.size(); ++f) {
      const bool from = inside[index_of.at(probe.flows[f].first)], to = inside[index_of.at(probe.flows[f].second)];
      if (from && !to) out += probe.bandwidth_Bps[f];
      if (!from && to) in += probe.bandwidth_Bps[f];
    }
    best = std::max({best, out, in});
  }
  return best;
}

double fastest_pair_Bps(const MatrixForm& form, const std::vector<std::size_t>& a, const std::vector<std::size_t>& b,
                        const std::vector<std::vector<bool>>& direct) {
  double best = 0;
  for (std::size_t i : a) {
    for (std::size_t j : b) {
      if (!direct[i][j]) best = std::max({best, *form.bandwidth_Bps.at(i, j), *form.bandwidth_Bps.at(j, i)});
    }
  }
  return best;
}

std::vector<std::string> apply_probe_duplex(const MatrixForm& form, const std::string& name, const std::vector<Node>& nodes,
                                            std::vector<Link>& links, double tolerance) {
  const double tol = tolerance;
  std::vector<std::string> notes;
  if (form.concurrent_probes.empty()) return notes;
  // Flows at once that load links in both directions (a ring: every GPU sends and receives at
  // once), what pairs alone cannot show. A link every flow of which (either direction) ran
  // slower than the tree gives it, beyond the flows' spread, cannot carry both directions at
  // full rate: its duplex share becomes what reproduces the fastest of those flows, 2 x
  // bandwidth x share over its flows. A slowdown more than half duplex explains is not the
  // link's duplex (a shared link elsewhere), nor is a shortfall in one direction (all-to-one):
  // left to check_probes. Each link: the most any probe that loads it both ways
  // showed it carrying (a probe whose flows there were not all slowed shows full duplex): what
  // one probe got through it, the link can do, and a probe slower than that was held back
  // elsewhere (a ring of GPUs a shift apart crosses shared switch uplinks the shift-1 ring does
  // not, with the same one flow each way on every GPU's own link).
  const Topology current(name, nodes, links, name);
  ContentionModel contention(current);
  std::vector<double> modeled;
  std::map<std::size_t, std::vector<double>> needs;  // link -> the shares its probes need
  for (const auto& probe : form.concurrent_probes) {
    std::vector<Flow> flows;
    for (const auto& [a, b] : probe.flows) flows.push_back({*current.find(a), *current.find(b)});
    contention.share(flows, modeled);
    struct Load {
      int forward = 0, backward = 0;
      double fastest_Bps = 0;
      bool all_slowed = true;
    };
    std::map<std::size_t, Load> loads;
    for (std::size_t k = 0; k < flows.size(); ++k) {
      const double noise = std::max(0.05, k < probe.spread.size() ? 2 * probe.spread[k] : 0.0);
      const bool slowed = probe.bandwidth_Bps[k] * (1 + noise) < modeled[k];
      for (const Hop& h : current.route(flows[k].from, flows[k].to)) {
        Load& load = loads[h.link];
        ++(h.forward ? load.forward : load.backward);
        load.fastest_Bps = std::max(load.fastest_Bps, probe.bandwidth_Bps[k]);
        load.all_slowed = load.all_slowed && slowed;
      }
    }
    for (const auto& [l, load] : loads) {
      if (load.forward == 0 || load.backward == 0 || !links[l].full_duplex) continue;
      const double need = load.all_slowed ? load.fastest_Bps * (load.forward + load.backward) / (2 * links[l].bandwidth_Bps) : 1.0;
      if (need < 0.5 * (1 - tol)) continue;
      needs[l].push_back(std::min(1.0, std::max(0.5, need)));
    }
  }
  for (const auto& [l, shares_needed] : needs) {
    const double share = *std::max_element(shares_needed.begin(), shares_needed.end());
    if (share >= links[l].duplex_share * (1 - tol)) continue;
    char buf[320];
    if (share <= 0.55) {
      links[l].full_duplex = false;
      links[l].duplex_share = 1;
      std::snprintf(buf, sizeof buf, "link %s -- %s: both directions at once get about the bandwidth of one: half duplex "
                    "(from %zu concurrent-flow probes)", nodes[links[l].a].id.c_str(), nodes[links[l].b].id.c_str(),
                    shares_needed.size());
    } else {
      links[l].duplex_share = share;
      std::snprintf(buf, sizeof buf, "link %s -- %s: both directions at once keep %.0f %% of their bandwidth (from %zu "
                    "concurrent-flow probes, which load both directions)", nodes[links[l].a].id.c_str(),
                    nodes[links[l].b].id.c_str(), 100 * share, shares_needed.size());
    }
    notes.push_back(buf);
  }
  return notes;
}

std::vector<ProbeCheck> check_probes(const MatrixForm& form, const Topology& topology) {
  std::vector<ProbeCheck> checks;
  // Concurrent-flow probes: does the inferred tree share links where the measurement did?
  ContentionModel contention(topology);
  std::vector<double> shared;
  for (const auto& probe : form.concurrent_probes) {
    ProbeCheck check;
    std::vector<Flow> flows;
    for (const auto& [a, b] : probe.flows) flows.push_back({*topology.find(a), *topology.find(b)});
    contention.share(flows, shared);
    // The least shared and the most shared flow of the probe, measured vs modeled.
    double measured_min = 1e300, measured_max = 0, modeled_min = 1e300, modeled_max = 0;
    for (std::size_t k = 0; k < flows.size(); ++k) {
      const double alone_model = topology.route_bottleneck_Bps(flows[k].from, flows[k].to);
      const double alone_measured = topology.bottleneck_Bps(flows[k].from, flows[k].to);
      const double modeled = shared[k] / alone_model, measured = probe.bandwidth_Bps[k] / alone_measured;
      check.agrees = check.agrees && std::fabs(modeled - measured) <= 0.15;
      measured_min = std::min(measured_min, measured);
      measured_max = std::max(measured_max, measured);
      modeled_min = std::min(modeled_min, modeled);
      modeled_max = std::max(modeled_max, modeled);
    }
    check.measured_share[0] = measured_min;
    check.measured_share[1] = measured_max;
    check.modeled_share[0] = modeled_min;
    check.modeled_share[1] = modeled_max;
    // All into one GPU, or all out of one (all-to-one, one-to-all): named by that GPU.
    const bool into = std::all_of(probe.flows.begin(), probe.flows.end(), [&](const auto& f) { return f.second == probe.flows[0].second; });
    const bool out = std::all_of(probe.flows.begin(), probe.flows.end(), [&](const auto& f) { return f.first == probe.flows[0].first; });
    check.description = flows.size() == 2 ? probe.flows[0].first + "->" + probe.flows[0].second + " with " +
                                                probe.flows[1].first + "->" + probe.flows[1].second
                        : into ? std::to_string(flows.size()) + " flows into " + probe.flows[0].second
                        : out  ? std::to_string(flows.size()) + " flows out of " + probe.flows[0].first
                               : std::to_string(flows.size()) + " flows " + probe.flows[0].first + "->" +
                                     probe.flows[0].second + ", ...";
    checks.push_back(check);
  }
  return checks;
}

}  // namespace gradsync::models
