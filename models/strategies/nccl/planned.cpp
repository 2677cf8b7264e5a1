#include "models/strategies/nccl/planned.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>

#include "models/strategies/common.h"
#include "models/strategies/nccl/p2p_channels.h"
#include "models/strategies/nccl/pipeline.h"
#include "models/strategies/nccl/rails.h"
#include "models/strategies/nccl/point_to_point.h"
#include "models/strategies/nccl/system.h"
#include "models/strategies/nccl/transports.h"
#include "models/support/error.h"
#include "models/support/format.h"
#include "models/topology/importers/nccl_tests.h"
#include "models/topology/topology.h"

namespace gradsync::models::nccl {

namespace {

using strategies::add_compute;
using strategies::add_ring_all_gather;
using strategies::add_ring_allreduce;
using strategies::add_ring_reduce_scatter;
using strategies::ring_half_expected;
using strategies::all_workers;
using strategies::start_schedule;

template <class T>
std::size_t pos(T v) {
  return static_cast<std::size_t>(v);
}

// enqueue.cc: a tree step's chunk is the protocol's buffer over NCCL_STEPS (8): LL's 512 KiB
// of lines (half of it payload), LL128's 4.9 MB (15/16 payload), Simple's 4 MiB. The ring's
// broadcast and reduce move chunks of one step too (BROADCAST_CHUNKSTEPS, REDUCE_CHUNKSTEPS: 1).
constexpr std::array<double, kProtocols> kTreeChunkBytes = {32768, 576000, 524288};
constexpr double kNvlsChunkBytes = 131072;  // nvls.cc NCCL_NVLS_CHUNKSIZE
// What a warp passes on at once: LL 32 threads x 8 bytes of data (NCCL_LL_ALIGNMENT_PER_THREAD),
// LL128 480 bytes (NCCL_LL128_ALIGNMENT_PER_WARP: four 128-byte lines of 120); Simple a whole step.
constexpr std::array<double, kProtocols> kForwardUnitBytes = {256, 480, 0};

struct Up {
  int parent = -1;
  int child_type = 0;  // 0: the parent's first child, 1: its second
};

// trees.cc ncclGetBtree: the parent of `rank` in the binary tree of n ranks rooted at 0.
Up btree_up(int n, int rank) {
  if (rank == 0) return {};
  int bit = 1;
  for (; bit < n; bit <<= 1) {
    if ((bit & rank) != 0) break;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  return {up, rank < up ? 0 : 1};
}

// ncclGetDtree: tree 0 is the binary tree; tree 1 its mirror (n even) or the tree shifted by
// one rank (n odd), so that a node that is a leaf in one is inner in the other.
Up dtree_up(int n, int rank, int tree) {
  if (tree == 0) return btree_up(n, rank);
  if (n % 2 == 1) {
    Up u = btree_up(n, (rank - 1 + n) % n);
    if (u.parent >= 0) u.parent = (u.parent + 1) % n;
    return u;
  }
  Up u = btree_up(n, n - 1 - rank);
  if (u.parent >= 0) u.parent = n - 1 - u.parent;
  return u;
}

// The GPU (rank) heading NVLS channel `head` on a host: the search records it first.
int nvls_head(const Plan& plan, std::size_t host, int head) {
  const std::vector<int>& ranks = plan.hosts[host];
  const Graph& g = plan.host_graph(host, kNvls);
  if (g.intra.empty()) return ranks[pos(head) % ranks.size()];
  const int local = g.intra[pos(head % static_cast<int>(g.intra.size()))].front();
  return local >= 0 && pos(local) < ranks.size() ? ranks[pos(local)] : ranks[pos(head) % ranks.size()];
}

bool is_collnet(int a) { return a == kCollnetChain || a == kCollnetDirect; }
bool is_tree(int a) { return a == kTree || a == kNvls || a == kNvlsTree || is_collnet(a); }

// connect.cc connectCollNet: the GPUs (ranks) heading CollNet direct's channels on a host, each
// its graph channel's first, once.
std::vector<int> collnet_heads(const Plan& plan, std::size_t host) {
  std::vector<int> heads;
  const Graph& g = plan.host_graph(host, kCollnetDirect);
  for (int c = 0; c < std::max(1, g.n_channels); ++c) {
    const int head = host_order(plan, host, kCollnetDirect, c).front();
    if (std::find(heads.begin(), heads.end(), head) == heads.end()) heads.push_back(head);
  }
  return heads;
}

// Broadcast and reduce: each channel's ring (the hosts' orders joined end to end) cut at the root
// (rank 0, nccl-tests' default) into a chain, chain[0] the root: broadcast from it; reduce into
// it, the bytes flowing round the ring from the rank after it.
std::vector<std::vector<int>> chains_of(const Plan& plan, int channels) {
  std::vector<std::vector<int>> chains;
  for (int c = 0; c < channels; ++c) {
    std::vector<int> ring;
    for (std::size_t h = 0; h < plan.hosts.size(); ++h) {
      const std::vector<int> order = host_order(plan, h, kRing, c);
      ring.insert(ring.end(), order.begin(), order.end());
    }
    const auto root = std::find(ring.begin(), ring.end(), 0);
    std::rotate(ring.begin(), plan.collective == Collective::broadcast ? root : root + 1, ring.end());
    if (plan.collective == Collective::reduce) std::reverse(ring.begin(), ring.end());
    chains.push_back(std::move(ring));
  }
  return chains;
}

// Whether two ranks share a host.
std::function<bool(int, int)> same_host(const Plan& plan) {
  auto host = std::make_shared<const std::vector<int>>(plan.rank_host);
  return [host](int a, int b) { return pos(a) < host->size() && pos(b) < host->size() && (*host)[pos(a)] == (*host)[pos(b)]; };
}

// The NICs a channel's transfers between hosts leave and enter by, as NCCL's search gave them to
// the channel (search.cc ncclTopoGetNetDev: the channel's first GPU on a host talks through the
// graph's first NIC of that channel, any other GPU through its second); kNoVia within a host, and
// where the host's NICs are not known (the route nearest the GPU then).
class ChannelNics {
 public:
  explicit ChannelNics(const Plan& plan) : plan_(plan) {}
  Via between(int algorithm, int channel, int from, int to) const {
    if (plan_.rank_host[pos(from)] == plan_.rank_host[pos(to)]) return kNoVia;
    return {nic(algorithm, channel, from), nic(algorithm, channel, to)};
  }
  // For each hop of `order` (order[j] to order[j + 1], the last back to the first where `closed`).
  std::vector<Via> hops(int algorithm, int channel, const std::vector<int>& order, bool closed) const {
    std::vector<Via> out(order.size(), kNoVia);
    for (std::size_t j = 0; j < order.size(); ++j) {
      if (j + 1 < order.size() || closed) out[j] = between(algorithm, channel, order[j], order[(j + 1) % order.size()]);
    }
    return out;
  }

 private:
  std::int32_t nic(int algorithm, int channel, int rank) const {
    const auto h = pos(plan_.rank_host[pos(rank)]);
    const Graph& g = plan_.host_graph(h, algorithm);
    if (g.intra.empty()) return -1;
    const std::size_t c = pos(channel % static_cast<int>(g.intra.size()));
    if (c >= g.inter.size()) return -1;
    const int index = !g.intra[c].empty() && g.intra[c].front() == plan_.rank_local[pos(rank)] ? 0 : 1;
    return plan_.host_nic(h, g.inter[c][pos(index)]);
  }

  const Plan& plan_;
};

// How the plan's algorithm cuts the buffer: rings or trees, chunks per tree.
struct Layout {
  int algorithm = kRing;
  int protocol = kSimple;
  AlgoTime time;     // NCCL's latency and algorithm bandwidth for this size
  int parts = 1;     // channels (ring, tree) or trees (NVLS: one per head; NVLS tree: two per head)
  int heads = 0;     // NVLS heads
  int chunks = 1;    // per tree
  int span = 0;      // a chunk's extra rounds up and down the deepest tree
  double local_speedup = 1;  // how much faster a tree's edges within a host move
  double chunk_times = 1;    // the trees' rounds in full-chunk times (the pipeline's fill included)
  double bw_GBps = 0;        // the algorithm bandwidth the schedule runs at: NCCL's, at most what its channels carry between hosts
  std::string capped_by;     // what holds bw_GBps below NCCL's model, in words ("" where nothing does)
};

std::vector<PipelinedTree> trees_of(const Plan& plan, const Layout& lay, const std::vector<int>& servers, std::uint64_t elements,
                                    int element_bytes);

// Each tree moves its part at the algorithm's bandwidth. Its steps within a host go faster where
// NCCL's model has them faster: a chain's NVLink hops by the ratio of its per-channel
// bandwidths; across hosts an NVSwitch's hops (to the switch and on: an NVLS load-reduce or
// multicast store) go at the NVLinks' pace, as much faster than the network's as a GPU's
// NVLinks outpace its share of the host's NICs (never less than twice: NCCL's model prices the
// two hops of one NVLS step alike with a network step). That holds only where the steps
// between hosts set the pace: on one host every round of the pipeline is NVSwitch hops alone,
// and each must take a whole chunk's time at the algorithm's bandwidth, or the all-reduce would
// run at twice NCCL's rate (NVLS on one HGX H100 node: 476 GB/s of bus bandwidth in NCCL's model
// and in nccl-tests runs).
// What the first host's first GPU's links to its NVSwitch carry one way, GB/s (0: no NVSwitch):
// the topology's rate, or (`nccls`) NCCL's figure for those NVLinks.
double nvswitch_link_GBps(const StrategyContext& ctx, const Plan& plan, bool nccls) {
  const std::size_t gpu = ctx.placement.ranks[pos(plan.hosts.front().front())];
  const std::optional<std::size_t> nvswitch = nvswitch_of(ctx.topology, gpu);
  double nvlink_GBps = 0;
  for (const std::size_t li : ctx.topology.incident_links(gpu)) {
    const Link& l = ctx.topology.links()[li];
    if (nvswitch && (l.a == *nvswitch || l.b == *nvswitch)) nvlink_GBps += nccls ? nccl_nvlink_GBps(l, plan.comm.cc_min) : l.bandwidth_Bps / 1e9;
  }
  return nvlink_GBps;
}

double local_speedup_of(const StrategyContext& ctx, const Plan& plan, int a) {
  if (a == kNvls || a == kNvlsTree) {
    if (plan.hosts.size() < 2) return 1.0;
    const double nvlink_GBps = nvswitch_link_GBps(ctx, plan, false);
    const double nic_share = plan.host.gpus > 0 ? plan.nic_GBps * plan.host.nics / plan.host.gpus : 0.0;
    return nic_share > 0 ? std::max(2.0, nvlink_GBps / nic_share) : 2.0;
  }
  if (plan.hosts.size() < 2 || is_collnet(a)) return 1.0;
  const StepBandwidths steps = step_bandwidths(plan.comm, Collective::all_reduce, a);
  const double slower = std::min(steps.intra, steps.inter);
  return slower > 0 ? std::max(1.0, steps.intra / slower) : 1.0;
}

// Broadcast and reduce: NCCL's ring cut into a chain at the root, the whole buffer along it.
bool chained(const Plan& plan) { return plan.collective == Collective::broadcast || plan.collective == Collective::reduce; }

// How many times a ring's steps go round: twice for the all-reduce, once for one half of it.
double ring_passes(const Plan& plan) { return all_gather_like(plan.collective) ? 1.0 : 2.0; }

// What each hop of a channel's ring carries per byte of the channel's part: 2(N-1)/N for the
// all-reduce, (N-1)/N for one half of it, all of it along a chain.
double hop_load(const Plan& plan, double n) { return chained(plan) ? 1.0 : ring_passes(plan) * (n - 1) / n; }

// One channel's connection between two hosts moves at most what its steps in flight allow
// (transports.h net_channel_cap), which bounds the algorithm bandwidth: a ring channel moves
// 2(N-1)/N of its part through each of its hops (hop_load), a tree's part crosses each edge
// between hosts once each way.
// Within a host, what its transports move (transports.h) bounds it likewise: a GPU's SHM sends
// share its PCIe link, and LL moves a channel's part at LL's rate over PCIe.
double capped_GBps(const StrategyContext& ctx, const Plan& plan, Layout& lay) {
  double bw = lay.time.bw_GBps;
  if (bw <= 0) return bw;
  // NCCL's model prices all its channels; a small buffer runs on fewer (kernel_channels), each
  // at its share of that rate, or with LL at what one channel's threads move on the wire
  // (ll_channel_GBps) where that is more: LL's flags, not the links, hold a lone channel (the
  // HGX A100 sweep's 8-GPU all-reduce at 12-48 KiB, one channel: about 9 GB/s of bus bandwidth,
  // where NCCL's share for one of its 24 is under 4).
  const int channels = kernel_channels(plan.comm, lay.algorithm, lay.protocol, std::numeric_limits<double>::infinity());
  if ((lay.algorithm == kRing || lay.algorithm == kTree || lay.algorithm == kCollnetChain) && lay.parts < channels) {
    double per_channel = bw / channels;
    if (lay.protocol == kLL) per_channel = std::max(per_channel, ctx.params.number("ll_channel_GBps") / (lay.algorithm == kRing ? hop_load(plan, ctx.N()) : 2.0));
    bw = std::min(bw, per_channel * lay.parts);
    lay.capped_by = "NCCL runs " + std::to_string(lay.parts) + " of its " + std::to_string(channels) +
                    " channels at this size (enqueue.cc: a thread's share at least its threshold)";
  }
  if (lay.algorithm == kNvls && plan.hosts.size() == 1 && plan.collective == Collective::all_reduce) {
    // One host's NVLS all-reduce (all_reduce.h runNvls): each rank reduces its S/N through the
    // switch (multimem.ld_reduce: the switch reads that part from every GPU, so each GPU's links
    // carry S out) and stores the sum to every GPU at once (multimem.st: S/N out, S in). Each
    // direction of a GPU's NVLinks carries S (1 + 1/N), at the share of NCCL's rate for them
    // (its per-link figure) that it credits NVLS with (nvlsEfficiency): the algorithm bandwidth
    // is that rate x N / (N + 1). NCCL's own
    // model, which decides the choice, prices it at the graph's channels instead.
    const double links = nvswitch_link_GBps(ctx, plan, true) * nvls_efficiency(plan.comm.cc_min);
    const double n = ctx.N();
    if (links > 0) {
      bw = links * n / (n + 1);
      lay.capped_by = "the multicast moves S (1 + 1/N) each way over a GPU's NVLinks, at " + format_fixed(links, 1) +
                      " GB/s (their rate x NCCL's NVLS efficiency " + format_fixed(nvls_efficiency(plan.comm.cc_min), 2) + ")";
    }
  }
  if (lay.algorithm == kNvlsTree) {
    const double speedup = nvls_tree_kernel_speedup(plan.comm, plan.collective);
    if (speedup > 1) {
      bw *= speedup;
      lay.capped_by = "NCCL's model prices the NVSwitch stage at the NIC-set search speed; its kernels run at the network's and NCCL's "
                      "per-channel NVLS tree ceiling";
    }
  }
  const double n = ctx.N();
  const NetChannelCap net = net_channel_cap(ctx, plan, lay.algorithm, lay.protocol, lay.parts);
  const double cap = net.GBps;
  // (A channel whose bytes across a hop all fit in its steps in flight never waits for one to
  // come back: the window bounds streams, not what NCCL's step latencies already price.)
  const double channel_bytes = ctx.bytes() / std::max(1, lay.parts) * (lay.algorithm == kRing ? hop_load(plan, n) : 1.0);
  if (plan.hosts.size() > 1 && cap > 0 && !(net.in_flight_bytes > 0 && channel_bytes <= net.in_flight_bytes)) {
    const double limit = lay.algorithm == kRing ? cap * lay.parts / hop_load(plan, n) : cap * lay.parts;
    if (limit < bw) {
      bw = limit;
      lay.capped_by = "each of " + std::to_string(lay.parts) + " channels moves " + format_fixed(cap, 1) + " GB/s between hosts at most (" + net.why + ")";
    }
  }
  if (lay.algorithm != kRing && lay.algorithm != kTree && lay.algorithm != kCollnetChain) return bw;
  const double load = lay.algorithm == kRing ? hop_load(plan, n) : 2.0;  // a chain's GPU sends its part up and down
  // On one host of PCIe, NCCL's model prices its nominal PCIe rates (and 16 GB/s between AMD
  // sockets, 10 between Intel's), which decide its choices, not how fast its kernels copy: a
  // channel's threads move `p2p_channel_GBps` over PCIe at most (LL: `ll_channel_GBps`), and the
  // links decide the rest.
  if (plan.hosts.size() == 1 && lay.algorithm != kCollnetChain && plan.comm.graph(lay.algorithm).type_intra > kPathNvb) {
    const bool ll = lay.protocol == kLL;
    const double channel = ctx.params.number(ll ? "ll_channel_GBps" : "p2p_channel_GBps") * (lay.protocol == kLL128 ? 0.92 : 1.0);
    bw = channel * lay.parts / load;
    lay.capped_by = std::string(ll ? "LL" : protocol_name(lay.protocol)) + " moves " + format_fixed(channel, 1) + " GB/s a channel over PCIe (" +
                    (ll ? "ll_channel_GBps" : "p2p_channel_GBps") + "), NCCL's model aside";
  }
  // The hops of the first channel's ring (or chain) within each host; on a chain the first rank
  // only sends and the last only receives.
  HostTransports transports(ctx, plan);
  if (chained(plan)) {
    std::vector<int> sends(pos(ctx.N()), 1), receives(pos(ctx.N()), 1);
    const std::vector<int> chain = chains_of(plan, 1).front();
    sends[pos(chain.back())] = 0;
    receives[pos(chain.front())] = 0;
    transports.set_shm_traffic(sends, receives);
  }
  const double share = kPayloadShare[pos(lay.protocol)];
  const bool closed = lay.algorithm == kRing && !chained(plan) && plan.hosts.size() == 1;  // one host's ring closes on itself
  for (std::size_t h = 0; h < plan.hosts.size(); ++h) {
    const std::vector<int> order = chained(plan) && plan.hosts.size() == 1 ? chains_of(plan, 1).front() : host_order(plan, h, lay.algorithm, 0);
    const std::size_t hops = closed ? order.size() : order.size() - 1;
    for (std::size_t i = 0; i < hops; ++i) {
      const int from = order[i], to = order[(i + 1) % order.size()];
      if (from == to) continue;
      // SHM's limit is the pair's over all its channels (the GPUs' sides, one transfer each way
      // per channel); LL's a channel's.
      // On one host of PCIe every channel takes the same ring (chain): none of its hops carries
      // more than its route's bottleneck (the pair's measured rate where the topology keeps
      // one), which the channels share. The schedule's walk on the links finds the same bound;
      // the closed form (the open facts' plans) needs it said. (Over NVLink, channels take
      // other rings through other links: the walk alone prices them.)
      // An SHM hop does not take the pair's measured copy either: its bytes go to host memory and
      // back (its limit below), where a pair without peer access measured a copy staged through
      // host memory, one half after the other (SHM's sender and receiver overlap).
      if (plan.hosts.size() == 1 && lay.algorithm == kRing && plan.comm.graph(kRing).type_intra > kPathNvb && !transports.shm(from, to)) {
        // A closed ring loads its routes both ways at once, as a chain of three or more does its
        // middle GPUs' links (in from one, out to the next): each way at the duplex share where
        // that is an open fact's other value (Plan::p2p_duplex_share).
        const bool both_ways = closed || order.size() >= 3;
        const double route_Bps = ctx.topology.bottleneck_Bps(ctx.placement.ranks[pos(from)], ctx.placement.ranks[pos(to)]) *
                                 (both_ways ? plan.p2p_duplex_share : 1.0);
        if (route_Bps > 0 && route_Bps * share / load / 1e9 < bw) {
          bw = route_Bps * share / load / 1e9;
          lay.capped_by = "the link from " + ctx.topology.node(ctx.placement.ranks[pos(from)]).id + " to " +
                          ctx.topology.node(ctx.placement.ranks[pos(to)]).id + " carries " + format_fixed(route_Bps / 1e9, 1) +
                          " GB/s";
        }
      }
      const HostTransports::Limit limit = transports.limit(from, to, lay.protocol, share);
      if (limit.shm_Bps > 0 && limit.shm_Bps * share / load / 1e9 < bw) {
        bw = limit.shm_Bps * share / load / 1e9;
        lay.capped_by = "SHM moves " + format_fixed(limit.shm_Bps * share / 1e9, 1) + " GB/s of payload from " +
                        ctx.topology.node(ctx.placement.ranks[pos(from)]).id + " to " + ctx.topology.node(ctx.placement.ranks[pos(to)]).id;
      }
      if (limit.channel_Bps > 0 && limit.channel_Bps * share * lay.parts / load / 1e9 < bw) {
        bw = limit.channel_Bps * share * lay.parts / load / 1e9;
        lay.capped_by = "LL moves " + format_fixed(ctx.params.number("ll_channel_GBps"), 1) + " GB/s a channel over PCIe (ll_channel_GBps)";
      }
    }
  }
  return bw;
}

Layout layout_of(const StrategyContext& ctx, const Plan& plan) {
  Layout lay;
  lay.algorithm = plan.algorithm();
  lay.protocol = plan.protocol();
  const double bytes = ctx.bytes();
  lay.time = algorithm_time(plan.comm, plan.kernel_costs, plan.collective, lay.algorithm, lay.protocol, bytes);
  const auto n = static_cast<std::uint64_t>(ctx.N());
  const int channels = std::max(1, plan.comm.channels);
  const int run_channels = kernel_channels(plan.comm, lay.algorithm, lay.protocol, bytes);
  const int nodes = static_cast<int>(plan.hosts.size());
  if (lay.algorithm == kRing && chained(plan)) {
    // Each channel's chain moves its part in chunks of one step, pipelined along its N - 1 hops:
    // chunks + N - 2 rounds of a chunk's time.
    lay.parts = static_cast<int>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(static_cast<std::uint64_t>(run_channels), ctx.elements)));
    const std::uint64_t part = ctx.elements / static_cast<std::uint64_t>(lay.parts);
    const double chunk = kTreeChunkBytes[pos(lay.protocol)];
    double chunks = std::ceil(static_cast<double>(part) * ctx.element_bytes / chunk);
    // Within one host the GPUs' threads pass a step on as its lines land (P2P's direct writes):
    // no whole step waits at each hop, the chain fills in a sixteenth of its hops' time at most
    // (nccl-tests' broadcast on one HGX A100 box: its time is its latency plus the bytes at the
    // algorithm's rate from 8 MiB up, with no fill of the 7 hops).
    if (nodes == 1) {
      chunks = std::max(chunks, 16.0 * static_cast<double>(n - 1));
      // And the first lines still cross every hop of the chain, each at its step's latency (NCCL's
      // model charges one, for choosing: the box above takes about 8 hops' worth, 72 us at 1 MiB).
      const int hw = plan.comm.graph(kRing).type_intra <= kPathNvb ? kNvlinkHw : kPciHw;
      lay.time.latency_us = base_latency_us(kRing, lay.protocol) + static_cast<double>(n - 1) * hop_latency_us(hw, kRing, lay.protocol);
    }
    lay.chunks = static_cast<int>(std::clamp<double>(chunks, 1.0, static_cast<double>(std::max<std::uint64_t>(1, part))));
    lay.span = static_cast<int>(n) - 1;
    lay.local_speedup = local_speedup_of(ctx, plan, kRing);
    lay.chunk_times = chain_chunk_times(chains_of(plan, lay.parts), lay.chunks, plan.collective == Collective::reduce, lay.local_speedup,
                                        same_host(plan));
    lay.bw_GBps = capped_GBps(ctx, plan, lay);
    return lay;
  }
  if (lay.algorithm == kRing) {
    lay.parts = static_cast<int>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(static_cast<std::uint64_t>(run_channels), ctx.elements / n)));
    lay.bw_GBps = capped_GBps(ctx, plan, lay);
    return lay;
  }
  double chunk = kTreeChunkBytes[pos(lay.protocol)];
  const int ppn = ctx.N() / std::max(1, nodes);
  if (lay.algorithm == kCollnetChain) {
    // enqueue.cc calcCollChunking: a chain's chunk is at most 256 KiB, halved while each channel
    // has few of them for the chain's depth (its ranks per host).
    lay.parts = run_channels;
    chunk = std::min(262144.0, kTreeChunkBytes[pos(kSimple)]);
    auto per_channel = [&] { return bytes / (lay.parts * chunk); };
    while (per_channel() < ppn * 64 && chunk > 131072) chunk /= 2;
    while (per_channel() < ppn * 8 && chunk > 65536) chunk /= 2;
    while (per_channel() < ppn && chunk > 32768) chunk /= 2;
    lay.chunks = static_cast<int>(std::max(1.0, std::ceil(bytes / (lay.parts * chunk))));
  } else if (lay.algorithm == kCollnetDirect) {
    // Each channel's part split over the host's heads; chunks halved while few for the depth
    // (2: GPUs to their head, the head to the network).
    lay.heads = static_cast<int>(collnet_heads(plan, 0).size());
    lay.parts = channels * lay.heads;
    const double depth = ppn > 1 ? 2 : 1;
    auto per_op = [&] { return bytes / (lay.parts * chunk); };
    while (per_op() < depth * 64 && chunk > 131072) chunk /= 2;
    while (per_op() < depth * 8 && chunk > 65536) chunk /= 2;
    while (per_op() < depth * 8 && chunk > 32768) chunk /= 2;
    lay.chunks = static_cast<int>(std::max(1.0, std::ceil(bytes / (lay.parts * chunk))));
  } else if (lay.algorithm == kTree) {
    lay.parts = static_cast<int>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(static_cast<std::uint64_t>(run_channels), ctx.elements)));
    if (lay.protocol == kLL128) {
      // enqueue.cc: smaller LL128 chunks while each channel would have few.
      const double ppn = static_cast<double>(ctx.N()) / nodes;
      const double steps = 1 + static_cast<int>(std::log2(nodes)) + 0.1 * ppn;
      auto per_channel = [&] { return std::floor(bytes / (channels * chunk)); };
      while (per_channel() < steps * 64 / ppn && chunk > 131072) chunk /= 2;
      while (per_channel() < steps * 16 / ppn && chunk > 32768) chunk /= 2;
    }
    const double part_bytes = bytes / lay.parts;
    lay.chunks = static_cast<int>(std::max(1.0, std::ceil(part_bytes / chunk)));
  } else {
    lay.heads = std::max(1, plan.comm.nvls.n_channels);
    lay.parts = lay.algorithm == kNvls ? lay.heads : 2 * lay.heads;
    const double ops = static_cast<double>(plan.nvls_channels) * lay.heads;
    // enqueue.cc: NVLS and NVLS tree chunks, smaller for small sizes.
    if (lay.algorithm == kNvls) {
      chunk = kNvlsChunkBytes;
      if (nodes > 1 && lay.time.bw_GBps < 150) chunk = std::min(chunk, 32768.0);
      if (bytes < 64 * ops * chunk && chunk > 65536) chunk = 65536;
      if (bytes < 8 * ops * chunk && chunk > 32768) chunk = 32768;
      if (bytes < 2 * ops * chunk && chunk > 16384) chunk = 16384;
    } else {
      chunk = nodes >= 4 ? std::min(kNvlsChunkBytes, 65536.0) : kNvlsChunkBytes;
      if (bytes < 32 * ops * chunk && chunk > 262144) chunk = 262144;
      if (bytes < 16 * ops * chunk && chunk > 131072) chunk = 131072;
      if (bytes < 4 * ops * chunk && chunk > 65536) chunk = 65536;
      if (bytes < 1 * ops * chunk && chunk > 32768) chunk = 32768;
    }
    lay.chunks = static_cast<int>(std::max(1.0, std::ceil(bytes / (ops * chunk))));
  }
  lay.parts = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(lay.parts), std::max<std::uint64_t>(1, ctx.elements)));
  lay.chunks = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(lay.chunks),
                                                        std::max<std::uint64_t>(1, ctx.elements / static_cast<std::uint64_t>(lay.parts))));
  // Stand-ins for the switches' participants (they do not change the trees' shape).
  std::vector<int> servers;
  for (std::size_t h = 0; h <= plan.hosts.size(); ++h) servers.push_back(ctx.N() + static_cast<int>(h));
  const std::vector<PipelinedTree> trees = trees_of(plan, lay, servers, ctx.elements, ctx.element_bytes);
  lay.span = pipelined_rounds(trees, lay.chunks) - lay.chunks + 1;
  lay.local_speedup = local_speedup_of(ctx, plan, lay.algorithm);
  if (lay.algorithm == kTree && lay.protocol != kSimple && nodes > 1) {
    // LL and LL128 pass each line on as its flag arrives: within a host a chunk does not wait
    // for the whole chunk before the next hop, only for the warp's unit (prims_ll.h,
    // prims_ll128.h); between hosts the proxy sends whole steps, so the edges between hosts
    // keep the chunk's time and stay the pipeline's slowest.
    const double chunk_bytes = bytes / lay.parts / lay.chunks;
    lay.local_speedup = std::max(lay.local_speedup, chunk_bytes / kForwardUnitBytes[pos(lay.protocol)]);
  }
  lay.chunk_times = pipelined_chunk_times(trees, lay.chunks, lay.local_speedup);
  lay.bw_GBps = capped_GBps(ctx, plan, lay);
  return lay;
}

