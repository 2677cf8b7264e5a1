// NCCL's all-reduce as NCCL 2.30.7 (NVIDIA/nccl 5067397c) runs it on one host of PCIe or point-to-point
// NVLink (nccl.cpp sends hosts with an NVSwitch, and clusters, to NCCL's planner, plan.h):
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
// - Fitted once across every all-reduce table of tests/data/published (not one machine):
//   the share of its PCIe rate SHM's GPU threads reach (0.66), LL's rate per channel over
//   PCIe (2.8 GB/s) and the launch cost per GPU a thread drives (3 us; nccl-tests -g N
//   launches N kernels from one thread), by minimising max + median |error| at >= 1 MiB plus
//   the median at 64 KiB - 1 MiB over the three tables together; `gradsync calibrate` (the
//   README gives the grid) does this fit and a leave-one-machine-out check of it. Each is a
//   parameter, so `gradsync compare ... -p shm_efficiency=...` shows what another value gives.
#include "models/strategies/nccl/per_hop.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/executors/result.h"
#include "models/strategies/common.h"
#include "models/strategies/nccl/pipeline.h"
#include "models/strategies/nccl/system.h"
#include "models/support/error.h"
#include "models/support/format.h"
#include "models/topology/hardware.h"

namespace gradsync::models::strategies::nccl_strategy {

namespace {

enum Protocol { kLL = 0, kLL128 = 1, kSimple = 2 };
constexpr std::array<const char*, 3> kProtocolNames = {"LL", "LL128", "Simple"};
enum Algorithm { kTree = 0, kRing = 1 };  // tuning.cc's order
constexpr std::array<const char*, 2> kAlgorithmNames = {"Tree", "Ring"};
enum LinkKind { kNvlinkHw = 0, kPciHw = 1, kNetHw = 2 };
enum class Transport { p2p, shm, net };

template <class T>
constexpr std::size_t ix(T v) {
  return static_cast<std::size_t>(v);
}

// tuning.cc: base latency (us) per algorithm and protocol, and per-hop latency by link
// kind, algorithm and protocol.
constexpr std::array<std::array<double, 3>, 2> kBaseLatencyUs = {{{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}}};
constexpr std::array<std::array<std::array<double, 3>, 2>, 3> kHopLatencyUs = {{
    {{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}}},   // NVLink: tree, ring
    {{{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}}},    // PCI
    {{{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}}},  // NET
}};
// tuning.cc: the share of the bandwidth each protocol's payload gets, per algorithm (the
// tree's on one node: LL 1/3.8, LL128 7/9, Simple 0.92 for all-reduce).
constexpr std::array<std::array<double, 3>, 2> kPayloadShare = {{{1.0 / 3.8, 7.0 / 9.0, 0.92}, {0.5, 0.92, 1.0}}};
// tuning.cc, one node (N1), by compute capability index (Volta, Ampere, Hopper, Blackwell):
// per-channel caps of LL128 on rings and trees and of Simple on trees, GB/s.
constexpr std::array<double, 4> kRingLL128PerChannel = {20.0, 20.0, 36.7, 40.0};
constexpr std::array<double, 4> kTreeLL128PerChannel = {20.0, 20.0, 36.7, 55.6};
constexpr std::array<double, 4> kTreeSimplePerChannel = {26.5, 24.0, 38.7, 70.0};
// tuning.cc treeCorrectionFactor: "trees are not perfectly sticking to the model for medium
// sizes", by protocol and log2(bytes / 64), 64 B .. 256 MiB (1 beyond).
constexpr std::array<std::array<double, 24>, 3> kTreeCorrection = {{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9},
}};
// Chunks a tree's pipeline cuts the buffer into per hop of its chain (the pipeline's fill,
// (chain hops - 1) / chunks, stays under 7 % of the time).
constexpr int kTreeChunksPerHop = 16;

double tree_correction(Protocol p, double bytes) {
  const auto units = static_cast<std::uint64_t>(bytes) >> 6;
  if (units == 0) return 1.0;
  int log = 0;
  while ((units >> (log + 1)) != 0) ++log;
  return log < 23 ? kTreeCorrection[ix(p)][static_cast<std::size_t>(log)] : 1.0;
}

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
  double reverse_Bps = 0;  // and for the other direction (the tree's chain uses both)
};

