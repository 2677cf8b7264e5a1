// NCCL's all-reduce as NCCL 2.30.7 (NVIDIA/nccl 5067397c) runs it on one machine or a few:
// a ring of the ranks, reduce-scatter then all-gather (2(N-1) steps), the reduction fused
// into the pipelined copy (no separate reduction pass), one of three protocols — LL (8-byte
// stores, a flag beside every 4 bytes of data), LL128 (120 of every 128 bytes are data; on
// NVLink only) and Simple (bulk copies, more latency per step) — several channels at once,
// and per hop a transport chosen as NCCL chooses it: P2P (direct peer writes) when the two
// GPUs can access each other and their path class is within NCCL's P2P level, else SHM
// (through host memory), NET between hosts. NCCL picks the protocol by size from its cost
// model (latency + bytes / bandwidth); this file does the same with the rates of the
// machine's topology.
//
// Where each constant comes from:
// - src/graph/tuning.cc: baseLatencies, hwLatencies (per hop, by link kind and protocol),
//   the LL factor 0.5 and LL128's 0.92, perChMaxRingLL128Bws; LL128 enabled only when the
//   ring is all NVLink (typeIntra <= PATH_NVB).
// - src/graph/paths.cc (ncclTopoCheckP2p): P2P up to PXB on Intel, ARM and Zhaoxin CPUs;
//   up to SYS otherwise (NCCL <= 2.22; NCCL 2.23+ keeps SYS for AMD pairs only).
// - src/graph/topo.cc: a PCIe link carries width x GT/s / 8 GB/s (Gen3 x16 = 12 GB/s);
//   src/transport/shm.cc: SHM writes into host memory and the peer reads it from there, so
//   both GPUs' PCIe links (and a switch's uplink they share) carry every byte.
// - connect.cc (ncclTopoPostset): the rings the search finds are doubled: on PCIe one ring
//   becomes 2 channels.
// - Fitted once across every all-reduce table of shared/data/published (not one machine):
//   the share of its PCIe rate SHM's GPU threads reach (0.66), LL's rate per channel over
//   PCIe (2.8 GB/s) and the launch cost per GPU a thread drives (3 us; nccl-tests -g N
//   launches N kernels from one thread), by minimising max + median |error| at >= 1 MiB plus
//   the median at 64 KiB - 1 MiB over the three tables together; `gradsync calibrate` (the
//   README gives the grid) does this fit and a leave-one-machine-out check of it. Each is a
//   parameter, so `gradsync compare ... -p shm_efficiency=...` shows what another value gives.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "models/error.h"
#include "models/format.h"
#include "models/hardware.h"
#include "models/strategies/common.h"