// The trees of the layout: part k of the buffer on tree k. `servers[h]`: host h's NVSwitch
// participant (NVLS).
std::vector<PipelinedTree> trees_of(const Plan& plan, const Layout& lay, const std::vector<int>& servers, std::uint64_t elements,
                                    int element_bytes) {
  const int nodes = static_cast<int>(plan.hosts.size());
  std::vector<PipelinedTree> trees;
  const std::uint64_t per = elements / static_cast<std::uint64_t>(lay.parts);
  const ChannelNics nics(plan);
  for (int k = 0; k < lay.parts; ++k) {
    PipelinedTree t;
    const std::uint64_t first = per * static_cast<std::uint64_t>(k);
    t.region = Region{first * static_cast<std::uint64_t>(element_bytes), k + 1 == lay.parts ? elements - first : per, element_bytes};
    if (lay.algorithm == kTree) {
      // connect.cc: channels [0, n) on tree 0 and [n, 2n) on tree 1 of the search's n; in each
      // host the chain of its graph, its head (intra[0]) sending to the parent host's rank
      // that takes that child (connectTrees: intra[1] for the first child of a balanced tree).
      const int search_channels = std::max(1, plan.comm.tree.n_channels);
      const int base = k % (2 * search_channels);
      const int which = base >= search_channels ? 1 : 0;
      const int channel = base % search_channels;
      std::vector<std::vector<int>> chains;
      std::vector<int> offset;
      for (int h = 0; h < nodes; ++h) {
        offset.push_back(static_cast<int>(t.nodes.size()));
        chains.push_back(host_order(plan, pos(h), kTree, channel));
        for (std::size_t i = 0; i < chains.back().size(); ++i) {
          t.nodes.push_back({chains.back()[i], i == 0 ? -1 : offset.back() + static_cast<int>(i) - 1, false, i > 0});
        }
      }
      const auto pattern = static_cast<Pattern>(plan.comm.max_tree_pattern);
      for (int h = 0; h < nodes; ++h) {
        const Up up = dtree_up(nodes, h, which);
        if (up.parent < 0) continue;
        const int child0 = pattern == Pattern::tree ? 0 : 1;
        const int child1 = pattern == Pattern::split_tree ? 1 : 0;
        int at = up.child_type == 0 ? child0 : child1;
        at = std::min(at, static_cast<int>(chains[pos(up.parent)].size()) - 1);
        TreeNode& head = t.nodes[pos(offset[pos(h)])];
        head.parent = offset[pos(up.parent)] + at;
        head.via = nics.between(kTree, channel, head.participant, t.nodes[pos(head.parent)].participant);
      }
    } else if (is_collnet(lay.algorithm)) {
      // The network's switch reduces the hosts' parts (SHARP): the root, a server participant
      // (`servers` holds it first). Chain (connect.cc): each host's chain of its graph channel,
      // its first GPU talking to the network; direct: the part's head GPU on each host, the
      // host's other GPUs sending to it directly over NVLink.
      t.nodes.push_back({servers.front(), -1, false, false});
      for (int h = 0; h < nodes; ++h) {
        std::vector<int> order;
        if (lay.algorithm == kCollnetChain) {
          order = host_order(plan, pos(h), kCollnetChain, k);
        } else {
          const std::vector<int> heads = collnet_heads(plan, pos(h));
          const int head = heads[pos(k) % heads.size()];
          order.push_back(head);
          for (int r : plan.hosts[pos(h)]) {
            if (r != head) order.push_back(r);
          }
        }
        const int first = static_cast<int>(t.nodes.size());
        for (std::size_t i = 0; i < order.size(); ++i) {
          const int parent = i == 0 ? 0 : lay.algorithm == kCollnetChain ? first + static_cast<int>(i) - 1 : first;
          t.nodes.push_back({order[i], parent, false, i > 0});
        }
      }
    } else {
      const int head = k % lay.heads;
      const int which = k / lay.heads;  // NVLS tree: the first half of the parts on tree 0
      // NVLS across hosts (with CollNet): each host's sum carried by the part's head to the
      // network's switch, which reduces across hosts (`servers` holds it after the NVSwitches).
      const bool to_network = lay.algorithm == kNvls && nodes > 1;
      const int sharp = to_network ? static_cast<int>(t.nodes.size()) : -1;
      if (to_network) t.nodes.push_back({servers[pos(nodes)], -1, false, false});
      std::vector<int> head_node(pos(nodes), -1);
      for (int h = 0; h < nodes; ++h) {
        const int server = static_cast<int>(t.nodes.size());
        const bool headed = lay.algorithm == kNvlsTree || to_network;
        t.nodes.push_back({servers[pos(h)], -1, headed, headed});
        for (int r : plan.hosts[pos(h)]) t.nodes.push_back({r, server, false, true});
        if (headed) {
          // The head of this part on host h: the GPU of the NVLS graph's channel `head`.
          head_node[pos(h)] = static_cast<int>(t.nodes.size());
          t.nodes.push_back({nvls_head(plan, pos(h), head), sharp, false});
          t.nodes[pos(server)].parent = head_node[pos(h)];
        }
      }
      if (lay.algorithm == kNvlsTree) {
        for (int h = 0; h < nodes; ++h) {
          const Up up = dtree_up(nodes, h, which);
          if (up.parent < 0) continue;
          // Between hosts by the NICs of the NVLS graph's channel of this head (its inter).
          TreeNode& node = t.nodes[pos(head_node[pos(h)])];
          node.parent = head_node[pos(up.parent)];
          node.via = nics.between(kNvls, head, node.participant, t.nodes[pos(node.parent)].participant);
        }
      }
    }
    trees.push_back(std::move(t));
  }
  return trees;
}