struct Plan {
  std::vector<int> ring;  // the ring's order; the tree is the chain ring[0] <- ring[1] <- ... (ring[0] its root)
  std::vector<Hop> hops;  // hop i: ring[i] -> ring[i+1]
  std::vector<Hop> pairs;  // an all-to-all's: every ordered pair of ranks
  Algorithm algorithm = kRing;
  Protocol protocol = kSimple;
  int channels = 2;
  bool ll128_allowed = false;
  bool tree_allowed = false;
  std::array<std::array<double, 3>, 2> seconds{};  // NCCL's cost model per algorithm and protocol (its choice)
  std::array<std::array<double, 3>, 2> cap_Bps{};  // each one's payload cap over all channels, 0: none
  std::array<std::array<double, 3>, 2> rate_Bps{};  // each one's payload rate over its slowest hop (the tree's uncorrected)
  double launch_s = 0;
  std::string pcie_note;
};

double param_number(const StrategyContext& ctx, const char* name) { return ctx.params.number(name); }


// What the links carry for a hop at most (0: no limit): the transport's engine limit (SHM),
// and the payload cap of the algorithm and protocol in link bytes.
double link_limit(const Hop& h, double share, double cap_Bps) {
  double limit = h.limit_Bps > 0 ? h.limit_Bps : std::numeric_limits<double>::infinity();
  if (cap_Bps > 0) limit = std::min(limit, cap_Bps / share);
  return std::isfinite(limit) ? limit : 0.0;
}

