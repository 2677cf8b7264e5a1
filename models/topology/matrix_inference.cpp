#include "models/topology/matrix_inference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "models/support/format.h"
#include "models/topology/concurrent_probes.h"
#include "models/topology/hardware.h"
#include "models/support/error.h"
#include "models/support/units.h"

namespace gradsync::models {
namespace {

struct Cluster {
  std::vector<std::size_t> gpus;  // matrix indices
  std::size_t root = 0;  // node index of the cluster's top node
  double depth_latency_s = 0;  // latency from a member GPU up to `root`
};

// nvidia-smi topo -m's non-NVLink classes, closest first (NCCL's PATH_PIX .. PATH_SYS).
enum ClassLevel { kLevelPix, kLevelPxb, kLevelPhb, kLevelNode, kLevelSys };

ClassLevel class_level(const std::string& c) {
  if (c == "PIX") return kLevelPix;
  if (c == "PXB") return kLevelPxb;
  if (c == "PHB") return kLevelPhb;
  if (c == "NODE") return kLevelNode;
  return kLevelSys;  // SYS, and SOC (its old name)
}

std::string fmt(const char* format, double a, double b = 0, double c = 0);

// NVLinks between each pair: topo -m's NV# where the classes were given. Without them, a pair
// whose measured rate is more than any PCIe link of its GPUs carries (their model's generation,
// x16, by the PCI-SIG's rates; Gen5 x16 where the model is not known) is joined by NVLink: as many
// links as that rate needs at the model's per-link rate, at least one, at most the module has.
std::vector<std::vector<int>> pair_nvlinks(const MatrixForm& form, std::vector<std::string>& notes) {
  const std::size_t n = form.size();
  std::vector<std::vector<int>> nv(n, std::vector<int>(n, 0));
  if (form.topo_classes) {
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) nv[i][j] = i == j ? 0 : nvlink_count((*form.topo_classes)[i][j]);
    }
    return nv;
  }
  if (form.nominal) return nv;
  const hardware::GpuModel* gpu = hardware::gpu_model_of(form.description);
  const double pcie = hardware::pcie_raw_GBps(gpu ? gpu->pcie_gen : 5, 16) * 1e9;
  const int cc = gpu ? gpu->compute_capability : 90;
  const double per_link = hardware::nvlink_physical_GBps_per_link(cc) * 1e9;
  const int most = gpu && gpu->nvlinks > 0 ? gpu->nvlinks : hardware::nvlinks_per_gpu(cc);
  double lo = 0, hi = 0;
  int found = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const std::optional<double> rate = form.bandwidth_Bps.symmetric(i, j);
      if (!rate || *rate <= pcie) continue;
      nv[i][j] = std::clamp(static_cast<int>(std::lround(*rate / per_link)), 1, most);
      lo = found == 0 ? *rate : std::min(lo, *rate);
      hi = std::max(hi, *rate);
      ++found;
    }
  }
  if (found > 0) {
    notes.push_back(fmt("%.0f GPU pairs measure %.1f-%.1f GB/s, ", found / 2.0, Bps_to_GBps(lo), Bps_to_GBps(hi)) +
                    "more than a PCIe link of " + (gpu ? std::string(gpu->name) + "'s Gen" + std::to_string(gpu->pcie_gen) : std::string("Gen5")) +
                    fmt(" x16 carries (%.1f GB/s): joined by NVLink, ", Bps_to_GBps(pcie)) +
                    fmt("%.0f GB/s a link", Bps_to_GBps(per_link)) + (gpu ? " (" + std::string(gpu->name) + ")" : std::string(" (GPU model not known)")));
  }
  return nv;
}

std::string fmt(const char* format, double a, double b, double c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, format, a, b, c);
  return buf;
}

}  // namespace

std::size_t InferenceReport::unexplained_count() const {
  return static_cast<std::size_t>(std::count_if(pairs.begin(), pairs.end(), [](const PairCheck& p) { return !p.explained; }));
}

double InferenceReport::max_abs_error() const {
  double worst = 0;
  for (const auto& p : pairs) {
    if (!p.staged) worst = std::max(worst, std::fabs(p.relative_error()));
  }
  return worst;
}