// The network switch that reduces across hosts (SHARP): where the routes between the hosts
// meet, the middle switch of the route from the first host to the last (the one switch of a
// single network, a rail's leaf, or the core above the leaves).
std::size_t sharp_switch(const StrategyContext& ctx, const Plan& plan) {
  const std::size_t from = ctx.placement.ranks[pos(plan.hosts.front().front())];
  const std::size_t to = ctx.placement.ranks[pos(plan.hosts.back().front())];
  std::vector<std::size_t> switches;
  for (const Hop& h : ctx.topology.route(from, to)) {
    const Link& l = ctx.topology.links()[h.link];
    const std::size_t far = h.forward ? l.b : l.a;
    if (ctx.topology.node(far).kind == NodeKind::net_switch) switches.push_back(far);
  }
  if (switches.empty()) throw std::logic_error("nccl: CollNet planned between hosts no network switch joins");
  return switches[(switches.size() - 1) / 2];
}

// The pipeline's time over the bytes at the algorithm's bandwidth (a ring's rounds are all alike;
// a chain's and a tree's chunks fill it first).
double fill_of(const Layout& lay) {
  return is_tree(lay.algorithm) || lay.span > 0 ? lay.chunk_times / lay.chunks : 1.0;
}

}  // namespace

double planned_seconds(const StrategyContext& ctx, const Plan& plan, double launch_s) {
  if (ctx.N() < 2) return 0.0;
  if (point_to_point(plan.collective)) return point_to_point_seconds(ctx, plan, launch_s);
  const Layout lay = layout_of(ctx, plan);
  const double own_s = own_block_copy_s(ctx, plan, lay.algorithm) + fifo_copy_s(ctx, plan, lay.algorithm);
  if (lay.bw_GBps <= 0) return launch_s + lay.time.latency_us * 1e-6 + own_s;
  return launch_s + lay.time.latency_us * 1e-6 + ctx.bytes() / (lay.bw_GBps * 1e9) * fill_of(lay) + own_s;
}