// The payload rate of a hop alone: its share of the pair's rate, within the limits.
double hop_rate(const Hop& h, double share, double cap_Bps) {
  const double limit = link_limit(h, share, cap_Bps);
  return share * (limit > 0 ? std::min(limit, h.pair_Bps) : h.pair_Bps);
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
  int switches = 0, nvlinks = 1;
  const Route& route = t.route(a, b);
  for (std::size_t i = 0; i < route.size(); ++i) {
    const Link& l = t.links()[route[i].link];
    // "nvlink", or "nvlink x2" for a pair joined by two (as topologies/ label them).
    if (l.label.rfind("nvlink", 0) != 0) nvlink = false;
    if (route.size() == 1 && l.label.rfind("nvlink x", 0) == 0) nvlinks = std::max(1, std::atoi(l.label.c_str() + 8));
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
  if (nvlink && !route.empty()) return "NV" + std::to_string(nvlinks);
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
  if (m && m->nominal && m->nominal->pcie_Bps > 0) {
    note = "PCIe rate: the nominal topology's (" + m->nominal->basis + ")";
    return m->nominal->pcie_Bps;
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

// NCCL's broadcast and reduce run on its ring cut into a chain at the root (nccl-tests' root 0).
bool chain_collective(const std::string& collective) { return collective == "broadcast" || collective == "reduce"; }

Plan plan_for(const StrategyContext& ctx) {
  Plan plan;
  const Topology& t = ctx.topology;
  const int n = ctx.N();
  const std::string& forced = ctx.params.text("algorithm");
  if (forced == "NVLS" || forced == "NVLSTree") {
    throw InputError("--param algorithm=" + forced + ": NCCL runs NVLS only on NVSwitch hosts with Hopper or later GPUs (NVLSTree "
                     "across two hosts or more); these ranks share one host without an NVSwitch");
  }
  const std::string& collective = ctx.params.text("collective");
  const bool chain = chain_collective(collective);
  plan.ring = ring_of_ranks(ctx);
  if (chain) {
    // The order the bytes flow in: the ring cut at the root (rank 0), from it (broadcast) or into it (reduce).
    const auto root = std::find(plan.ring.begin(), plan.ring.end(), 0);
    std::rotate(plan.ring.begin(), collective == "broadcast" ? root : root + 1, plan.ring.end());
  }
  std::vector<int> position(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i) position[ix(plan.ring[ix(i)])] = i;
  const int level = p2p_level(ctx);
  const double efficiency = param_number(ctx, "shm_efficiency");
  auto node_of = [&](int rank) { return ctx.placement.ranks[static_cast<std::size_t>(rank)]; };
  // Whether `rank` sends (or receives) at all: on a ring every rank does both; on a chain the
  // last sends nothing and the first receives nothing.
  auto active = [&](int rank, bool sending) { return !chain || (sending ? position[ix(rank)] < n - 1 : position[ix(rank)] > 0); };
  // GPUs of the ring that share a PCIe switch's uplink with `rank` (PIX / PXB) and move bytes
  // through it the same way (sending up to host memory, or receiving from it), itself included.
  auto uplink_sharers = [&](int rank, bool sending) {
    int count = 0;
    for (int other = 0; other < n; ++other) {
      if (other == rank) {
        ++count;
        continue;
      }
      if (!active(other, sending)) continue;
      if (node_of(other) == node_of(rank)) {
        ++count;
        continue;
      }
      const std::string c = path_class(t, node_of(rank), node_of(other));
      if (c == "PIX" || c == "PXB") ++count;
    }
    return count;
  };
  // An all-to-all's GPU sends to, and receives from, every other at once: its side of an SHM
  // pair is shared by its N - 1 messages.
  const int messages = collective == "alltoall" ? std::max(1, n - 1) : 1;
  auto hop_of = [&](int from, int to) {
    Hop h;
    h.from = from;
    h.to = to;
    const std::size_t a = node_of(h.from), b = node_of(h.to);
    if (a == b) {
      h.path = "LOC";
      h.pair_Bps = 0;
      return h;
    }
    h.path = path_class(t, a, b);
    h.pair_Bps = t.bottleneck_Bps(a, b);
    h.reverse_Bps = t.bottleneck_Bps(b, a);
    if (h.path == "NET") {
      h.transport = Transport::net;
      h.hw = kNetHw;
    } else if (path_rank(h.path) <= level && peer_access(t, a, b)) {
      h.transport = Transport::p2p;
      h.hw = h.path.rfind("NV", 0) == 0 ? kNvlinkHw : kPciHw;
    } else {
      h.transport = Transport::shm;
      h.hw = kPciHw;
      const double from_side = pcie_Bps_of(ctx, a, plan.pcie_note) / uplink_sharers(h.from, true);
      const double to_side = pcie_Bps_of(ctx, b, plan.pcie_note) / uplink_sharers(h.to, false);
      h.limit_Bps = efficiency * std::min(from_side, to_side) / messages;
    }
    return h;
  };
  bool all_nvlink = n > 1;
  for (int i = 0; i < n; ++i) {
    plan.hops.push_back(hop_of(plan.ring[ix(i)], plan.ring[ix((i + 1) % n)]));
    if (plan.hops.back().path != "LOC" && plan.hops.back().hw != kNvlinkHw) all_nvlink = false;
  }
  if (collective == "alltoall") {
    for (int from = 0; from < n; ++from) {
      for (int to = 0; to < n; ++to) {
        if (from != to) plan.pairs.push_back(hop_of(from, to));
      }
    }
  }
  // LL128 only on all-NVLink rings of GPUs of one compute capability >= 7.0 (tuning.cc).
  const hardware::GpuModel* gpu = gpu_model_of(t);
  plan.ll128_allowed = all_nvlink && (!gpu || gpu->compute_capability >= 70);
  // The tree within one node (a chain); across nodes NCCL's double binary tree is not built here.
  bool one_node = true;
  for (const Hop& h : plan.hops) one_node = one_node && h.transport != Transport::net;
  plan.tree_allowed = one_node;
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
  plan.launch_s = launch_seconds(ctx);

  // Payload caps: LL's per channel over PCIe (fitted), LL128's and the tree's Simple per
  // channel by compute capability (tuning.cc).
  const int compcap = gpu ? gpu->compute_capability : 80;
  const std::size_t cc = compcap >= 100 ? 3 : compcap >= 90 ? 2 : compcap >= 80 ? 1 : 0;
  const double ch = plan.channels * 1e9;
  const double ll_cap = ch * param_number(ctx, "ll_channel_GBps");
  plan.cap_Bps[kRing] = {ll_cap, ch * kRingLL128PerChannel[cc], 0.0};
  plan.cap_Bps[kTree] = {ll_cap, ch * kTreeLL128PerChannel[cc], ch * kTreeSimplePerChannel[cc]};

  // NCCL's cost model per algorithm and protocol: launch + base latency + per-hop latencies
  // + bytes over the algorithm's bandwidth. The ring: 2(N-1) steps of S/N over its slowest
  // hop. The tree (a chain on one node): up and down the chain, 2(N-1) hop latencies, and
  // half the bus bandwidth (tuning.cc's ratio .5), with its size correction.
  // All-gather and reduce-scatter: one half of the ring, N-1 steps of S/N (the tree runs neither).
  // Broadcast and reduce: the whole buffer along the chain's N-1 hops, pipelined, and one hop's
  // latency (tuning.cc: nsteps = N, so algbw = busbw; latency base + one step where the channels
  // are duplicated, as on PCIe).
  const bool half = collective != "all_reduce";
  plan.tree_allowed = plan.tree_allowed && !half;
  const double ring_steps = n > 1 ? (half ? 1.0 : 2.0) * (n - 1) : 0.0;
  const double bytes = ctx.bytes();
  const double moved = n < 2 ? 0.0 : chain ? bytes : ring_steps / n * bytes;
  for (int a = 0; a < 2; ++a) {
    for (int p = 0; p < 3; ++p) {
      const double share = kPayloadShare[ix(a)][ix(p)];
      const double cap = plan.cap_Bps[ix(a)][ix(p)];
      double rate = std::numeric_limits<double>::infinity(), latency_us = 0;
      for (std::size_t i = 0; i < plan.hops.size(); ++i) {
        const Hop& h = plan.hops[i];
        if (h.path == "LOC") continue;
        const double hop_us = kHopLatencyUs[ix(h.hw)][ix(a)][ix(p)];
        if (a == kRing) {
          if (chain && i + 1 == plan.hops.size()) continue;  // the chain has no closing hop
          rate = std::min(rate, hop_rate(h, share, cap));
          latency_us += hop_us;
        } else if (i + 1 < plan.hops.size()) {  // the chain has no closing hop; it is used both ways
          Hop up = h;
          up.pair_Bps = h.reverse_Bps;
          rate = std::min({rate, hop_rate(h, share, cap), hop_rate(up, share, cap)});
          latency_us += 2 * hop_us;
        }
      }
      plan.rate_Bps[ix(a)][ix(p)] = std::isfinite(rate) ? rate : 0.0;
      double seconds = plan.launch_s + kBaseLatencyUs[ix(a)][ix(p)] * 1e-6;
      if (a == kRing) {
        const double steps_us = n < 2 ? 0.0 : chain ? latency_us / (n - 1) : ring_steps * latency_us / n;
        seconds += steps_us * 1e-6 + (std::isfinite(rate) ? moved / rate : 0.0);
      } else {
        const double corrected = rate * tree_correction(static_cast<Protocol>(p), bytes);
        seconds += latency_us * 1e-6 + (std::isfinite(rate) ? 2.0 * bytes / corrected : 0.0);
      }
      plan.seconds[ix(a)][ix(p)] = seconds;
    }
  }
  const std::string& algorithm = ctx.params.text("algorithm");
  const std::string& protocol = ctx.params.text("protocol");
  double best = std::numeric_limits<double>::infinity();
  if (half && algorithm == "Tree") {
    throw InputError("--param algorithm=Tree collective=" + ctx.params.text("collective") +
                     ": NCCL runs all-gather, reduce-scatter, broadcast and reduce on its ring (or PAT, NVLS, CollNet), not its tree");
  }
  for (int a = 0; a < 2; ++a) {
    if (algorithm != "auto" && algorithm != kAlgorithmNames[ix(a)]) continue;
    if (a == kTree && half) continue;
    // Across nodes NCCL's tree is a double binary tree between the nodes, which is not built
    // here: auto leaves the tree out there; forced (NCCL_ALGO=Tree) it runs as one chain.
    if (a == kTree && !plan.tree_allowed && algorithm == "auto") continue;
    for (int p = 0; p < 3; ++p) {
      // Forced, as NCCL_PROTO forces it: NCCL honours LL128 even where it would not pick it.
      if (protocol != "auto" && protocol != kProtocolNames[ix(p)]) continue;
      if (protocol == "auto" && p == kLL128 && !plan.ll128_allowed) continue;
      const double sec = plan.seconds[ix(a)][ix(p)];
      if (sec < best) {
        best = sec;
        plan.algorithm = static_cast<Algorithm>(a);
        plan.protocol = static_cast<Protocol>(p);
      }
    }
  }
  return plan;
}

// The chunks a tree's pipeline cuts the buffer into (one element at least each).
int tree_chunks(const StrategyContext& ctx) {
  const auto want = static_cast<std::uint64_t>(kTreeChunksPerHop) * static_cast<std::uint64_t>(std::max(1, ctx.N() - 1));
  return static_cast<int>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(want, ctx.elements)));
}

// A pipelined pass along one chain (chain[0] the root): up, towards the root, reducing; down,
// from it (pipeline.h).
void add_chain_pass(Schedule& s, const std::vector<int>& chain, Region region, int chunks, bool up, const std::string& phase) {
  nccl::add_channel_chains(s, {chain}, region, chunks, up, nccl::Engine{}, phase);
}

// NCCL's tree on one node, a chain (chain[0] the root): up the chain, then down.
void add_chain_allreduce(Schedule& s, const std::vector<int>& chain, Region region, int chunks) {
  add_chain_pass(s, chain, region, chunks, true, "tree reduce");
  add_chain_pass(s, chain, region, chunks, false, "tree broadcast");
}

std::string collective_words(const std::string& collective) {
  if (chain_collective(collective)) return collective + " (a chain from the ring, rank 0 the root)";
  return collective == "all_gather" ? "all-gather" : collective == "reduce_scatter" ? "reduce-scatter" : "all-reduce";
}

const char* transport_name(Transport t) { return t == Transport::p2p ? "P2P" : t == Transport::shm ? "SHM" : "NET"; }

// NCCL's alltoall as nccl-tests runs it: in one group, a message of S/N to every other rank and
// one from each (ncclSend / ncclRecv), each over its pair's transport. enqueue.cc: a message of
// at most NCCL_P2P_LL_THRESHOLD (16 KiB) goes on one channel with LL, a larger one with Simple.
// NCCL has no cost model for point-to-point work: the launch, the protocol's base latency and
// one step over the slowest kind of link.
struct AllToAll {
  Protocol protocol = kSimple;
  double share = 1;      // the protocol's payload per byte on the wire
  double cap_Bps = 0;    // what one message's channel carries at most (LL), 0: none
  double latency_s = 0;
};

AllToAll alltoall_of(const StrategyContext& ctx, const Plan& plan) {
  AllToAll a;
  const std::string& protocol = ctx.params.text("protocol");
  if (protocol == "LL128") {
    throw InputError("--param protocol=LL128 collective=alltoall: NCCL's point-to-point work (its alltoall) runs LL or Simple");
  }
  const double message = ctx.N() > 0 ? ctx.bytes() / ctx.N() : 0.0;
  a.protocol = protocol == "LL" ? kLL : protocol == "Simple" ? kSimple : message <= 16384 ? kLL : kSimple;
  a.share = kPayloadShare[kRing][ix(a.protocol)];
  if (a.protocol == kLL) a.cap_Bps = param_number(ctx, "ll_channel_GBps") * 1e9;
  double hop_us = 0;
  for (const Hop& h : plan.pairs) {
    if (h.path != "LOC") hop_us = std::max(hop_us, kHopLatencyUs[ix(h.hw)][kRing][ix(a.protocol)]);
  }
  a.latency_s = plan.launch_s + (kBaseLatencyUs[kRing][ix(a.protocol)] + hop_us) * 1e-6;
  return a;
}

// The closed form: the latency, then every message at once, each at its pair's rate (the
// transport's limit, or its share of the GPUs' links, which carry N - 1 messages each way).
double alltoall_seconds(const StrategyContext& ctx) {
  const Plan plan = plan_for(ctx);
  const AllToAll a = alltoall_of(ctx, plan);
  ctx.resolved_as("protocol", kProtocolNames[ix(a.protocol)]);
  const int n = ctx.N();
  if (n < 2) return 0.0;
  double slowest = std::numeric_limits<double>::infinity();
  for (const Hop& h : plan.pairs) {
    if (h.path == "LOC") continue;
    const double limit = link_limit(h, a.share, a.cap_Bps);
    const double links = h.pair_Bps / (n - 1);
    slowest = std::min(slowest, a.share * (limit > 0 ? std::min(limit, links) : links));
  }
  return a.latency_s + (std::isfinite(slowest) && slowest > 0 ? ctx.bytes() / n / slowest : 0.0);
}

// The schedule: each rank sends its block q to rank q and receives rank q's block for it into
// the receive buffer (scratch), keeps its own block there, then takes the receive buffer as
// its result (nccl-tests' out-of-place alltoall); sizes that are not a whole number of blocks
// leave the rest as it was.
Schedule alltoall_schedule(const StrategyContext& ctx) {
  const auto plan = std::make_shared<const Plan>(plan_for(ctx));
  const AllToAll a = alltoall_of(ctx, *plan);
  ctx.resolved_as("protocol", kProtocolNames[ix(a.protocol)]);
  Schedule s = start_schedule("nccl", ctx);
  for (Participant& part : s.participants) part.costs = LocalCosts{};
  s.latency_in_ops = true;
  const int n = ctx.N();
  const auto eb = static_cast<std::uint64_t>(ctx.element_bytes);
  const std::uint64_t per = n > 0 ? ctx.elements / static_cast<std::uint64_t>(n) : 0;
  const std::uint64_t whole = per * static_cast<std::uint64_t>(n) * eb, block = per * eb;
  const std::uint64_t received = ctx.elements * eb;  // the receive buffer: scratch, after the gradient
  s.scratch_bytes = whole;
  if (n > 1) add_compute(s, all_workers(s), a.latency_s, "launch + latency");
  if (whole > 0) {
    // limit[from][to]: what the pair's transport and the protocol let its message move at.
    auto limit = std::make_shared<std::vector<std::vector<double>>>(ix(n), std::vector<double>(ix(n), 0.0));
    for (const Hop& h : plan->pairs) (*limit)[ix(h.from)][ix(h.to)] = link_limit(h, a.share, a.cap_Bps);
    const double share = a.share;
    s.rounds.push_back(Round{"alltoall", "", [=](int p, std::vector<Op>& out) {
                               if (p >= n) return;
                               for (int q = 0; q < n; ++q) {
                                 const Slice mine{static_cast<std::uint64_t>(q) * block, block};
                                 const Slice theirs{received + static_cast<std::uint64_t>(q) * block, block};
                                 if (q == p) {
                                   out.push_back(Op::copy(mine, theirs));
                                   continue;
                                 }
                                 Op sent = Op::send(q, mine), got = Op::recv(q, theirs);
                                 sent.payload_share = got.payload_share = share;
                                 sent.max_Bps = (*limit)[ix(p)][ix(q)];
                                 got.max_Bps = (*limit)[ix(q)][ix(p)];
                                 out.push_back(sent);
                                 out.push_back(got);
                               }
                             }});
    s.rounds.push_back(Round{"alltoall", "", [=](int p, std::vector<Op>& out) {
                               if (p < n) out.push_back(Op::copy(Slice{received, whole}, Slice{0, whole}));
                             }});
    ExpectedRegion e{Slice{0, whole}, false, false, {}};
    e.transposed_blocks = n;
    s.expected.push_back(e);
  }
  if (whole < ctx.elements * eb) s.expected.push_back(ExpectedRegion{Slice{whole, ctx.elements * eb - whole}, false, true, {}});
  if (s.expected.empty()) s.expected.push_back(ExpectedRegion{Slice{0, 0}, false, true, {}});
  std::string pairs = "pairs:";
  for (const Hop& h : plan->pairs) {
    if (h.path == "LOC" || h.from > h.to) continue;
    pairs += " " + ctx.topology.node(ctx.placement.ranks[ix(h.from)]).id + "<->" + ctx.topology.node(ctx.placement.ranks[ix(h.to)]).id +
             " " + transport_name(h.transport) + " (" + h.path + ")";
  }
  s.notes.push_back(std::string("protocol ") + kProtocolNames[ix(a.protocol)] +
                    ", alltoall: a message of S/N to every other rank at once (ncclSend / ncclRecv in a group), copies only");
  if (n > 1) s.notes.push_back(pairs);
  if (!plan->pcie_note.empty()) {
    s.notes.push_back("SHM through host memory at " + format_fixed(param_number(ctx, "shm_efficiency"), 2) +
                      " of the PCIe rate shared by the GPUs behind one switch, and by a GPU's N - 1 messages; " + plan->pcie_note);
  }
  return s;
}

}  // namespace