namespace gradsync::models::strategies {

namespace {

enum Protocol { kLL = 0, kLL128 = 1, kSimple = 2 };
constexpr std::array<const char*, 3> kProtocolNames = {"LL", "LL128", "Simple"};
enum LinkKind { kNvlinkHw = 0, kPciHw = 1, kNetHw = 2 };
enum class Transport { p2p, shm, net };

// tuning.cc, ring: base latency (us) per protocol and per-hop latency by link kind.
constexpr std::array<double, 3> kBaseLatencyUs = {6.6, 14.0, 8.4};
constexpr std::array<std::array<double, 3>, 3> kHopLatencyUs = {{{0.6, 1.9, 3.4}, {1.0, 2.5, 5.7}, {2.7, 4.0, 14.0}}};
// tuning.cc: the share of the bandwidth each protocol's payload gets.
constexpr std::array<double, 3> kPayloadShare = {0.5, 0.92, 1.0};

// The GPU model of a topology (its description), for PCIe and LL128 facts.
const hardware::GpuModel* gpu_model_of(const Topology& t) { return hardware::gpu_model_of(t.description()); }

// NCCL's path classes, closest first (topo.h PATH_*), as nvidia-smi topo -m names them.
int path_rank(const std::string& c) {
  if (c.rfind("NV", 0) == 0) return 1;
  static const std::array<const char*, 5> order = {"PIX", "PXB", "PHB", "NODE", "SYS"};
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (c == order[i]) return 2 + static_cast<int>(i);
  }
  return 7;  // unknown: as far as it gets
}

struct Hop {
  int from = 0, to = 0;  // rank positions
  Transport transport = Transport::p2p;
  LinkKind hw = kPciHw;
  std::string path;  // its class (PIX, SYS, NV4, NET)
  double limit_Bps = 0;  // what the transport's engine reaches (SHM), 0: the links decide
  double pair_Bps = 0;  // the topology's figure for the pair (measured where it was)
};

struct Plan {
  std::vector<int> ring;
  std::vector<Hop> hops;  // hop i: ring[i] -> ring[i+1]
  Protocol protocol = kSimple;
  int channels = 2;
  bool ll128_allowed = false;
  std::array<double, 3> seconds{};  // the cost model's time per protocol
  double ll_cap_Bps = 0, ll128_cap_Bps = 0;  // the protocols' payload caps over all channels
  double launch_s = 0;
  std::string pcie_note;
};

double param_number(const StrategyContext& ctx, const char* name) { return ctx.params.number(name); }

// What the links carry for a hop with a protocol at most (0: no limit): the transport's
// engine limit (SHM), and the protocol's per-channel payload cap in link bytes.
double link_limit(const Hop& h, Protocol p, double ll_cap, double ll128_cap) {
  double limit = h.limit_Bps > 0 ? h.limit_Bps : std::numeric_limits<double>::infinity();
  if (p == kLL) limit = std::min(limit, ll_cap / kPayloadShare[kLL]);
  if (p == kLL128) limit = std::min(limit, ll128_cap / kPayloadShare[kLL128]);
  return std::isfinite(limit) ? limit : 0.0;
}

// The payload rate of a hop alone: its share of the pair's rate, within the limits.
double hop_rate(const Hop& h, Protocol p, double ll_cap, double ll128_cap) {
  const double limit = link_limit(h, p, ll_cap, ll128_cap);
  const double link = limit > 0 ? std::min(limit, h.pair_Bps) : h.pair_Bps;
  return kPayloadShare[static_cast<std::size_t>(p)] * link;
}

// The class of the path between two GPU nodes: from nvidia-smi topo -m where the topology
// was imported with it, else from the links the route crosses.
std::string path_class(const Topology& t, std::size_t a, std::size_t b) {
  const auto& m = t.measured();
  if (m && m->topo_classes) {
    const auto ia = std::find(m->gpus.begin(), m->gpus.end(), t.node(a).id);
    const auto ib = std::find(m->gpus.begin(), m->gpus.end(), t.node(b).id);
    if (ia != m->gpus.end() && ib != m->gpus.end()) {
      return (*m->topo_classes)[static_cast<std::size_t>(ia - m->gpus.begin())][static_cast<std::size_t>(ib - m->gpus.begin())];
    }
  }
  bool nvlink = true, cpu = false, net = false;
  int switches = 0;
  const Route& route = t.route(a, b);
  for (std::size_t i = 0; i < route.size(); ++i) {
    const Link& l = t.links()[route[i].link];
    if (l.label != "nvlink") nvlink = false;
    const std::size_t next = route[i].forward ? l.b : l.a;
    if (i + 1 == route.size()) break;
    switch (t.node(next).kind) {
      case NodeKind::nic:
      case NodeKind::net_switch: net = true; break;
      case NodeKind::cpu_socket:
      case NodeKind::root_complex: cpu = true; break;
      case NodeKind::pcie_switch: ++switches; break;
      case NodeKind::nvswitch: break;
      default: break;
    }
  }
  if (net) return "NET";
  if (nvlink && !route.empty()) return "NV1";
  if (cpu) return "SYS";
  return switches <= 1 ? "PIX" : "PXB";
}

bool peer_access(const Topology& t, std::size_t a, std::size_t b) {
  const auto& m = t.measured();
  if (!m || !m->p2p_supported) return true;  // not measured: assume the driver allows it
  const auto ia = std::find(m->gpus.begin(), m->gpus.end(), t.node(a).id);
  const auto ib = std::find(m->gpus.begin(), m->gpus.end(), t.node(b).id);
  if (ia == m->gpus.end() || ib == m->gpus.end()) return true;
  return (*m->p2p_supported)[static_cast<std::size_t>(ia - m->gpus.begin())][static_cast<std::size_t>(ib - m->gpus.begin())];
}

// The DMA rate of a GPU's PCIe link: measured host<->device copies where the topology has
// them, else the GPU model's documented generation and width (or the "pcie" parameter).
double pcie_Bps_of(const StrategyContext& ctx, std::size_t node, std::string& note) {
  const Topology& t = ctx.topology;
  const auto& m = t.measured();
  if (m && m->host_to_device_Bps && m->device_to_host_Bps) {
    const auto i = std::find(m->gpus.begin(), m->gpus.end(), t.node(node).id);
    if (i != m->gpus.end()) {
      const auto k = static_cast<std::size_t>(i - m->gpus.begin());
      note = "PCIe rate: measured host<->device copies";
      return std::min((*m->host_to_device_Bps)[k], (*m->device_to_host_Bps)[k]);
    }
  }
  const std::string& given = ctx.params.text("pcie");
  if (given != "auto") {
    const int gen = given[3] - '0';
    note = "PCIe rate: " + given + " x16 as given (nominal, NCCL's width x speed / 80)";
    return hardware::pcie_GBps(gen, 16) * 1e9;
  }
  if (const hardware::GpuModel* g = gpu_model_of(t)) {
    note = std::string("PCIe rate: ") + g->name + " is Gen" + std::to_string(g->pcie_gen) + " x" + std::to_string(g->lanes) +
           " (nominal, NCCL's width x speed / 80)";
    return hardware::pcie_GBps(g->pcie_gen, g->lanes) * 1e9;
  }
  note = "PCIe rate: GPU model unknown, Gen4 x16 assumed (nominal; set pcie=gen3|gen4|gen5|gen6)";
  return hardware::pcie_GBps(4, 16) * 1e9;
}

// P2P level (topo.h PATH_*): NCCL_P2P_LEVEL as given, else by CPU as ncclTopoCheckP2p.
int p2p_level(const StrategyContext& ctx) {
  const std::string& level = ctx.params.text("p2p_level");
  if (level != "auto") return path_rank(level);
  const std::string& cpu = ctx.params.text("cpu");
  return cpu == "intel" || cpu == "arm" ? path_rank("PXB") : path_rank("SYS");
}

Plan plan_for(const StrategyContext& ctx) {
  Plan plan;
  const Topology& t = ctx.topology;
  const int n = ctx.N();
  plan.ring = ring_of_ranks(ctx);
  const int level = p2p_level(ctx);
  const double efficiency = param_number(ctx, "shm_efficiency");
  auto node_of = [&](int rank) { return ctx.placement.ranks[static_cast<std::size_t>(rank)]; };
  // GPUs of the ring that share a PCIe switch's uplink with `rank` (PIX / PXB), itself included.
  auto uplink_sharers = [&](int rank) {
    int count = 0;
    for (int other = 0; other < n; ++other) {
      if (other == rank || node_of(other) == node_of(rank)) {
        ++count;
        continue;
      }
      const std::string c = path_class(t, node_of(rank), node_of(other));
      if (c == "PIX" || c == "PXB") ++count;
    }
    return count;
  };
  bool all_nvlink = n > 1;
  for (int i = 0; i < n; ++i) {
    Hop h;
    h.from = plan.ring[static_cast<std::size_t>(i)];
    h.to = plan.ring[static_cast<std::size_t>((i + 1) % n)];
    const std::size_t a = node_of(h.from), b = node_of(h.to);
    if (a == b) {
      h.path = "LOC";
      h.pair_Bps = 0;
      plan.hops.push_back(h);
      continue;
    }
    h.path = path_class(t, a, b);
    h.pair_Bps = t.bottleneck_Bps(a, b);
    if (h.path == "NET") {
      h.transport = Transport::net;
      h.hw = kNetHw;
    } else if (path_rank(h.path) <= level && peer_access(t, a, b)) {
      h.transport = Transport::p2p;
      h.hw = h.path.rfind("NV", 0) == 0 ? kNvlinkHw : kPciHw;
    } else {
      h.transport = Transport::shm;
      h.hw = kPciHw;
      const double from_side = pcie_Bps_of(ctx, a, plan.pcie_note) / uplink_sharers(h.from);
      const double to_side = pcie_Bps_of(ctx, b, plan.pcie_note) / uplink_sharers(h.to);
      h.limit_Bps = efficiency * std::min(from_side, to_side);
    }
    if (h.hw != kNvlinkHw) all_nvlink = false;
    plan.hops.push_back(h);
  }
  // LL128 only on all-NVLink rings of GPUs of one compute capability >= 7.0 (tuning.cc).
  const hardware::GpuModel* gpu = gpu_model_of(t);
  plan.ll128_allowed = all_nvlink && (!gpu || gpu->compute_capability >= 70);
  const std::string& channels = ctx.params.text("channels");
  if (channels != "auto") {
    plan.channels = static_cast<int>(ctx.params.integer("channels"));
  } else {
    // One ring per NVLink between neighbours (search.cc), doubled by ncclTopoPostset; one
    // ring on PCIe, doubled.
    int links = 1;
    for (const Hop& h : plan.hops) {
      if (h.hw == kNvlinkHw) links = std::max(links, nvlink_count(h.path));
    }
    plan.channels = std::min(32, 2 * links);
  }
  plan.launch_s = param_number(ctx, "launch_us") * 1e-6 * static_cast<double>(ctx.params.integer("gpus_per_thread"));

  // NCCL's cost model per protocol: launch + base latency + a latency per step along the
  // ring + the bytes each rank moves over the slowest hop's rate for that protocol.
  plan.ll_cap_Bps = plan.channels * param_number(ctx, "ll_channel_GBps") * 1e9;
  const int compcap = gpu ? gpu->compute_capability : 80;
  const double ll128_per_channel = compcap >= 100 ? 40.0 : compcap >= 90 ? 36.7 : 20.0;  // perChMaxRingLL128Bws
  plan.ll128_cap_Bps = plan.channels * ll128_per_channel * 1e9;
  const double moved = n > 1 ? 2.0 * (n - 1) / n * ctx.bytes() : 0.0;
  for (int p = 0; p < 3; ++p) {
    double rate = std::numeric_limits<double>::infinity(), latency_us = 0;
    for (const Hop& h : plan.hops) {
      if (h.path == "LOC") continue;
      rate = std::min(rate, hop_rate(h, static_cast<Protocol>(p), plan.ll_cap_Bps, plan.ll128_cap_Bps));
      latency_us += kHopLatencyUs[static_cast<std::size_t>(h.hw)][static_cast<std::size_t>(p)];
    }
    const double steps = n > 1 ? 2.0 * (n - 1) : 0.0;
    const double per_step_us = n > 1 ? latency_us / n : 0.0;
    plan.seconds[static_cast<std::size_t>(p)] =
        plan.launch_s + (kBaseLatencyUs[static_cast<std::size_t>(p)] + steps * per_step_us) * 1e-6 +
        (std::isfinite(rate) ? moved / rate : 0.0);
  }
  const std::string& protocol = ctx.params.text("protocol");
  if (protocol == "auto") {
    int best = kSimple;
    for (int p = 0; p < 3; ++p) {
      if (p == kLL128 && !plan.ll128_allowed) continue;
      const double s = plan.seconds[static_cast<std::size_t>(p)];
      if (s > 0 && s < plan.seconds[static_cast<std::size_t>(best)]) best = p;
    }
    plan.protocol = static_cast<Protocol>(best);
  } else {
    // Forced, as NCCL_PROTO forces it: NCCL honours LL128 even where it would not pick it.
    plan.protocol = protocol == "LL" ? kLL : protocol == "LL128" ? kLL128 : kSimple;
  }
  return plan;
}

}  // namespace