Schedule planned_schedule(const StrategyContext& ctx, const Plan& plan, double launch_s) {
  if (point_to_point(plan.collective)) return point_to_point_schedule(ctx, plan, launch_s);
  Schedule s = start_schedule("nccl", ctx);
  const int n = ctx.N();
  if (n < 2 || ctx.elements == 0) return s;
  const Layout lay = layout_of(ctx, plan);
  const int a = lay.algorithm, p = lay.protocol;
  // NVLS: each host's NVSwitch reduces (a server participant at its node). CollNet, and NVLS
  // across hosts: the network's switch reduces across hosts (SHARP), after them.
  std::vector<int> servers;
  if (a == kNvls || a == kNvlsTree) {
    for (std::size_t h = 0; h < plan.hosts.size(); ++h) {
      const std::size_t gpu = ctx.placement.ranks[pos(plan.hosts[h].front())];
      const std::optional<std::size_t> nvswitch = nvswitch_of(ctx.topology, gpu);
      if (!nvswitch) throw std::logic_error("nccl: NVLS planned for a GPU without an NVSwitch link: " + ctx.topology.node(gpu).id);
      s.participants.push_back({Role::server, *nvswitch, LocalCosts{}});
      servers.push_back(s.participant_count() - 1);
    }
  }
  if (is_collnet(a) || (a == kNvls && plan.hosts.size() > 1)) {
    s.participants.push_back({Role::server, sharp_switch(ctx, plan), LocalCosts{}});
    servers.push_back(s.participant_count() - 1);
  }
  // The reduction happens inside the copy loop (or the switch): no local pass costs anything.
  for (Participant& part : s.participants) part.costs = LocalCosts{};
  s.latency_in_ops = true;
  const double base_us = base_latency_us(a, p);
  add_compute(s, all_workers(s), launch_s + base_us * 1e-6, "launch + base latency");
  const std::size_t first_transfer = s.rounds.size();
  const double spread_s = std::max(0.0, lay.time.latency_us - base_us) * 1e-6;
  const double algbw_Bps = lay.bw_GBps * 1e9;
  const double share = kPayloadShare[pos(p)];
  if (a == kRing && chained(plan)) {
    // Each channel's chain moves its part at its share of the algorithm bandwidth; the edges
    // within a host as much faster as NCCL's model has them.
    const std::vector<std::vector<int>> chains = chains_of(plan, lay.parts);
    const bool up = plan.collective == Collective::reduce;
    const auto parts = static_cast<std::uint64_t>(lay.parts);
    const Region main{0, ctx.elements / parts * parts, ctx.element_bytes};
    const double per_chain_Bps = algbw_Bps / lay.parts;
    const Engine engine{.payload_share = share, .max_Bps = per_chain_Bps / share, .local_max_Bps = lay.local_speedup * per_chain_Bps / share,
                        .step_s = spread_s / (lay.chunks + n - 2)};
    const std::string phase = up ? "reduce" : "broadcast";
    const auto local = same_host(plan);
    const ChannelNics nics(plan);
    std::vector<std::vector<Via>> vias;
    for (std::size_t c = 0; c < chains.size(); ++c) vias.push_back(nics.hops(kRing, static_cast<int>(c), chains[c], false));
    add_channel_chains(s, chains, main, lay.chunks, up, engine, phase, local, vias);
    if (main.elements < ctx.elements) {
      const Region rest{main.slice().end(), ctx.elements - main.elements, ctx.element_bytes};
      Engine rest_engine = engine;  // NCCL's latencies are all charged in the chains' rounds
      rest_engine.step_s = 0;
      add_channel_chains(s, {chains.front()}, rest, 1, up, rest_engine, "remainder " + phase, local, {vias.front()});
    }
    const Slice whole{0, ctx.elements * static_cast<std::uint64_t>(ctx.element_bytes)};
    s.expected = {up ? ExpectedRegion{whole, true, false, {}, 1, false, {0}} : ExpectedRegion{whole, false, false, {0}}};
  } else if (a == kRing) {
    std::vector<std::vector<int>> rings;
    std::vector<std::vector<Via>> vias;
    const ChannelNics nics(plan);
    for (int c = 0; c < lay.parts; ++c) {
      std::vector<int> ring;
      for (std::size_t h = 0; h < plan.hosts.size(); ++h) {
        const std::vector<int> order = host_order(plan, h, kRing, c);
        ring.insert(ring.end(), order.begin(), order.end());
      }
      vias.push_back(nics.hops(kRing, c, ring, true));
      rings.push_back(std::move(ring));
    }
    // Each channel moves its share of the bus bandwidth: 2(N-1)/N of the bytes at the algorithm
    // bandwidth ((N-1)/N for one half).
    const double passes = ring_passes(plan);
    const double per_channel_Bps = algbw_Bps * passes * (n - 1) / n / lay.parts;
    const std::uint64_t unit = static_cast<std::uint64_t>(lay.parts) * static_cast<std::uint64_t>(n);
    const Region main{0, ctx.elements / unit * unit, ctx.element_bytes};
    const Engine engine{.payload_share = share, .max_Bps = per_channel_Bps / share, .step_s = spread_s / (passes * (n - 1))};
    const RingHalves halves = plan.collective == Collective::all_gather       ? RingHalves::all_gather
                              : plan.collective == Collective::reduce_scatter ? RingHalves::reduce_scatter
                                                                              : RingHalves::both;
    add_channel_rings(s, rings, main, engine, "", halves, vias);
    if (main.elements < ctx.elements) {
      const Region rest{main.slice().end(), ctx.elements - main.elements, ctx.element_bytes};
      if (halves == RingHalves::both) {
        add_ring_allreduce(s, {rings.front()}, rest, "remainder ");
      } else {
        const bool scatter = halves == RingHalves::reduce_scatter;
        if (scatter) {
          add_ring_reduce_scatter(s, {rings.front()}, rest, "remainder reduce-scatter", "remainder reduce");
        } else {
          add_ring_all_gather(s, {rings.front()}, rest, "remainder all-gather");
        }
        for (ExpectedRegion& e : ring_half_expected(rings.front(), rest, scatter)) s.expected.push_back(std::move(e));
      }
    }
  } else {
    const std::vector<PipelinedTree> trees = trees_of(plan, lay, servers, ctx.elements, ctx.element_bytes);
    const int rounds = lay.chunks + lay.span - 1;
    const double per_tree_Bps = algbw_Bps / lay.parts;
    const double local_factor = lay.local_speedup;
    const Engine engine{.payload_share = share, .max_Bps = per_tree_Bps / share, .local_max_Bps = local_factor * per_tree_Bps / share,
                        .step_s = spread_s / rounds};
    add_pipelined_trees(s, trees, lay.chunks, engine,
                        a == kTree ? "tree" : a == kNvls ? "nvls" : a == kNvlsTree ? "nvls tree" : a == kCollnetChain ? "collnet chain" : "collnet direct");
  }
  HostTransports transports(ctx, plan);
  limit_by_transports(s, first_transfer, transports, plan, p, n);
  stripe_over_rails(s, ctx, plan);
  if (const double own_s = own_block_copy_s(ctx, plan, a); own_s > 0) add_compute(s, all_workers(s), own_s, "own block copy");
  if (const double fifo_s = fifo_copy_s(ctx, plan, a); fifo_s > 0) add_compute(s, all_workers(s), fifo_s, "copy within the GPU");
  return s;
}