std::string InferenceReport::text() const {
  std::ostringstream out;
  out << (nominal ? "nominal pair figures reproduced by the topology built from the classes:\n"
                  : "measured pairs reproduced by the inferred topology:\n");
  out << (nominal ? "  from      to         nominal    modeled     error\n" : "  from      to        measured    modeled     error\n");
  for (const auto& p : pairs) {
    char line[200];
    std::snprintf(line, sizeof line, "  %-9s %-9s %7.2f GB/s %7.2f GB/s %+6.2f %%%s\n", p.from.c_str(), p.to.c_str(),
                  Bps_to_GBps(p.measured_Bps), Bps_to_GBps(p.modeled_Bps), 100 * p.relative_error(),
                  !p.explained ? "  NOT EXPLAINED" : p.staged ? "  staged through host memory: the links allow it" : "");
    out << line;
  }
  char summary[160];
  const bool staged = std::any_of(pairs.begin(), pairs.end(), [](const PairCheck& p) { return p.staged; });
  std::snprintf(summary, sizeof summary, "%zu of %zu pairs explained; largest error %.2f %%%s\n", pairs.size() - unexplained_count(),
                pairs.size(), 100 * max_abs_error(), staged ? " (pairs with peer access)" : "");
  out << summary;
  if (!probes.empty()) {
    std::size_t agreeing = 0;
    out << "concurrent flows (share of the bandwidth alone: smallest and largest, measured vs inferred tree):\n";
    for (const auto& p : probes) {
      char line[240];
      std::snprintf(line, sizeof line, "  %-28s %5.0f %% %5.0f %%   vs %5.0f %% %5.0f %%%s\n", p.description.c_str(),
                    100 * p.measured_share[0], 100 * p.measured_share[1], 100 * p.modeled_share[0],
                    100 * p.modeled_share[1], p.agrees ? "" : "  DIFFERS");
      out << line;
      agreeing += p.agrees ? 1 : 0;
    }
    out << agreeing << " of " << probes.size() << " probes agree with the inferred sharing (within 15 points)\n";
  }
  for (const auto& n : notes) out << "note: " << n << "\n";
  return out.str();
}

std::string describe_links(const Topology& t) {
  std::ostringstream out;
  for (const auto& l : t.links()) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-10s -- %-10s %8.2f GB/s %8.2f us  %s%s%s\n", t.node(l.a).id.c_str(),
                  t.node(l.b).id.c_str(), Bps_to_GBps(l.bandwidth_Bps), s_to_us(l.latency_s),
                  !l.full_duplex ? "half duplex" : l.duplex_share < 1 ? ("duplex " + std::to_string(l.duplex_share).substr(0, 4)).c_str() : "full duplex",
                  l.label.empty() ? "" : "  ", l.label.c_str());
    out << line;
  }
  return out.str();
}

namespace {
InferredTopology infer(const MatrixForm& form, const InferenceOptions& options, bool use_probe_groups);

std::size_t agreeing(const InferenceReport& r) {
  return static_cast<std::size_t>(std::count_if(r.probes.begin(), r.probes.end(), [](const ProbeCheck& p) { return p.agrees; }));
}
}  // namespace

InferredTopology infer_topology(const MatrixForm& form, const InferenceOptions& options) {
  InferredTopology plain = infer(form, options, false);
  if (form.concurrent_probes.empty()) return plain;
  // Switches found from the probes are kept only if the probes agree with them better.
  InferredTopology grouped = infer(form, options, true);
  // ... and only if the tree with them still explains the pairs, measured alone and steadier
  // than flows measured all at once (a busy host slows some of those for its own reasons): as
  // many of them, or none by more than the tolerance worse than the tree without them leaves
  // its worst (pairs a few percent apart on a busy machine leave some outside the tolerance in
  // any tree: on validate's emulated box 13 of 56 flat, worst 4.9 %, 14 with the switches, worst
  // 5.2 %; where a busy core made the probes suggest the wrong groups, the pairs' worst went from
  // 0.7 % to 25 %).
  const bool probes_better = agreeing(grouped.report) > agreeing(plain.report);
  if (probes_better && (grouped.report.unexplained_count() <= plain.report.unexplained_count() ||
                        grouped.report.max_abs_error() <= plain.report.max_abs_error() + options.tolerance)) {
    return grouped;
  }
  if (probes_better) {
    plain.report.notes.push_back("the concurrent-flow probes suggested switch groups, but a tree with them leaves " +
                                 std::to_string(grouped.report.unexplained_count()) + " measured pairs unexplained (" +
                                 std::to_string(plain.report.unexplained_count()) +
                                 " without them): the pairs measured alone win, the groups are not used");
    return plain;
  }
  if (grouped.report.notes != plain.report.notes) {
    plain.report.notes.push_back("the concurrent-flow probes suggested switch groups, but a tree with them explains the "
                                 "probes no better (" + std::to_string(agreeing(grouped.report)) + " vs " +
                                 std::to_string(agreeing(plain.report)) + " agreeing): not used");
  }
  return plain;
}