// NCCL's time for the plan's algorithm and protocol (the closed form), with the tree's
// pipeline fill as the schedule has it.
double per_hop_seconds(const StrategyContext& ctx) {
  if (ctx.params.text("collective") == "alltoall") return alltoall_seconds(ctx);
  const Plan plan = plan_for(ctx);
  ctx.resolved_as("algorithm", kAlgorithmNames[ix(plan.algorithm)]);
  ctx.resolved_as("protocol", kProtocolNames[ix(plan.protocol)]);
  ctx.resolved_as("channels", std::to_string(plan.channels));
  double seconds = plan.seconds[ix(plan.algorithm)][ix(plan.protocol)];
  const int n = ctx.N();
  if (plan.algorithm == kTree && n > 1) {
    // What the schedule takes: NCCL's tree time with the pipeline's fill (chunks + hops - 1
    // rounds each way instead of chunks).
    const double chunks = tree_chunks(ctx);
    const double rate = plan.rate_Bps[kTree][ix(plan.protocol)] * tree_correction(plan.protocol, ctx.bytes());
    if (rate > 0) seconds += 2.0 * ctx.bytes() / rate * ((chunks + n - 2) / chunks - 1);
  } else if (chain_collective(ctx.params.text("collective")) && n > 1) {
    // The chain's pipeline fill, one way.
    const double chunks = tree_chunks(ctx);
    const double rate = plan.rate_Bps[kRing][ix(plan.protocol)];
    if (rate > 0) seconds += ctx.bytes() / rate * ((chunks + n - 2) / chunks - 1);
  }
  return seconds;
}