// The first channel's hops within each host, with their transport and path type:
// "gpu0->gpu1 P2P (PXB)".
std::string transports_of(const StrategyContext& ctx, const Plan& plan, int algorithm) {
  const HostTransports transports(ctx, plan);
  std::string out;
  const bool closed = algorithm == kRing && plan.hosts.size() == 1;
  for (std::size_t h = 0; h < plan.hosts.size() && h < 2; ++h) {
    const std::vector<int> order = host_order(plan, h, algorithm, 0);
    const HostLinks& l = plan.host_links(h);
    const std::size_t hops = closed ? order.size() : order.size() - 1;
    for (std::size_t i = 0; i < hops && order.size() > 1; ++i) {
      const int a = order[i], b = order[(i + 1) % order.size()];
      const auto local = [&](int r) { return static_cast<int>(std::find(plan.hosts[h].begin(), plan.hosts[h].end(), r) - plan.hosts[h].begin()); };
      out += " " + ctx.topology.node(ctx.placement.ranks[pos(a)]).id + "->" + ctx.topology.node(ctx.placement.ranks[pos(b)]).id + " " +
             (transports.shm(a, b) ? "SHM" : "P2P") + " (" + path_name(l.path_between(local(a), local(b))) + ")";
    }
  }
  return out;
}