namespace {
InferredTopology infer(const MatrixForm& form, const InferenceOptions& options, bool use_probe_groups) {
  const std::size_t n = form.size();
  const double tol = options.tolerance;
  std::vector<Node> nodes;
  std::vector<Link> links;
  std::vector<std::string> notes;

  for (const auto& id : form.gpus) nodes.push_back({id, NodeKind::gpu});
  // Nominal (nvidia-smi topo -m alone): the classes shape the tree and give each link its rate.
  const NominalRates* nominal = form.topo_classes && form.nominal ? &*form.nominal : nullptr;

  // Pairs joined by NVLink get a direct link and do not shape the switch tree. A GPU with more
  // NVLinks to its peers than any GPU has (18: Hopper's and Blackwell's) reaches them through an
  // NVSwitch (an HGX board's NV18 to each of 7 peers): one link each to the switch instead.
  std::vector<std::vector<bool>> direct(n, std::vector<bool>(n, false));
  const std::vector<std::vector<int>> nvlinks = pair_nvlinks(form, notes);
  const bool measured_nvlinks = !form.topo_classes;  // found from the rates, not given by topo -m
  bool switched = false, any_nvlink = false;
  for (std::size_t i = 0; i < n && !switched; ++i) {
    int links = 0;
    for (std::size_t j = 0; j < n; ++j) links += nvlinks[i][j];
    switched = links > hardware::nvlinks_per_gpu(100);
    any_nvlink = any_nvlink || links > 0;
  }
  if (switched) {
    const std::size_t nvswitch = nodes.size();
    nodes.push_back({"nvswitch", NodeKind::nvswitch});
    nodes.back().facts.sharp = form.nvlink_sharp;
    for (std::size_t i = 0; i < n; ++i) {
      int most = 0;
      double fastest = 0, latency_sum = 0;
      std::size_t latencies = 0;
      for (std::size_t j = 0; j < n; ++j) {
        const int nv = nvlinks[i][j];
        if (nv == 0) continue;
        direct[i][j] = true;
        most = std::max(most, nv);
        fastest = std::max(fastest, nominal ? 0.0 : *form.bandwidth_Bps.symmetric(i, j));
        if (form.latency_s && form.latency_s->symmetric(i, j)) {
          latency_sum += *form.latency_s->symmetric(i, j);
          ++latencies;
        }
      }
      if (most == 0) continue;
      // Rates say how fast, not how many links: a module's own count where its name gives it.
      const hardware::GpuModel* gpu = hardware::gpu_model_of(form.description);
      if (measured_nvlinks && gpu && gpu->nvlinks > 0) most = gpu->nvlinks;
      Link l;
      l.a = i;
      l.b = nvswitch;
      l.bandwidth_Bps = nominal ? most * nominal->nvlink_Bps_per_link : fastest;
      l.latency_s = latencies ? latency_sum / static_cast<double>(latencies) / 2 : options.default_link_latency_s;
      l.label = "nvswitch x" + std::to_string(most);
      links.push_back(l);
    }
    notes.push_back(std::string(measured_nvlinks ? "NVLink pairs" : "NVLink classes") +
                    " give a GPU more than 18 NVLinks (the most a GPU has): the GPUs reach each other through an NVSwitch, each by "
                    "its NV# links");
  } else if (any_nvlink) {
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = i + 1; j < n; ++j) {
        const int nv = std::max(nvlinks[i][j], nvlinks[j][i]);
        if (nv == 0) continue;
        direct[i][j] = direct[j][i] = true;
        Link l;
        l.a = i;
        l.b = j;
        l.bandwidth_Bps = nominal ? nv * nominal->nvlink_Bps_per_link : *form.bandwidth_Bps.symmetric(i, j);
        l.latency_s = form.latency_s && form.latency_s->symmetric(i, j) ? *form.latency_s->symmetric(i, j)
                                                                          : options.default_link_latency_s;
        l.label = "nvlink x" + std::to_string(nv);
        links.push_back(l);
      }
    }
  }

  auto sym_bw = [&](std::size_t i, std::size_t j) { return *form.bandwidth_Bps.symmetric(i, j); };
  auto sym_lat = [&](std::size_t i, std::size_t j) -> std::optional<double> {
    if (!form.latency_s) return std::nullopt;
    return form.latency_s->symmetric(i, j);
  };

  // What flows measured at once show (concurrent_probes.h): switch groups, and the slowest
  // pair between them measured alone.
  const ProbeGroups probe_groups = use_probe_groups ? find_probe_groups(form, direct) : ProbeGroups{std::vector<int>(n, -1), {}, {}};
  if (probe_groups.note) notes.push_back(*probe_groups.note);
  const std::optional<double>& across_groups = probe_groups.across_Bps;


  std::vector<Cluster> clusters;
  for (std::size_t i = 0; i < n; ++i) clusters.push_back({{i}, i, 0.0});

  // Mean bandwidth between two clusters over their tree (non-NVLink) pairs, if any.
  auto linkage = [&](const Cluster& a, const Cluster& b) -> std::optional<double> {
    double sum = 0;
    std::size_t count = 0;
    for (std::size_t i : a.gpus) {
      for (std::size_t j : b.gpus) {
        if (direct[i][j]) continue;
        sum += sym_bw(i, j);
        ++count;
      }
    }
    if (count == 0) return std::nullopt;
    return sum / count;
  };

  std::size_t switches = 0, roots = 0, cpus = 0;
  std::map<std::size_t, std::size_t> lowest_gpu;  // internal node -> lowest GPU index below it
  while (clusters.size() > 1) {
    const std::size_t c = clusters.size();
    std::vector<std::vector<std::optional<double>>> link_bw(c, std::vector<std::optional<double>>(c));
    double best = -1;
    std::size_t best_a = 0;
    std::vector<std::vector<bool>> compatible(c, std::vector<bool>(c, true));
    for (std::size_t a = 0; a < c; ++a) {
      for (std::size_t b = a + 1; b < c; ++b) {
        link_bw[a][b] = link_bw[b][a] = linkage(clusters[a], clusters[b]);
        compatible[a][b] = compatible[b][a] = probe_groups.one_group(clusters[a].gpus, clusters[b].gpus);
      }
    }
    // Nominal: only the closest class joins clusters now (two clusters are as far apart as
    // their farthest pair); the bandwidths, all nominal, only order pairs of that class.
    int level = kLevelPix;
    if (nominal) {
      std::vector<std::vector<int>> pair_level(c, std::vector<int>(c, kLevelSys));
      int closest = kLevelSys;
      for (std::size_t a = 0; a < c; ++a) {
        for (std::size_t b = a + 1; b < c; ++b) {
          int far = kLevelPix;
          for (std::size_t i : clusters[a].gpus) {
            for (std::size_t j : clusters[b].gpus) {
              if (direct[i][j]) continue;
              far = std::max({far, static_cast<int>(class_level((*form.topo_classes)[i][j])),
                              static_cast<int>(class_level((*form.topo_classes)[j][i]))});
            }
          }
          pair_level[a][b] = pair_level[b][a] = far;
          if (link_bw[a][b]) closest = std::min(closest, far);
        }
      }
      for (std::size_t a = 0; a < c; ++a) {
        for (std::size_t b = 0; b < c; ++b) {
          if (a != b && pair_level[a][b] != closest) link_bw[a][b].reset();
        }
      }
      level = closest;
    }
    // Within probe groups first; across them once each group is one cluster.
    bool restricted = false;
    for (int pass = 0; pass < 2 && best < 0; ++pass) {
      restricted = pass == 0;
      for (std::size_t a = 0; a < c; ++a) {
        for (std::size_t b = a + 1; b < c; ++b) {
          if (restricted && !compatible[a][b]) continue;
          if (link_bw[a][b] && *link_bw[a][b] > best) {
            best = *link_bw[a][b];
            best_a = a;
          }
        }
      }
    }
    if (best < 0) break;  // no measured pair joins the remaining clusters

    // The group: clusters reachable from best_a through linkages within tolerance of `best`
    // (within a probe group, of the pairs across groups where those are no slower).
    const double threshold = (restricted && across_groups ? std::min(best, *across_groups) : best) * (1 - tol);
    std::vector<std::size_t> group = {best_a};
    std::vector<bool> in_group(c, false);
    in_group[best_a] = true;
    for (std::size_t k = 0; k < group.size(); ++k) {
      for (std::size_t other = 0; other < c; ++other) {
        if (!in_group[other] && link_bw[group[k]][other] && *link_bw[group[k]][other] >= threshold &&
            (!restricted || compatible[group[k]][other])) {
          in_group[other] = true;
          group.push_back(other);
        }
      }
    }
    std::sort(group.begin(), group.end());

    const bool all_single = std::all_of(group.begin(), group.end(), [&](std::size_t g) { return clusters[g].gpus.size() == 1; });
    Node sw;
    if (nominal) {
      // The node the class names: a PCIe switch (PIX, PXB), a host bridge (PHB), a CPU (NODE).
      if (level <= kLevelPxb) sw = {"switch" + std::to_string(switches++), NodeKind::pcie_switch};
      if (level == kLevelPhb) sw = {"root" + std::to_string(roots++), NodeKind::root_complex};
      if (level == kLevelNode) sw = {"cpu" + std::to_string(cpus++), NodeKind::cpu_socket};
      if (level == kLevelSys) {
        // Across sockets: each group hangs from its CPU (by its PCIe link when a GPU or a
        // switch tops it), and the CPUs are joined by the inter-socket link, or for more than
        // two by one such link each to a hub (a ring's hops then cross two, each at that rate).
        for (std::size_t g : group) {
          Cluster& member = clusters[g];
          if (nodes[member.root].kind == NodeKind::cpu_socket) continue;
          const std::size_t cpu = nodes.size();
          nodes.push_back({"cpu" + std::to_string(cpus++), NodeKind::cpu_socket});
          lowest_gpu[cpu] = *std::min_element(member.gpus.begin(), member.gpus.end());
          Link l;
          l.a = member.root;
          l.b = cpu;
          l.bandwidth_Bps = nominal->pcie_Bps;
          l.latency_s = options.default_link_latency_s;
          l.label = "pcie";
          links.push_back(l);
          member.depth_latency_s += l.latency_s;
          member.root = cpu;
        }
        if (group.size() == 2) {
          Link l;
          l.a = clusters[group[0]].root;
          l.b = clusters[group[1]].root;
          l.bandwidth_Bps = nominal->inter_socket_Bps;
          l.latency_s = options.default_link_latency_s;
          l.label = "inter-socket";
          links.push_back(l);
          Cluster merged{clusters[group[0]].gpus, clusters[group[0]].root, clusters[group[0]].depth_latency_s};
          merged.gpus.insert(merged.gpus.end(), clusters[group[1]].gpus.begin(), clusters[group[1]].gpus.end());
          std::vector<Cluster> next;
          for (std::size_t k = 0; k < c; ++k) {
            if (!in_group[k]) next.push_back(std::move(clusters[k]));
          }
          next.push_back(std::move(merged));
          clusters = std::move(next);
          continue;
        }
        sw = {"smp", NodeKind::cpu_socket};
      }
    } else if (all_single) {
      sw = {"switch" + std::to_string(switches++), NodeKind::pcie_switch};
    } else {
      sw = {"root" + std::to_string(roots++), NodeKind::root_complex};
    }
    const std::size_t sw_index = nodes.size();
    nodes.push_back(sw);

    // Mean pair latency across this new node (pairs whose paths meet here).
    std::optional<double> level_latency;
    {
      double sum = 0;
      std::size_t count = 0;
      for (std::size_t x = 0; x < group.size(); ++x) {
        for (std::size_t y = x + 1; y < group.size(); ++y) {
          for (std::size_t i : clusters[group[x]].gpus) {
            for (std::size_t j : clusters[group[y]].gpus) {
              if (direct[i][j]) continue;
              if (auto l = sym_lat(i, j)) {
                sum += *l;
                ++count;
              }
            }
          }
        }
      }
      if (count) level_latency = sum / count;
    }

    Cluster merged;
    merged.root = sw_index;
    std::size_t lowest = n;
    for (std::size_t g : group) lowest = std::min(lowest, *std::min_element(clusters[g].gpus.begin(), clusters[g].gpus.end()));
    if (!nominal || level != kLevelSys) lowest_gpu[sw_index] = lowest;  // the hub of sockets keeps its name
    double depth_sum = 0;
    for (std::size_t g : group) {
      const Cluster& member = clusters[g];
      double sum = 0;
      std::size_t count = 0;
      for (std::size_t other : group) {
        if (other != g && link_bw[g][other]) {
          sum += *link_bw[g][other];
          ++count;
        }
      }
      Link l;
      l.a = member.root;
      l.b = sw_index;
      l.bandwidth_Bps = count ? sum / count : best;
      // A group's uplink carries what the probes saw cross it at once, if that is more, and
      // between probe groups at least the fastest pair across it measured alone.
      if (!restricted && member.gpus.size() > 1) {
        l.bandwidth_Bps = std::max(l.bandwidth_Bps, probe_uplink_Bps(form, member.gpus));
        for (std::size_t other = 0; across_groups && other < group.size(); ++other) {
          if (group[other] != g) l.bandwidth_Bps = std::max(l.bandwidth_Bps, fastest_pair_Bps(form, member.gpus, clusters[group[other]].gpus, direct));
        }
      }
      l.latency_s = level_latency ? std::max(0.0, *level_latency / 2 - member.depth_latency_s) : options.default_link_latency_s;
      l.label = "pcie";
      if (nominal) {
        // A switch's or host bridge's uplink is taken as wide as a GPU's link (topo -m does not say).
        l.bandwidth_Bps = level == kLevelSys ? nominal->inter_socket_Bps : nominal->pcie_Bps;
        if (level == kLevelSys) l.label = "inter-socket";
      }
      links.push_back(l);
      depth_sum += member.depth_latency_s + l.latency_s;
      merged.gpus.insert(merged.gpus.end(), member.gpus.begin(), member.gpus.end());
    }
    merged.depth_latency_s = depth_sum / group.size();
    std::vector<Cluster> next;
    for (std::size_t k = 0; k < c; ++k) {
      if (!in_group[k]) next.push_back(std::move(clusters[k]));
    }
    next.push_back(std::move(merged));
    clusters = std::move(next);
  }

  if (clusters.size() > 1) {
    // Only NVLink pairs join these clusters: no measurement says how their PCIe side is linked.
    double slowest = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        if (i != j) slowest = std::min(slowest, *form.bandwidth_Bps.at(i, j));
      }
    }
    // A GPU model that is known gives its PCIe link's nominal rate instead.
    const hardware::GpuModel* gpu = hardware::gpu_model_of(form.description);
    const double pcie = gpu ? hardware::pcie_GBps(gpu->pcie_gen, gpu->lanes) * 1e9 : 0.0;
    const std::size_t root_index = nodes.size();
    nodes.push_back({"root" + std::to_string(roots++), NodeKind::root_complex});
    for (const auto& cl : clusters) {
      Link l;
      l.a = cl.root;
      l.b = root_index;
      l.bandwidth_Bps = nominal ? nominal->pcie_Bps : pcie > 0 ? pcie : slowest;
      l.latency_s = options.default_link_latency_s;
      l.label = "pcie (assumed)";
      links.push_back(l);
    }
    if (nominal) {
      notes.push_back("only NVLink classes join some GPU groups; they were joined under " + nodes[root_index].id +
                      " by PCIe links at the nominal PCIe rate (" + format_GBps(nominal->pcie_Bps) + ")");
    } else {
      notes.push_back("no measured non-NVLink pair joins some GPU groups; they were joined under " + nodes[root_index].id +
                      (pcie > 0 ? " by PCIe links at " + std::string(gpu->name) + "'s nominal rate (" + format_GBps(pcie) + ")"
                                : " by links assumed as fast as the slowest measured pair (" + format_GBps(slowest) + ")"));
    }
    clusters = {Cluster{{}, root_index, 0}};
  }
  const std::size_t tree_root = clusters.front().root;

  // Number switches, roots and CPUs in the order of the GPUs below them (switch0 holds gpu0).
  for (const NodeKind kind : {NodeKind::pcie_switch, NodeKind::root_complex, NodeKind::cpu_socket}) {
    std::vector<std::pair<std::size_t, std::size_t>> order;  // (lowest GPU, node)
    for (const auto& [node, gpu] : lowest_gpu) {
      if (nodes[node].kind == kind) order.emplace_back(gpu, node);
    }
    std::stable_sort(order.begin(), order.end());
    for (std::size_t k = 0; k < order.size(); ++k) {
      nodes[order[k].second].id =
          (kind == NodeKind::pcie_switch ? "switch" : kind == NodeKind::root_complex ? "root" : "cpu") + std::to_string(k);
    }
  }

  if (nominal) {
    notes.push_back("NOMINAL topology: built from the nvidia-smi topo -m classes (" + nominal->basis + ")");
  }
  if (!form.latency_s) {
    notes.push_back(fmt(nominal ? "no latency is known (nominal): every link was given the default %.2f us"
                                : "no latency was measured: every link was given %.2f us",
                        s_to_us(options.default_link_latency_s)));
  }

  // Host memory at the root of the tree.
  std::optional<std::size_t> host;
  if (form.host_to_device_Bps || form.device_to_host_Bps) {
    double fastest = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (form.host_to_device_Bps) fastest = std::max(fastest, (*form.host_to_device_Bps)[i]);
      if (form.device_to_host_Bps) fastest = std::max(fastest, (*form.device_to_host_Bps)[i]);
    }
    host = nodes.size();
    nodes.push_back({"host", NodeKind::host_memory});
    Link l;
    l.a = tree_root;
    l.b = *host;
    l.bandwidth_Bps = fastest;
    l.latency_s = options.default_link_latency_s;
    l.label = "host";
    links.push_back(l);
  } else {
    notes.push_back(std::string(nominal ? "no host<->device bandwidth is known (nominal)" : "no host<->device bandwidth was measured") +
                    ": the topology has no host-memory node, so a parameter server must live on a GPU");
  }

  // A pair without peer access measured a copy the driver staged through host memory, its two
  // halves one after the other ("falls back to normal memcopy procedure", as
  // p2pBandwidthLatencyTest says): about half what the links carry, or less. A link that only
  // such pairs cross gets at least the GPU model's nominal PCIe rate, where the model is known;
  // copies between those GPUs still go at the staged figure (Topology::staged_copy_Bps).
  if (form.p2p_supported && !nominal) {
    const hardware::GpuModel* gpu = hardware::gpu_model_of(form.description);
    const double pcie = gpu ? hardware::pcie_GBps(gpu->pcie_gen, gpu->lanes) * 1e9 : 0.0;
    Topology probe(form.name.empty() ? "measured" : form.name, nodes, links, form.name);
    std::vector<int> peer_pairs(links.size(), 0), staged_pairs(links.size(), 0);
    for (std::size_t i = 0; i < n && pcie > 0; ++i) {
      for (std::size_t j = i + 1; j < n; ++j) {
        const bool peer = (*form.p2p_supported)[i][j] && (*form.p2p_supported)[j][i];
        for (const Hop& h : probe.route(i, j)) ++(peer ? peer_pairs : staged_pairs)[h.link];
      }
    }
    std::size_t raised = 0;
    for (std::size_t l = 0; l < links.size(); ++l) {
      if (staged_pairs[l] > 0 && peer_pairs[l] == 0 && links[l].bandwidth_Bps < pcie) {
        links[l].bandwidth_Bps = pcie;
        ++raised;
      }
    }
    if (raised > 0) {
      notes.push_back(std::to_string(raised) + " link" + (raised == 1 ? "" : "s") +
                      " crossed only by GPU pairs without peer access (copies staged through host memory) taken at " +
                      gpu->name + "'s nominal PCIe rate (" + format_GBps(pcie) +
                      "); copies between those GPUs stay at their staged figure, NCCL's SHM moves at the links'");
    }
  }

  // Duplex from the bidirectional figures (both directions at once, summed): much less
  // than both directions alone together means the two directions share the bottleneck
  // (half duplex); a little less, that they interfere (a duplex share below 1).
  std::set<std::size_t> half_links;
  std::map<std::size_t, std::vector<double>> shares;
  bool staged_pairs = false;  // link -> the ratios its pairs suggest
  std::string name = form.name.empty() ? "measured" : form.name;
  {
    Topology probe(name, nodes, links, name);
    if (form.bidirectional_Bps) {
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = i + 1; j < n; ++j) {
          const auto& bi = form.bidirectional_Bps->at(i, j);
          if (!bi) continue;
          // Without peer access the driver stages both copies through host memory: what
          // they get together is the staging's, not the links' (the links are PCIe, full
          // duplex; NCCL's SHM transport moves both directions at once faster than that).
          if (form.p2p_supported && !((*form.p2p_supported)[i][j] && (*form.p2p_supported)[j][i])) {
            staged_pairs = true;
            continue;
          }
          const double both = *form.bandwidth_Bps.at(i, j) + *form.bandwidth_Bps.at(j, i);
          double ratio = *bi / both;
          // A shortfall within what the probes disagreed by (their spread, where measured) is noise.
          double noise = tol;
          auto spread = [](const std::optional<PairMatrix>& m, std::size_t a, std::size_t b) {
            return m && m->at(a, b) ? *m->at(a, b) : 0.0;
          };
          noise = std::max(noise, spread(form.bidirectional_spread, i, j) +
                                      std::max(spread(form.bandwidth_spread, i, j), spread(form.bandwidth_spread, j, i)));
          if (ratio >= 1 - noise) ratio = 1;  // full duplex, as far as this pair can tell
          const double bottleneck = probe.route_bottleneck_Bps(i, j);
          for (const Hop& h : probe.route(i, j)) {
            if (links[h.link].bandwidth_Bps <= bottleneck * (1 + tol)) shares[h.link].push_back(ratio);
          }
        }
      }
    }
  }
  if (staged_pairs) {
    notes.push_back("bidirectional figures of GPU pairs without peer access (copies staged through host memory) say "
                    "nothing of the links' duplex: not used");
  }
  // Each link: the mean of what its pairs suggest (one noisy pair must not decide). Half
  // duplex where both directions together got about what one gets alone (within 10 %);
  // between that and full duplex the share itself, so that a ratio a little lower or higher
  // moves the prediction a little, not from one kind of link to the other.
  for (const auto& [l, ratios] : shares) {
    double sum = 0;
    for (double r : ratios) sum += r;
    if (sum / static_cast<double>(ratios.size()) <= 0.55) half_links.insert(l);
  }
  for (std::size_t l : half_links) {
    links[l].full_duplex = false;
    notes.push_back("link " + nodes[links[l].a].id + " -- " + nodes[links[l].b].id +
                    ": both directions at once get about the bandwidth of one: half duplex");
  }
  for (const auto& [l, ratios] : shares) {
    if (half_links.count(l)) continue;
    double sum = 0;
    for (double r : ratios) sum += r;
    const double share = sum / static_cast<double>(ratios.size());
    if (share >= 1 - tol) continue;
    links[l].duplex_share = share;
    char buf[256];
    std::snprintf(buf, sizeof buf, "link %s -- %s: both directions at once keep %.0f %% of their bandwidth (from %zu "
                  "bidirectional measurements)",
                  nodes[links[l].a].id.c_str(), nodes[links[l].b].id.c_str(), 100 * links[l].duplex_share, ratios.size());
    notes.push_back(buf);
  }

  if (!nominal) {
    for (std::string& note : apply_probe_duplex(form, name, nodes, links, tol)) notes.push_back(std::move(note));
  }

  Topology topology(name, std::move(nodes), std::move(links), name);
  topology.set_description(form.description);

  InferenceReport report;
  report.notes = std::move(notes);
  report.nominal = nominal != nullptr;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      PairCheck p;
      p.from = form.gpus[i];
      p.to = form.gpus[j];
      p.measured_Bps = *form.bandwidth_Bps.at(i, j);
      p.modeled_Bps = topology.route_bottleneck_Bps(i, j);
      p.staged = form.p2p_supported && !nominal && !((*form.p2p_supported)[i][j] && (*form.p2p_supported)[j][i]);
      p.explained = p.staged ? p.relative_error() >= -tol - 1e-12 : std::fabs(p.relative_error()) <= tol + 1e-12;
      report.pairs.push_back(p);
    }
  }
  if (host) {
    for (std::size_t i = 0; i < n; ++i) {
      if (form.host_to_device_Bps) {
        PairCheck p{"host", form.gpus[i], (*form.host_to_device_Bps)[i], topology.route_bottleneck_Bps(*host, i)};
        p.explained = std::fabs(p.relative_error()) <= tol + 1e-12;
        report.pairs.push_back(p);
      }
      if (form.device_to_host_Bps) {
        PairCheck p{form.gpus[i], "host", (*form.device_to_host_Bps)[i], topology.route_bottleneck_Bps(i, *host)};
        p.explained = std::fabs(p.relative_error()) <= tol + 1e-12;
        report.pairs.push_back(p);
      }
    }
  }
  report.probes = check_probes(form, topology);

  topology.attach_measurements(form);
  return InferredTopology{std::move(topology), std::move(report)};
}
}  // namespace

}  // namespace gradsync::models