// The plan as a schedule: each hop's transfers as its transport and the protocol move them.
Schedule per_hop_schedule(const StrategyContext& ctx) {
  if (ctx.params.text("collective") == "alltoall") return alltoall_schedule(ctx);
  const auto plan = std::make_shared<const Plan>(plan_for(ctx));
  const auto a = ix(plan->algorithm);
  const auto p = ix(plan->protocol);
  ctx.resolved_as("algorithm", kAlgorithmNames[a]);
  ctx.resolved_as("protocol", kProtocolNames[p]);
  ctx.resolved_as("channels", std::to_string(plan->channels));
  Schedule s = start_schedule("nccl", ctx);
  // The reduction happens inside the copy loop: no local pass costs anything.
  for (Participant& part : s.participants) part.costs = LocalCosts{};
  s.latency_in_ops = true;
  const int n = ctx.N();
  // Launch and the protocol's base latency, once.
  add_compute(s, all_workers(s), plan->launch_s + kBaseLatencyUs[a][p] * 1e-6, "launch + base latency");
  const Region region{0, ctx.elements, ctx.element_bytes};
  const double share = kPayloadShare[a][p] * (plan->algorithm == kTree ? tree_correction(plan->protocol, ctx.bytes()) : 1.0);
  // By the sending rank and direction (towards the next rank in ring order, or back): what
  // its hop's transport and the protocol let through.
  auto limits = std::make_shared<std::vector<std::array<double, 2>>>(static_cast<std::size_t>(n), std::array<double, 2>{0, 0});
  for (std::size_t i = 0; i < plan->hops.size(); ++i) {
    const Hop& h = plan->hops[i];
    const double limit = link_limit(h, kPayloadShare[a][p], plan->cap_Bps[a][p]);
    (*limits)[ix(h.from)][0] = limit;  // forward: h.from -> h.to
    (*limits)[ix(h.to)][1] = limit;    // back: h.to -> h.from
  }
  auto position = std::make_shared<std::vector<int>>(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i) (*position)[ix(plan->ring[ix(i)])] = i;
  std::size_t first_transfer_round = s.rounds.size();
  double hop_us = 0;  // NCCL's latency of the steps: 2(N-1) ring steps of the mean hop, or the chain's hops both ways
  const std::string& collective = ctx.params.text("collective");
  if (plan->algorithm == kRing && chain_collective(collective)) {
    // The ring cut into a chain: rank 0 first (broadcast: its buffer overwrites the others') or
    // last (reduce: the sum ends there, the others' buffers left as they are along the way).
    const Slice whole = region.slice();
    if (collective == "broadcast") {
      add_chain_pass(s, plan->ring, region, tree_chunks(ctx), false, "broadcast");
      s.expected = {ExpectedRegion{whole, false, false, {0}}};
    } else {
      add_chain_pass(s, std::vector<int>(plan->ring.rbegin(), plan->ring.rend()), region, tree_chunks(ctx), true, "reduce");
      s.expected = {ExpectedRegion{whole, true, false, {}, 1, false, {0}}};
    }
    // One step's latency: the mean of the chain's hops.
    for (std::size_t i = 0; i + 1 < plan->hops.size(); ++i) hop_us += plan->hops[i].path == "LOC" ? 0.0 : kHopLatencyUs[ix(plan->hops[i].hw)][a][p];
    hop_us /= std::max(1, n - 1);
  } else if (plan->algorithm == kRing) {
    if (collective == "all_reduce") {
      add_ring_allreduce(s, {plan->ring}, region);
    } else {
      add_ring_half(s, plan->ring, region, collective == "reduce_scatter", "");
    }
    // 2(N-1) steps (N-1 for one half), each the mean hop's latency.
    for (const Hop& h : plan->hops) hop_us += h.path == "LOC" ? 0.0 : kHopLatencyUs[ix(h.hw)][a][p];
    hop_us *= n > 1 ? (collective == "all_reduce" ? 2.0 : 1.0) * (n - 1) / n : 0.0;
  } else {
    add_chain_allreduce(s, plan->ring, region, tree_chunks(ctx));
    for (std::size_t i = 0; i + 1 < plan->hops.size(); ++i) {
      hop_us += plan->hops[i].path == "LOC" ? 0.0 : 2 * kHopLatencyUs[ix(plan->hops[i].hw)][a][p];
    }
  }
  // Every round: its share of the latencies (so that they add up to NCCL's sum: 2(N-1)
  // ring steps of the mean hop, or the chain's hops up and down), and each transfer as its
  // hop's transport and the protocol move it.
  const std::size_t rounds = s.rounds.size() - first_transfer_round;
  const double step_s = rounds > 0 ? hop_us * 1e-6 / static_cast<double>(rounds) : 0.0;
  for (std::size_t r = first_transfer_round; r < s.rounds.size(); ++r) {
    Round& round = s.rounds[r];
    round.compute_phase = "step latency";
    round.ops = [inner = std::move(round.ops), limits, position, share, step_s, n](int q, std::vector<Op>& out) {
      const std::size_t first = out.size();
      inner(q, out);
      for (std::size_t i = first; i < out.size(); ++i) {
        Op& op = out[i];
        if (!op.is_transfer()) continue;
        op.payload_share = share;
        const int sender = op.kind == OpKind::send ? q : op.peer;
        const int receiver = op.kind == OpKind::send ? op.peer : q;
        const bool forward = (*position)[ix(receiver)] == ((*position)[ix(sender)] + 1) % n;
        op.max_Bps = (*limits)[ix(sender)][forward ? 0 : 1];
      }
      out.push_back(Op::compute(step_s));
    };
  }
  std::string hops = "hops:";
  for (std::size_t i = 0; i < plan->hops.size(); ++i) {
    const Hop& h = plan->hops[i];
    const bool chained = plan->algorithm == kTree || chain_collective(collective);
    if (h.path == "LOC" || (chained && i + 1 == plan->hops.size())) continue;
    hops += " " + ctx.topology.node(ctx.placement.ranks[ix(h.from)]).id +
            (plan->algorithm == kTree ? "<->" : "->") + ctx.topology.node(ctx.placement.ranks[ix(h.to)]).id + " " +
            transport_name(h.transport) + " (" + h.path + ")";
  }
  s.notes.push_back(std::string("protocol ") + kProtocolNames[p] + ", " + std::to_string(plan->channels) + " channels, " +
                    (plan->algorithm == kRing ? "ring " + collective_words(collective)
                     : plan->tree_allowed ? "tree all-reduce (a chain on one node)"
                                          : "tree all-reduce as one chain (NCCL's double binary tree across nodes is not modelled)") +
                    (collective == "all_gather" || collective == "broadcast" ? "; copies only, nothing to reduce"
                                                                               : "; reduction fused into the copy"));
  s.notes.push_back(hops);
  if (!plan->pcie_note.empty()) {
    s.notes.push_back("SHM through host memory at " + format_fixed(param_number(ctx, "shm_efficiency"), 2) +
                      " of the PCIe rate shared by the GPUs behind one switch; " + plan->pcie_note);
  }
  return s;
}

double launch_seconds(const StrategyContext& ctx) {
  return param_number(ctx, "launch_us") * 1e-6 * static_cast<double>(ctx.params.integer("gpus_per_thread"));
}

}  // namespace gradsync::models::strategies::nccl_strategy