int tree_threshold_algorithm(const StrategyContext& ctx, Collective collective, double bytes) {
  if (ctx.params.text("tree_threshold") == "auto" || ctx.params.text("algorithm") != "auto" || collective != Collective::all_reduce) return -1;
  const std::string& version = ctx.params.text("nccl_version");
  if (version != "auto" && nccl_version_code(version + ".0") >= 20500) return -1;
  return bytes < ctx.params.number("tree_threshold") ? kTree : kRing;
}

std::vector<std::string> describe_plan(const StrategyContext& ctx, const Plan& plan) {
  std::vector<std::string> out;
  if (point_to_point(plan.collective)) return describe_point_to_point(ctx, plan);
  const Layout lay = layout_of(ctx, plan);
  const int a = lay.algorithm;
  std::string line = std::string(algorithm_name(a)) + "/" + protocol_name(lay.protocol) + " by NCCL 2.30.7's planner";
  // An older release chooses by its own cost model (tuning.h), said as such.
  const int v = plan.comm.nccl_version;
  if (v >= 20800 && v < 22300) line += " with " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "'s cost model";
  // What NCCL_ALGO / NCCL_PROTO fixed, said, so the line does not read as the cost model's pick.
  std::vector<std::string> forced;
  for (const char* key : {"algorithm", "protocol"}) {
    if (ctx.params.text(key) != "auto") forced.push_back(std::string(key == std::string("algorithm") ? "NCCL_ALGO=" : "NCCL_PROTO=") + ctx.params.text(key));
  }
  if (tree_threshold_algorithm(ctx, plan.collective, static_cast<double>(ctx.bytes())) >= 0) {
    forced.push_back("NCCL_TREE_THRESHOLD=" + ctx.params.text("tree_threshold") + ", NCCL 2.4's");
  }
  if (!forced.empty()) line += " (" + join(forced, ", ") + ")";
  if (plan.picked_instead >= 0) {
    line += std::string(" (NCCL's cost model picks ") + algorithm_name(plan.picked_instead) + " for this " +
            collective_name(plan.collective) + "; gradsync builds its ring only so far)";
  }
  line += " on " + std::to_string(plan.hosts.size()) + (plan.hosts.size() == 1 ? " host" : " hosts");
  if (a == kRing) line += ", " + std::to_string(lay.parts) + " channels";
  if (a == kRing && chained(plan)) {
    line += std::string(" each a chain of its ring ") + (plan.collective == Collective::broadcast ? "from" : "into") + " rank 0, " +
            std::to_string(lay.chunks) + " chunks each";
  }
  if (a == kTree) line += ", " + std::to_string(lay.parts) + " channels on a double binary tree of hosts, " + std::to_string(lay.chunks) + " chunks each";
  if (a == kNvls || a == kNvlsTree) {
    line += ", " + std::to_string(lay.heads) + " NVLS heads x " + std::to_string(plan.nvls_channels) + " channels, " +
            std::to_string(lay.chunks) + " chunks";
    if (a == kNvls && plan.hosts.size() > 1) line += ", reduced across hosts by the network's switch (CollNet)";
  }
  if (a == kCollnetChain) {
    line += ", " + std::to_string(lay.parts) + " channels each a chain per host into the network's switch, which reduces "
            "across hosts (SHARP), " + std::to_string(lay.chunks) + " chunks";
  }
  if (a == kCollnetDirect) {
    line += ", " + std::to_string(lay.heads) + " heads per host x " + std::to_string(lay.parts / std::max(1, lay.heads)) +
            " channels into the network's switch, which reduces across hosts (SHARP), " + std::to_string(lay.chunks) + " chunks";
  }
  const double bus = nccl_tests_busbw_factor(collective_name(plan.collective), ctx.N()).value_or(allreduce_busbw_factor(ctx.N()));
  line += "; NCCL's model: " + format_fixed(lay.time.latency_us, 1) + " us + bytes at " + format_fixed(lay.time.bw_GBps, 1) +
          " GB/s (bus " + format_fixed(lay.time.bw_GBps * bus, 1) + " GB/s)";
  if (lay.bw_GBps < lay.time.bw_GBps) {
    line += ", at most " + format_fixed(lay.bw_GBps, 1) + " GB/s (bus " + format_fixed(lay.bw_GBps * bus, 1) + " GB/s) where " + lay.capped_by;
  } else if (lay.bw_GBps > lay.time.bw_GBps) {
    line += ", run at " + format_fixed(lay.bw_GBps, 1) + " GB/s (bus " + format_fixed(lay.bw_GBps * bus, 1) + " GB/s) where " + lay.capped_by;
  }
  out.push_back(line);
  const Graph& g = plan.comm.graph(a);
  out.push_back("graph: " + std::to_string(g.n_channels) + " searched channels at " + format_fixed(g.bw_intra, 1) + " GB/s intra, " +
                format_fixed(g.bw_inter, 1) + " GB/s inter per channel; paths " + path_name(g.type_intra) +
                (plan.hosts.size() > 1 ? " within a host, " + path_name(g.type_inter) + " to the NICs" : std::string()));
  if (a == kRing || a == kTree) {
    const std::string hops = transports_of(ctx, plan, a);
    if (!hops.empty()) out.push_back(std::string("hops (first channel") + (plan.hosts.size() > 1 ? ", first hosts" : "") + "):" + hops);
    const HostTransports transports(ctx, plan);
    if (transports.any_shm()) out.push_back(transports.note());
  }
  // What the prediction rests on, as NCCL's view of the first host holds it.
  const HostFacts& f = plan.host;
  std::string facts = "facts: NCCL " +
                      (plan.nccl_version == kNcclVersion
                           ? nccl_version_text(plan.nccl_version)
                           : std::to_string(plan.nccl_version / 10000) + "." + std::to_string(plan.nccl_version / 100 % 100) + "'s rules") +
                      "; a host: " + std::to_string(f.gpus) + " GPUs (sm" + std::to_string(plan.comm.cc_min) + ")" +
                      (f.nvswitch ? " on an NVSwitch" : "") + (plan.comm.nvls_support ? " with NVLink SHARP" : "") + ", " +
                      std::to_string(f.sockets) + (f.sockets == 1 ? " CPU" : " CPUs") +
                      (f.cpu_vendor.empty() ? " (vendor not known)" : " (" + f.cpu_vendor + ")") + ", P2P level " + path_name(f.p2p_level);
  if (f.nics > 0) {
    // NCCL's devices where they are not the NICs: ports fused into one, or driven alone; EFA
    // adapters as rails of one device.
    const std::string ports = f.nic_ports == f.nic_cards && f.nics < f.nic_cards
                                  ? " (" + std::to_string(f.nic_cards) + " adapters as their rails, aws-ofi-nccl's)"
                              : f.nic_ports == f.nic_cards ? std::string()
                              : f.nics == f.nic_cards    ? " (" + std::to_string(f.nic_ports / std::max(1, f.nic_cards)) + " ports each, fused)"
                                                         : " (" + std::to_string(f.nic_cards) + " NICs' ports)";
    facts += ", " + std::to_string(f.nics) + (f.nics == 1 ? " NIC" : " NICs") + ports + " at " + format_fixed(plan.nic_GBps, 1) + " GB/s" +
             (f.link_layer.empty() ? "" : " (" + f.link_layer + ")") + ", GPUDirect RDMA " +
             (f.gdr ? "on (GDR level " + path_name(f.gdr_level) + ")" : "off: through host memory") +
             (plan.gdr_through_vm    ? ", through the CPU's root complex (a VM without PCIe ATS)"
              : plan.gdr_through_cpu ? ", across the CPU's host bridge"
                                     : "") +
             (plan.static_routing     ? ", static routing (each queue pair on one path)"
              : plan.adaptive_routing ? ", adaptive routing"
                                      : "");
    const NetPlugin& net = plan.net;
    if (!net.name.empty() || net.latency_us > 0) {
      facts += ", " + (net.name.empty() ? std::string("the network") : "through " + net.name) + ": " + format_fixed(net.latency_us, 0) +
               " us reported latency" + (net.simple_only ? ", NCCL_PROTO=simple" : "") +
               (net.algorithms.empty() ? "" : ", NCCL_ALGO=" + net.algorithms) + (net.nvls_off ? ", NCCL_NVLS_ENABLE=0" : "") +
               (net.min_channels > 0 ? ", NCCL_MIN_NCHANNELS " + std::to_string(net.min_channels) : "") +
               (net.buffer_bytes > 0 ? ", NCCL_BUFFSIZE " + format_bytes(net.buffer_bytes) : "") +
               (net.p2p_chunk_bytes > 0 ? ", NCCL_P2P_NET_CHUNKSIZE " + format_bytes(net.p2p_chunk_bytes) : "");
    }
  }
  out.push_back(facts);
  if (a == kNvlsTree) {
    std::string heads = "NVLS heads on host 0:";
    for (int h = 0; h < lay.heads; ++h) {
      heads += " " + ctx.topology.node(ctx.placement.ranks[pos(nvls_head(plan, 0, h))]).id;
    }
    out.push_back(heads);
  }
  return out;
}

}  // namespace gradsync::models::nccl
