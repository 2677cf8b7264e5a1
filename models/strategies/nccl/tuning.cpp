#include "models/strategies/nccl/tuning.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gradsync::models::nccl {

namespace {

// tuning.cc's latency tables, by algorithm (Tree, Ring, CollNet direct, CollNet chain, NVLS, NVLS
// tree, PAT) and protocol (LL, LL128, Simple): baseLat, and hwLat per step over NVLink, PCIe and
// the network. NCCL retuned them between releases; three eras as its source has them.
struct LatencyTable {
  double base[kAlgorithms][kProtocols];
  double hw[3][kAlgorithms][kProtocols];
};
// 2.23 onwards (2.23.4 .. 2.30.7: the same figures, in tunerConstants from 2.28).
constexpr LatencyTable kLatency2_23 = {
    {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}},
    {{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},     // NVLink
     {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},        // PCI
     {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}}};  // NET
// 2.18 .. 2.22 (2.21.5's; 2.18 had CollNet and NVLS figures of its own, and 2.18.3 - 2.18.6 a tree
// Simple step of 4 / 6 / 14 us, none of which the published machines of that era run). No PAT.
constexpr LatencyTable kLatency2_18 = {
    {{6.8, 14.0, 0}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
    {{{0.6, 1.25, 28}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 0}},
     {{1.0, 1.9, 28}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
     {{5.0, 8.5, 28}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 14}, {0, 0, 0}}}};