namespace {

const char* transport_name(Transport t) { return t == Transport::p2p ? "P2P" : t == Transport::shm ? "SHM" : "NET"; }

Strategy definition() {
  Strategy s;
  s.name = "nccl";
  s.summary = "NCCL's all-reduce (NCCL 2.30.7's rules and constants): ring, LL/LL128/Simple chosen by size, "
              "channels, reduction fused into the copy, P2P/SHM/NET per hop from the topology and its topo -m classes";
  s.source = "NVIDIA NCCL 2.30.7 (src/graph/tuning.cc, paths.cc, topo.cc; src/transport/shm.cc)";
  s.order = 27;
  s.searched = false;  // recommend compares schedules on gradsync's engine; NCCL's is its own
  s.params = {
      ParamSpec{"protocol", "auto", "LL, LL128 or Simple (NCCL_PROTO); auto: the fastest by NCCL's cost model, LL128 only on "
                                    "rings that are NVLink end to end",
                word_domain({"LL", "LL128", "Simple"}, true)},
      ParamSpec{"channels", "auto", "rings run at once; auto: one per NVLink between neighbours (one on PCIe), doubled "
                                    "as NCCL does",
                integer_domain(1, 64, 0, true)},
      ParamSpec{"p2p_level", "auto",
                "NCCL_P2P_LEVEL: the farthest path class (PIX, PXB, PHB, NODE, SYS) P2P is used over; auto: SYS, or "
                "PXB when cpu=intel|arm",
                word_domain({"PIX", "PXB", "PHB", "NODE", "SYS"}, true)},
      ParamSpec{"cpu", "auto", "the host's CPU (NCCL stops P2P at PXB on Intel and ARM); auto: not known",
                word_domain({"amd", "intel", "arm"}, true)},
      ParamSpec{"pcie", "auto", "the GPUs' PCIe generation (x16) for SHM; auto: measured host copies, else the GPU model",
                word_domain({"gen3", "gen4", "gen5", "gen6"}, true)},
      ParamSpec{"gpus_per_thread", "1", "GPUs one host thread launches kernels for (nccl-tests -g N: N)",
                integer_domain(1, 1024, 16)},
      ParamSpec{"shm_efficiency", "0.66", "share of its PCIe rate SHM reaches (fitted once across the published machines)",
                real_domain(0, 1, false, true)},
      ParamSpec{"ll_channel_GBps", "2.8", "LL's payload rate per channel over PCIe (fitted once across the published "
                                          "machines)",
                rate_domain(false)},
      ParamSpec{"launch_us", "3", "launch cost per GPU a thread drives, us (fitted once across the published machines)",
                real_domain(0, 1e6, true, true, 100)},
      ring_order_param(false),
  };
  for (ParamSpec& p : s.params) {
    if (p.name == "protocol" || p.name == "channels") {
      p.resolved = true;
      p.shown = ParamSpec::Shown::when_resolved;
    }
  }
  s.test_variants = {{{}}, {{"protocol=LL"}}, {{"protocol=Simple", "channels=4"}}};
  s.closed_form = [](const StrategyContext& ctx) {
    const Plan plan = plan_for(ctx);
    ctx.resolved_as("protocol", kProtocolNames[static_cast<std::size_t>(plan.protocol)]);
    ctx.resolved_as("channels", std::to_string(plan.channels));
    return formulas::Breakdown{{{"all-reduce", plan.seconds[static_cast<std::size_t>(plan.protocol)]}}};
  };
  s.build = [](const StrategyContext& ctx) {
    const auto plan = std::make_shared<const Plan>(plan_for(ctx));
    const auto p = static_cast<std::size_t>(plan->protocol);
    ctx.resolved_as("protocol", kProtocolNames[p]);
    ctx.resolved_as("channels", std::to_string(plan->channels));
    Schedule s = start_schedule("nccl", ctx);
    // The reduction happens inside the copy loop: no local pass costs anything.
    for (Participant& part : s.participants) part.costs = LocalCosts{};
    s.latency_in_ops = true;
    const int n = ctx.N();
    // Launch and the protocol's base latency, once.
    add_compute(s, all_workers(s), plan->launch_s + kBaseLatencyUs[p] * 1e-6, "launch + base latency");
    add_ring_allreduce(s, {plan->ring}, Region{0, ctx.elements, ctx.element_bytes});
    // Every step: the protocol's latency (the mean over the ring's hops, so that a chunk's
    // 2(N-1) steps add up to NCCL's sum along its path), and each transfer as its hop's
    // transport and the protocol move it.
    double hop_us = 0;
    for (const Hop& h : plan->hops) hop_us += h.path == "LOC" ? 0.0 : kHopLatencyUs[static_cast<std::size_t>(h.hw)][p];
    const double step_s = n > 0 ? hop_us / n * 1e-6 : 0.0;
    auto limits = std::make_shared<std::vector<double>>(static_cast<std::size_t>(n), 0.0);  // by sending rank
    for (const Hop& h : plan->hops) (*limits)[static_cast<std::size_t>(h.from)] = link_limit(h, plan->protocol, plan->ll_cap_Bps, plan->ll128_cap_Bps);
    const double share = kPayloadShare[p];
    for (std::size_t r = 1; r < s.rounds.size(); ++r) {
      Round& round = s.rounds[r];
      round.compute_phase = "step latency";
      round.ops = [inner = std::move(round.ops), limits, share, step_s](int q, std::vector<Op>& out) {
        const std::size_t first = out.size();
        inner(q, out);
        for (std::size_t i = first; i < out.size(); ++i) {
          Op& op = out[i];
          if (!op.is_transfer()) continue;
          op.payload_share = share;
          const int sender = op.kind == OpKind::send ? q : op.peer;
          op.max_Bps = (*limits)[static_cast<std::size_t>(sender)];
        }
        out.push_back(Op::compute(step_s));
      };
    }
    std::string hops = "hops:";
    for (const Hop& h : plan->hops) {
      if (h.path == "LOC") continue;
      hops += " " + ctx.topology.node(ctx.placement.ranks[static_cast<std::size_t>(h.from)]).id + "->" +
              ctx.topology.node(ctx.placement.ranks[static_cast<std::size_t>(h.to)]).id + " " + transport_name(h.transport) +
              " (" + h.path + ")";
    }
    s.notes.push_back(std::string("protocol ") + kProtocolNames[p] + ", " + std::to_string(plan->channels) +
                      " channels, ring all-reduce; reduction fused into the copy");
    s.notes.push_back(hops);
    if (!plan->pcie_note.empty()) {
      s.notes.push_back("SHM through host memory at " + format_fixed(param_number(ctx, "shm_efficiency"), 2) +
                        " of the PCIe rate shared by the GPUs behind one switch; " + plan->pcie_note);
    }
    return s;
  };
  return s;
}

const Registration registered(definition());

}  // namespace

}  // namespace gradsync::models::strategies