// 2.8 .. 2.17 (2.14.3 .. 2.17.1's: the ring's and tree's figures are the same from 2.8, but for
// 2.12 - 2.13's network ring step of 28 us with Simple; CollNet's differ before 2.14). NVLS (2.17)
// base 40 us; no NVLS tree, no PAT. Before 2.8 (2.4 had no cost model; 2.5 - 2.7 other tables)
// the newest stand in.
constexpr LatencyTable kLatency2_17 = {
    {{4.4, 4.4, 0}, {3.6, 10.0, 8.4}, {4.4, 4.4, 0}, {4.4, 4.4, 0}, {0, 0, 40.0}, {0, 0, 0}, {0, 0, 0}},
    {{{0.52, 1.25, 28}, {0.47, 1.9, 3.4}, {0, 0, 8.0}, {0, 0, 8.0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
     {{1.0, 1.9, 28}, {1.0, 2.5, 5.7}, {0, 0, 8.0}, {0, 0, 8.0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
     {{5.0, 8.5, 28}, {2.7, 4.0, 9.6}, {0, 0, 10.7}, {0, 0, 10.7}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}}}};
const LatencyTable& latency_table(int nccl_version) {
  return nccl_version >= 22300 || nccl_version < 20800 ? kLatency2_23 : nccl_version >= 21800 ? kLatency2_18 : kLatency2_17;
}
// [Volta, Ampere, Hopper, Blackwell][N1, N2, N4]; LL's by GPU on one node, by CPU across nodes.
constexpr double kLlMaxBw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
constexpr double kRingLL128PerCh[4][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
constexpr double kTreeLL128PerCh[4][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kTreePerCh[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kNvlsTreePerCh[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
constexpr double kNvlsEfficiency[4] = {0.0, 0.0, 0.85, 0.74};
// "Trees are not perfectly sticking to the model for medium sizes": by protocol and log2(bytes / 64).
constexpr double kTreeCorrection[kProtocols][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

int log2i(long long n) {
  if (n <= 0) return -1;
  int l = 0;
  while ((n >> (l + 1)) != 0) ++l;
  return l;
}

int cc_index(int cc) { return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0; }

}  // namespace

bool all_gather_like(Collective c) { return c == Collective::all_gather || c == Collective::reduce_scatter; }

bool point_to_point(Collective c) { return c == Collective::alltoall || c == Collective::sendrecv; }

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::broadcast: return "broadcast";
    case Collective::reduce: return "reduce";
    case Collective::alltoall: return "alltoall";
    case Collective::sendrecv: return "sendrecv";
  }
  return "";
}

std::optional<Collective> collective_from_name(const std::string& name) {
  for (Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::broadcast,
                       Collective::reduce, Collective::alltoall, Collective::sendrecv}) {
    if (name == collective_name(c)) return c;
  }
  return std::nullopt;
}

const char* algorithm_name(int a) {
  static const char* names[kAlgorithms] = {"Tree", "Ring", "CollnetDirect", "CollnetChain", "NVLS", "NVLSTree", "PAT"};
  return a >= 0 && a < kAlgorithms ? names[a] : "?";
}

const char* protocol_name(int p) {
  static const char* names[kProtocols] = {"LL", "LL128", "Simple"};
  return p >= 0 && p < kProtocols ? names[p] : "?";
}

int algorithm_from_name(const std::string& name) {
  for (int a = 0; a < kAlgorithms; ++a) {
    if (name == algorithm_name(a)) return a;
  }
  return -1;
}

int protocol_from_name(const std::string& name) {
  for (int p = 0; p < kProtocols; ++p) {
    if (name == protocol_name(p)) return p;
  }
  return -1;
}

const Graph& Comm::graph(int a) const {
  switch (a) {
    case kTree: return tree;
    case kRing: return ring;
    case kCollnetDirect: return collnet_direct;
    case kCollnetChain: return collnet_chain;
    case kNvls:
    case kNvlsTree: return nvls;
    default: return tree;  // PAT: tree's
  }
}

StepBandwidths step_bandwidths(const Comm& comm, Collective coll, int a) {
  const Graph& g = comm.graph(a);
  if (a != kNvls && a != kNvlsTree) return {g.bw_intra, g.bw_inter};
  if (g.n_channels < 1) return {};
  const double ppn = static_cast<double>(comm.ranks) / comm.nodes;
  double intra = g.bw_intra * kNvlsEfficiency[cc_index(comm.cc_min)] * (g.n_channels - 1) / g.n_channels;
  intra *= coll == Collective::all_reduce ? 2.0 : (ppn - 1) / ppn;
  return {intra, g.bw_inter * (comm.nodes <= 2 && a == kNvlsTree ? 2 : 1)};
}

double nvls_efficiency(int compute_capability) { return kNvlsEfficiency[cc_index(compute_capability)]; }

double nvls_tree_kernel_speedup(const Comm& comm, Collective coll) {
  if (comm.nodes < 2 || comm.graph(kNvlsTree).n_channels < 2) return 1.0;
  const StepBandwidths steps = step_bandwidths(comm, coll, kNvlsTree);
  const double ceiling = std::min(steps.inter, kNvlsTreePerCh[cc_index(comm.cc_min)][comm.nodes <= 2 ? 1 : 2]);
  const double priced = std::min(steps.intra, ceiling);
  return priced > 0 && priced < ceiling ? ceiling / priced : 1.0;
}

Costs tune(const Comm& comm, Collective coll) {
  Costs c;
  const int n_nodes = comm.nodes, n_ranks = comm.ranks;
  if (n_ranks <= 1 || point_to_point(coll)) return c;
  const int cci = cc_index(comm.cc_min);
  const int v = comm.nccl_version < 20800 ? kNcclVersion : comm.nccl_version;  // latency_table: before 2.8, the newest
  const LatencyTable& tab = latency_table(v);
  const int i2 = n_nodes <= 2 ? n_nodes - 1 : 2;
  const bool amd = comm.cpu_vendor == "amd";
  const int i1 = n_nodes == 1 ? cci : amd ? 1 : 0;
  const double ll_max = kLlMaxBw[i1][i2];
  const double tree_per_ch = kTreePerCh[cci][i2];
  const double ring_ll128_per_ch = kRingLL128PerCh[cci][i2];
  const double tree_ll128_per_ch = kTreeLL128PerCh[cci][i2];
  const double nvls_tree_per_ch = kNvlsTreePerCh[cci][i2];
  const double ppn = static_cast<double>(n_ranks) / n_nodes;
  int intra_hw[kAlgorithms], hw[kAlgorithms];
  for (int a = 0; a < kAlgorithms; ++a) {
    intra_hw[a] = comm.graph(a).type_intra == kPathNvl ? kNvlinkHw : kPciHw;
    hw[a] = n_nodes == 1 ? intra_hw[a] : kNetHw;
  }
  const int nsteps = coll == Collective::all_reduce ? 2 * (n_ranks - 1) : all_gather_like(coll) ? n_ranks - 1 : n_ranks;
  const bool pat_enable = comm.cc_min >= 60 && n_nodes == n_ranks && v >= 22300;
  for (int a = 0; a < kAlgorithms; ++a) {
    if ((coll == Collective::broadcast || coll == Collective::reduce) && a != kRing) continue;
    if (all_gather_like(coll) && a != kPat && a != kRing && a != kNvls && a != kCollnetDirect) continue;
    if (coll == Collective::all_reduce && a == kPat) continue;
    const Graph& g = comm.graph(a);
    for (int p = 0; p < kProtocols; ++p) {
      if ((a == kNvls || a == kNvlsTree) && p != kSimple) continue;
      if (all_gather_like(coll) && a == kPat && (p != kSimple || !pat_enable)) continue;
      const bool collnet = a == kCollnetDirect || a == kCollnetChain;
      double bw = n_nodes <= 2 || collnet ? g.bw_intra : g.bw_inter;
      if (a == kNvls || a == kNvlsTree) {
        if (g.n_channels < 2) continue;
        const StepBandwidths steps = step_bandwidths(comm, coll, a);
        bw = std::min({steps.intra, steps.inter, a == kNvlsTree ? nvls_tree_per_ch : std::numeric_limits<double>::max()});
      }
      double bus = g.n_channels * bw;
      // Before 2.18 an Ampere communicator's bus bandwidth was capped at 235 GB/s; before 2.21 LL
      // was credited a quarter of the ring's (a third for a one-host gather, scatter or
      // broadcast), half since; before 2.23 LL128 0.7 of it where a host has one GPU.
      if (v < 21800 && comm.cc_min == 80 && comm.cc_max == 80) bus = std::min(bus, 235.0);
      const double ll_share = v >= 22100 ? .5 : n_nodes > 1 || coll == Collective::all_reduce || coll == Collective::reduce ? 0.25 : 1.0 / 3.0;
      if (a == kRing && p == kLL) bus = std::min(ll_max, bus * ll_share);
      if (a == kRing && p == kLL128) bus = std::min(bus * (v < 22300 && ppn < 2 ? 0.7 : 0.92), g.n_channels * ring_ll128_per_ch);
      if (a == kTree && coll == Collective::all_reduce) bus = std::min(bus * .92, g.n_channels * tree_per_ch);
      if (a == kTree && p == kLL) bus = std::min(bus * 1.0 / 3.8, ll_max);
      if (a == kTree && p == kLL128) bus = std::min(bus * (n_nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), g.n_channels * tree_ll128_per_ch);
      if (a == kTree && comm.max_tree_pattern == static_cast<int>(Pattern::tree)) bus *= .85;
      if (a == kPat) bus *= .75;
      if (collnet && p != kSimple) bus = 0;
      if (a == kCollnetDirect && p == kSimple) {
        if (all_gather_like(coll)) {
          bus = ppn * std::min(g.bw_intra, g.bw_inter * 0.9);
        } else {
          double factor = ppn / std::max(1, g.n_channels);
          factor -= (factor - 1) / 2;
          bus /= factor;
          if (comm.cc_min >= 90) bus *= .85;
        }
      }
      if ((a == kNvls || a == kCollnetDirect) && p == kSimple && all_gather_like(coll) && n_nodes > 1) bus = 0;  // no CollNet plugin here
      if (!(a != kRing && all_gather_like(coll))) {
        const double ratio = a == kRing || a == kNvls || a == kNvlsTree ? static_cast<double>(n_ranks) / nsteps : 0.5;
        bus *= ratio;
      }
      c.bw[a][p] = bus;
      double lat = tab.base[a][p];
      double intra_lat = tab.hw[intra_hw[a]][a][p];
      double inter_lat = (ppn == 1 && v >= 22300 ? tab.hw[kNetHw][kTree][p] : tab.hw[kNetHw][a][p]) + g.latency_inter;
      if (p == kSimple) inter_lat += g.latency_inter;
      if (v < 21800) {
        // Before 2.18: the graph's network latency, where it has one, replaced the table's step
        // (from 2.12; the table's alone before); LL's steps within a host cost 1.8 times as much
        // once the ring leaves the host.
        inter_lat = g.latency_inter > 0 && v >= 21200 ? g.latency_inter : tab.hw[kNetHw][a][p];
        if (n_nodes > 1 && p == kLL) intra_lat *= 1.8;
      }
      if (a == kRing) {
        double l = tab.hw[hw[a]][a][p];
        if (coll == Collective::reduce || coll == Collective::broadcast) {
          if (g.same_channels) {
            lat += l;
          } else {
            if (p == kSimple) l = tab.hw[hw[a]][kTree][p];
            lat += nsteps * l;
          }
        } else {
          double net_overhead = 0;
          if (n_nodes > 1 && v >= 21800) {
            net_overhead = amd ? 2.0 : 1.0;
            if (p == kSimple) net_overhead *= 3;
          }
          intra_lat = std::max(intra_lat, net_overhead);
          // From 2.12 to 2.22 an all-reduce counted 2 x nodes steps between hosts (more than its steps
          // where a host has one GPU: NCCL's sum then takes some steps within a host off), 2 x (nodes - 1)
          // before and since.
          const int inter_steps = n_nodes == 1                             ? 0
                                  : coll != Collective::all_reduce        ? n_nodes - 1
                                  : v >= 22300 || v < 21200               ? 2 * (n_nodes - 1)
                                                                          : 2 * n_nodes;
          lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
        }
      } else if (a == kTree) {
        if (coll == Collective::all_reduce) lat += 2 * ((n_ranks / n_nodes - 1) * intra_lat + log2i(n_nodes) * inter_lat);
      } else if (a == kCollnetDirect) {
        const int local = n_ranks / n_nodes - 1;
        lat += 2 * (std::min(1, local) * intra_lat + local * 0.4) + inter_lat;
      } else if (a == kCollnetChain) {
        lat += 2 * (n_ranks / n_nodes - 1) * intra_lat + inter_lat;
      } else if (a == kNvls) {
        lat = intra_lat;
        if (n_nodes > 1) lat += inter_lat;
      } else if (a == kNvlsTree) {
        lat += intra_lat + 2 * log2i(n_nodes) * inter_lat;
      } else if (a == kPat) {
        if (all_gather_like(coll)) lat += log2i(n_nodes) * (inter_lat / 3.5) + n_ranks * 2.8;
      }
      c.lat[a][p] = lat;
    }
  }
  // What is enabled: LL128 by NCCL's rules unless the user chose a protocol; algorithms the
  // machine does not support are off; the user's NCCL_ALGO / NCCL_PROTO leave only their choice.
  for (int a = 0; a < kAlgorithms; ++a) {
    bool algo_on = comm.forced_algorithm < 0 ? ((comm.allowed_algorithms >> a) & 1U) != 0 : comm.forced_algorithm == a;
    if (n_nodes == 1 && a == kNvlsTree) algo_on = false;
    if (!comm.collnet_enable && (a == kCollnetDirect || a == kCollnetChain || (a == kNvls && n_nodes > 1))) algo_on = false;
    if (!comm.nvswitch && a == kCollnetDirect) algo_on = false;
    if ((a == kNvls || a == kNvlsTree) && !comm.nvls_support) algo_on = false;
    if ((a == kNvls && v < 21700) || (a == kNvlsTree && v < 21800)) algo_on = false;  // NVLS came in 2.17, its tree in 2.18
    // One CollNet algorithm before 2.14 (NCCL_ALGO_COLLNET): a chain through each host up to the
    // network's switch and back down to 2.11 (all_reduce.h: collTree up, down), heads that the
    // host's GPUs scatter to and gather from in 2.12 and 2.13 (collnetDirect's kernel); both since.
    if ((a == kCollnetDirect && v < 21200) || (a == kCollnetChain && v >= 21200 && v < 21400)) algo_on = false;
    for (int p = 0; p < kProtocols; ++p) {
      bool proto_on = comm.forced_protocol < 0 || comm.forced_protocol == p;
      if (comm.forced_protocol < 0 && p == kLL128) {
        const Graph& g = comm.graph(a);
        bool on = comm.cc_min >= 90 ? g.type_inter <= kPathPxn : g.type_inter <= kPathPxb;
        on = on && g.type_intra <= kPathNvb;
        on = on && (comm.cc_min == comm.cc_max || comm.cc_min >= 90);
        on = on && comm.cc_min >= 70;
        proto_on = on;
      }
      if (!proto_on || !algo_on) c.bw[a][p] = 0;
    }
  }
  return c;
}

AlgoTime algorithm_time(const Comm& comm, const Costs& costs, Collective coll, int a, int p, double bytes) {
  AlgoTime t{costs.lat[a][p], costs.bw[a][p]};
  if (t.bw_GBps == 0) return t;
  const int log_size = log2i(static_cast<long long>(bytes) >> 6);
  if (a == kTree && coll == Collective::all_reduce && log_size >= 0 && log_size < 23) t.bw_GBps *= kTreeCorrection[p][log_size];
  if (a == kNvlsTree && coll == Collective::all_reduce && log_size >= 0 && log_size < 24 && comm.cc_min >= 100) {
    t.bw_GBps *= kTreeCorrection[p][log_size];
  }
  const int v = comm.nccl_version < 20800 ? kNcclVersion : comm.nccl_version;  // as tune()
  if (a == kRing && p == kSimple && comm.nodes > 1 && coll == Collective::all_reduce) {
    // The ring's plateau: from 2.18 past 64 bytes a channel and rank, 1.9 times before Ampere and
    // 1.4 from it; before, past a 16th of 64 KiB a rank, 1.9 times (2.17: 1.5 from Hopper).
    if (v >= 21800 && bytes / (std::max(1, comm.channels) * comm.ranks) >= 64) {
      t.latency_us *= comm.cc_min < 80 ? 1.9 : 1.4;
    } else if (v < 21800 && bytes >= comm.ranks / 16.0 * 65536) {
      t.latency_us *= comm.cc_min < 90 ? 1.9 : 1.5;
    }
  }
  return t;
}

double algorithm_time_us(const Comm& comm, const Costs& costs, Collective coll, int a, int p, double bytes) {
  return algorithm_time(comm, costs, coll, a, p, bytes).time_us(bytes);
}

double base_latency_us(int a, int p) { return a >= 0 && a < kAlgorithms && p >= 0 && p < kProtocols ? kLatency2_23.base[a][p] : 0.0; }

double hop_latency_us(int hw, int a, int p) {
  return hw >= 0 && hw < 3 && a >= 0 && a < kAlgorithms && p >= 0 && p < kProtocols ? kLatency2_23.hw[hw][a][p] : 0.0;
}

Choice choose(const Comm& comm, const Costs& costs, Collective coll, double bytes) {
  Choice best;
  double min_time = std::numeric_limits<double>::max();
  for (int a = 0; a < kAlgorithms; ++a) {
    if (a == kNvls && !comm.collnet_enable && comm.nodes > 1) continue;
    for (int p = 0; p < kProtocols; ++p) {
      const double t = algorithm_time_us(comm, costs, coll, a, p, bytes);
      if (t >= 0 && t < min_time) {
        min_time = t;
        best = Choice{a, p, t};
      }
    }
  }
  if (min_time == std::numeric_limits<double>::max()) best.time_us = -1;
  return best;
}

int kernel_channels(const Comm& comm, int a, int p, double bytes) {
  const int channels = std::max(1, comm.channels);
  if (a != kRing && a != kTree && a != kCollnetChain) return channels;
  // Before 2.12 (NCCL_ALGO_COLLNET, enqueue.cc): "CollNet uses one channel for up and one channel
  // for down", half the channels each, whatever the size.
  if (a == kCollnetChain && comm.nccl_version < 21200) return std::max(1, channels / 2);
  // tuning.cc ncclTopoTuneModel: maxThreads (device.h NCCL_*_MAX_NTHREADS; a ring's Simple
  // kernel 256 threads where its channels carry no more than PCIe, PCI_BW 24 GB/s) and
  // threadThresholds (comm.h NCCL_*_THREAD_THRESHOLD; 512 for CollNet chain).
  const Graph& ring = comm.graph(kRing);
  double threads = p == kLL128 ? 640 : 512;
  if (a == kRing && p == kSimple && ring.bw_intra * ring.n_channels <= 24.0) threads = 256;
  if (a == kCollnetChain) threads = 640;
  double threshold = p == kSimple ? 64 : 8;
  if (a == kRing && p == kLL) threshold *= comm.ranks;
  if (a == kCollnetChain && p == kSimple) threshold = 512;
  int nc = channels;
  while (nc >= 2 && bytes < nc * threads * threshold) --nc;
  return nc;
}

}  // namespace gradsync::models::nccl
