#include "models/strategies/nccl/point_to_point.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "models/strategies/common.h"
#include "models/strategies/nccl/p2p_channels.h"
#include "models/strategies/nccl/rails.h"
#include "models/strategies/nccl/transports.h"
#include "models/strategies/nccl/tuning.h"
#include "models/support/error.h"
#include "models/support/format.h"

namespace gradsync::models::nccl {

namespace {

using strategies::add_compute;
using strategies::all_workers;
using strategies::start_schedule;

template <class T>
std::size_t p2p_ix(T v) {
  return static_cast<std::size_t>(v);
}

// The hardware kind of the path between two ranks, for NCCL's per-hop latency: NVLink, PCIe or
// the network.
int hop_hw(const Plan& plan, int a, int b) {
  const int h = plan.rank_host[p2p_ix(a)];
  if (h != plan.rank_host[p2p_ix(b)]) return kNetHw;
  return plan.host_links(p2p_ix(h)).path_between(plan.rank_local[p2p_ix(a)], plan.rank_local[p2p_ix(b)]) <= kPathNvb ? kNvlinkHw : kPciHw;
}

// Point-to-point work as nccl-tests runs it (alltoall_perf, sendrecv_perf): in one group, each
// rank's messages to every other rank (alltoall: S/N each) or S to the next rank (sendrecv),
// all at once, each over its pair's transport. NCCL has no cost model for it: the launch, the
// protocol's base latency, and the steps below (NCCL's per-step latency of a ring on each kind of
// path).
//
// The steps a rank's messages wait for, in NCCL's order of them (init.cc's p2pSchedule: round r
// sends to the host r / g hosts on and the rank r % g places on there, g ranks a host, and
// receives from the mirror; round 0 is the rank itself). The kernel runs the rounds in batches of
// NCCL_MAX_DEV_WORK_P2P_PER_BATCH = 8 (enqueue.cc: "each channel runs up to 8 tasks
// concurrently", a batch's rounds grouped by round / 8), one batch after another. A batch that
// reaches another host overlaps its messages: one step between hosts, and each message there adds
// what NCCL's proxy spends posting and completing it (net_message_us, fitted across the published
// clusters; on ten HGX hosts, 80 ranks with Simple: 178 us with one step a batch, 610 with each
// message's 3 us, 2.2 ms had every message waited its turn). Within a host a batch's messages go
// in turn, one step each over the slowest kind of path the collective's messages take there (an
// alltoall's between every pair, a sendrecv's between ring neighbours; its send and receive
// overlap: one step): the published alltoall runs on one host take that much longer at small
// sizes the more peers a rank has (on 8 x A100, 18 us at 2 ranks, 50 at 8, one thread a GPU; 86
// at 8 with one thread driving all 8), though NCCL puts the messages on channels of their own
// (p2p_channels.h): what serialises them is not found in NCCL's source, so the step latency,
// NCCL's own figure, prices it rather than a fitted constant.
constexpr int kP2pRoundsPerBatch = 8;  // NCCL_MAX_DEV_WORK_P2P_PER_BATCH

double steps_us(const StrategyContext& ctx, const Plan& plan, const std::vector<std::pair<int, int>>& pairs) {
  const int protocol = plan.protocol();
  const int n = ctx.N();
  if (n < 2) return 0.0;
  double within = 0;  // a step within a host: over the slowest path the collective's messages take there
  for (const auto& [a, b] : pairs) {
    if (plan.rank_host[p2p_ix(a)] == plan.rank_host[p2p_ix(b)]) within = std::max(within, hop_latency_us(hop_hw(plan, a, b), kRing, protocol));
  }
  const double between = hop_latency_us(kNetHw, kRing, protocol);
  const int hosts = static_cast<int>(plan.hosts.size());
  const int g = hosts > 0 ? n / hosts : n;  // ranks a host (alike in NCCL's schedule; else their mean)
  const double per_message = ctx.params.number("net_message_us");
  if (plan.collective != Collective::alltoall) return hosts > 1 ? between + 2 * per_message : within;
  double us = 0;
  int in_turn = 0;  // messages within a host, in turn
  for (int first = 0; first < n; first += kP2pRoundsPerBatch) {
    bool crosses = false;
    int rounds = 0;
    for (int r = std::max(first, 1); r < std::min(n, first + kP2pRoundsPerBatch); ++r) {
      ++rounds;
      const bool across = hosts > 1 && r >= g;
      if (across) us += 2 * per_message;
      crosses = crosses || across;
    }
    if (crosses) {
      us += between;
    } else {
      in_turn += 2 * rounds;
    }
  }
  return us + std::max(0, in_turn - 1) * within;
}

struct PointToPoint {
  std::vector<std::pair<int, int>> pairs;  // (from, to)
  double latency_s = 0;
  double share = 1;
  double message_bytes = 0;
  int channels = 1;                 // what carries one message (p2p_channels.h)
  std::vector<double> channel_cap;  // per pair: what its channels move at most, link bytes/s (0: no cap)
  std::string cap_note;
};

// What the channels that carry one message move at most, per pair: between hosts each channel
// is a network connection with its steps of P2P_NET_CHUNKSIZE in flight (transports.h); over
// PCIe with P2P each channel's threads copy `p2p_channel_GBps` (Simple). NVLink and SHM are
// bounded by their links and by SHM's share of host memory (transports.h).
void cap_by_channels(const StrategyContext& ctx, const Plan& plan, const HostTransports& transports, PointToPoint& p) {
  std::vector<double> pcie(p2p_ix(ctx.N()), 0.0);
  for (int r = 0; r < ctx.N(); ++r) pcie[p2p_ix(r)] = transports.pcie_Bps(r);
  const P2pChannels c = p2p_channels(ctx, plan, pcie);
  p.channels = message_channels(c, plan, p.message_bytes);
  // (Where GPUDirect RDMA crosses a host bridge, a connection moves no more than its NIC does there.)
  // A message whose part on a channel fits in the channel's steps in flight never waits for one to
  // come back: the window bounds streams only (as for the collectives, planned.cpp).
  const bool fits = p.message_bytes / p.channels <= kNcclSteps * c.step_bytes;
  const double net = std::min(fits ? plan.nic_GBps * 1e9
                                   : net_connection_Bps(c.step_bytes, plan.nic_GBps * 1e9, ctx.params.number("net_window_MiB") * 1048576.0),
                              gdr_nic_GBps(ctx, plan) * 1e9);
  const double pci = ctx.params.number("p2p_channel_GBps") * 1e9 / p.share;  // payload: in link bytes
  bool any_net = false, any_pci = false;
  for (const auto& [a, b] : p.pairs) {
    double cap = 0;
    const int h = plan.rank_host[p2p_ix(a)];
    if (h != plan.rank_host[p2p_ix(b)]) {
      cap = net;
      any_net = any_net || net > 0;
    } else if (plan.protocol() != kLL && !transports.shm(a, b) &&
               plan.host_links(p2p_ix(h)).path_between(plan.rank_local[p2p_ix(a)], plan.rank_local[p2p_ix(b)]) > kPathNvb) {
      cap = pci;
      any_pci = true;
    }
    p.channel_cap.push_back(cap * p.channels);
  }
  if (any_net || any_pci) {
    p.cap_note = std::to_string(p.channels) + " channel" + (p.channels == 1 ? "" : "s") + " a message (of " + std::to_string(c.per_peer) +
                 " a peer, " + std::to_string(c.channels) + " for point-to-point work), each carrying " +
                 (any_net ? format_fixed(net / 1e9, 1) + " GB/s between hosts at most (" + std::to_string(kNcclSteps) + " steps of " +
                                format_bytes(c.step_bytes) + " in flight of the " + format_fixed(ctx.params.number("net_window_MiB"), 1) +
                                " MiB that fill a NIC: net_window_MiB)"
                          : "") +
                 (any_net && any_pci ? ", " : "") +
                 (any_pci ? format_fixed(ctx.params.number("p2p_channel_GBps"), 1) + " GB/s over PCIe (p2p_channel_GBps)" : "");
  }
}

PointToPoint point_to_point_of(const StrategyContext& ctx, const Plan& plan, const HostTransports& transports) {
  PointToPoint p;
  const int n = ctx.N();
  if (plan.collective == Collective::alltoall) {
    for (int a = 0; a < n; ++a) {
      for (int b = 0; b < n; ++b) {
        if (a != b) p.pairs.emplace_back(a, b);
      }
    }
  } else {
    for (int a = 0; a < n && n > 1; ++a) p.pairs.emplace_back(a, (a + 1) % n);
  }
  p.latency_s = (base_latency_us(kRing, plan.protocol()) + steps_us(ctx, plan, p.pairs)) * 1e-6;
  p.share = kPayloadShare[p2p_ix(plan.protocol())];
  p.message_bytes = p2p_message_bytes(plan, ctx.bytes(), n);
  cap_by_channels(ctx, plan, transports, p);
  // Blocks off 16-byte alignment go a byte at a time: each byte takes that much more of what
  // carries it (misaligned_alltoall).
  if (misaligned_alltoall(ctx, plan)) p.share /= ctx.params.number("bytewise_slowdown");
  return p;
}

}  // namespace

bool misaligned_alltoall(const StrategyContext& ctx, const Plan& plan) {
  if (plan.collective != Collective::alltoall || ctx.N() < 2) return false;
  const std::uint64_t block = ctx.elements / static_cast<std::uint64_t>(ctx.N()) * static_cast<std::uint64_t>(ctx.element_bytes);
  return block % 16 != 0;
}

void check_alltoall_scale(Collective collective, int ranks) {
  if (collective != Collective::alltoall || ranks <= kMostAlltoallRanks) return;
  const double messages = static_cast<double>(ranks) * (ranks - 1);
  throw InputError("--param collective=alltoall on " + std::to_string(ranks) + " ranks: every rank sends to every other, " +
                   format_fixed(messages / 1e6, 1) + " M messages; gradsync times an alltoall on at most " +
                   std::to_string(kMostAlltoallRanks) + " ranks (4.2 M messages: about 10 s and 2.3 GB; its work and memory grow as " +
                   "the ranks squared): time it on fewer GPUs (--gpus " + std::to_string(kMostAlltoallRanks) + ")");
}

// The closed form: the latency, then every message at once, each at its pair's rate (the
// transport's limit, or its share of the route's bottleneck, which a GPU's N - 1 alltoall
// messages share).
double point_to_point_seconds(const StrategyContext& ctx, const Plan& plan, double launch_s) {
  HostTransports transports(ctx, plan);
  const PointToPoint p = point_to_point_of(ctx, plan, transports);
  if (p.pairs.empty()) return 0.0;
  const int n = ctx.N();
  const int messages = plan.collective == Collective::alltoall ? n - 1 : 1;
  transports.set_shm_traffic(std::vector<int>(p2p_ix(n), messages), std::vector<int>(p2p_ix(n), messages));
  double slowest = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < p.pairs.size(); ++i) {
    const auto [a, b] = p.pairs[i];
    const double links = ctx.topology.bottleneck_Bps(ctx.placement.ranks[p2p_ix(a)], ctx.placement.ranks[p2p_ix(b)]) / messages;
    double limit = transports.limit_Bps(a, b, plan.protocol(), p.share);
    if (p.channel_cap[i] > 0) limit = limit > 0 ? std::min(limit, p.channel_cap[i]) : p.channel_cap[i];
    slowest = std::min(slowest, p.share * (limit > 0 ? std::min(limit, links) : links));
  }
  return launch_s + p.latency_s + (std::isfinite(slowest) && slowest > 0 ? p.message_bytes / slowest : 0.0) +
         own_block_copy_s(ctx, plan, kRing);
}

// The schedule: each rank sends its block q to rank q (alltoall) or its buffer to the next rank
// (sendrecv), and receives into the receive buffer (scratch, after the gradient), then takes the
// receive buffer as its result (nccl-tests' out-of-place runs); an alltoall's sizes that are not
// a whole number of blocks leave the rest as it was.
Schedule point_to_point_schedule(const StrategyContext& ctx, const Plan& plan, double launch_s) {
  Schedule s = start_schedule("nccl", ctx);
  for (Participant& part : s.participants) part.costs = LocalCosts{};
  s.latency_in_ops = true;
  HostTransports transports(ctx, plan);
  const PointToPoint p = point_to_point_of(ctx, plan, transports);
  const int n = ctx.N();
  const bool alltoall = plan.collective == Collective::alltoall;
  const auto eb = static_cast<std::uint64_t>(ctx.element_bytes);
  const std::uint64_t per = alltoall && n > 0 ? ctx.elements / static_cast<std::uint64_t>(n) : ctx.elements;
  const std::uint64_t block = per * eb;
  const std::uint64_t whole = alltoall ? per * static_cast<std::uint64_t>(n) * eb : block;
  const std::uint64_t received = ctx.elements * eb;  // the receive buffer: scratch, after the gradient
  s.scratch_bytes = whole;
  if (n > 1) add_compute(s, all_workers(s), launch_s + p.latency_s, "launch + latency");
  const std::size_t first = s.rounds.size();
  if (whole > 0 && n > 1) {
    const double share = p.share;
    const std::string phase = alltoall ? "alltoall" : "sendrecv";
    // Each pair's channel cap on its sends and receives.
    auto caps = std::make_shared<std::vector<double>>(p2p_ix(n) * p2p_ix(n), 0.0);
    for (std::size_t i = 0; i < p.pairs.size(); ++i) (*caps)[p2p_ix(p.pairs[i].first) * p2p_ix(n) + p2p_ix(p.pairs[i].second)] = p.channel_cap[i];
    s.rounds.push_back(Round{phase, "", [=](int q, std::vector<Op>& out) {
                               if (q >= n) return;
                               auto engined = [share, caps, n, q](Op op) {
                                 op.payload_share = share;
                                 const int from = op.kind == OpKind::send ? q : op.peer;
                                 const int to = op.kind == OpKind::send ? op.peer : q;
                                 const double cap = (*caps)[p2p_ix(from) * p2p_ix(n) + p2p_ix(to)];
                                 if (cap > 0) op.max_Bps = op.max_Bps > 0 ? std::min(op.max_Bps, cap) : cap;
                                 return op;
                               };
                               if (!alltoall) {
                                 out.push_back(engined(Op::send((q + 1) % n, Slice{0, block})));
                                 out.push_back(engined(Op::recv((q + n - 1) % n, Slice{received, block})));
                                 return;
                               }
                               for (int k = 0; k < n; ++k) {
                                 const Slice mine{static_cast<std::uint64_t>(k) * block, block};
                                 const Slice theirs{received + static_cast<std::uint64_t>(k) * block, block};
                                 if (k == q) {
                                   out.push_back(Op::copy(mine, theirs));
                                   continue;
                                 }
                                 out.push_back(engined(Op::send(k, mine)));
                                 out.push_back(engined(Op::recv(k, theirs)));
                               }
                             }});
    s.rounds.push_back(Round{phase, "", [=](int q, std::vector<Op>& out) {
                               if (q < n) out.push_back(Op::copy(Slice{received, whole}, Slice{0, whole}));
                             }});
    if (alltoall) {
      ExpectedRegion e{Slice{0, whole}, false, false, {}};
      e.transposed_blocks = n;
      s.expected.push_back(e);
    } else {
      ExpectedRegion e{Slice{0, whole}, false, false, {}};
      e.from_previous = 1;
      s.expected.push_back(e);
    }
  }
  const std::uint64_t done = n > 1 ? whole : 0;  // one rank alone keeps its buffer as it is
  if (done < ctx.elements * eb) s.expected.push_back(ExpectedRegion{Slice{done, ctx.elements * eb - done}, false, true, {}});
  if (s.expected.empty()) s.expected.push_back(ExpectedRegion{Slice{0, 0}, false, true, {}});
  limit_by_transports(s, first, transports, plan, plan.protocol(), n);
  stripe_over_rails(s, ctx, plan);
  if (const double own_s = own_block_copy_s(ctx, plan, kRing); own_s > 0) add_compute(s, all_workers(s), own_s, "own block copy");
  return s;
}


std::vector<std::string> describe_point_to_point(const StrategyContext& ctx, const Plan& plan) {
  std::vector<std::string> out;
  const HostTransports transports(ctx, plan);
  const PointToPoint p = point_to_point_of(ctx, plan, transports);
  out.push_back(std::string("protocol ") + protocol_name(plan.protocol()) + ", " + collective_name(plan.collective) +
                (plan.collective == Collective::alltoall ? ": a message of S/N to every other rank at once"
                                                         : ": S from every rank to the next at once") +
                " (ncclSend / ncclRecv in a group, NCCL's point-to-point work), copies only; latency " +
                format_fixed(p.latency_s * 1e6, 1) + " us");
  // Each of the first hosts' ranks to the next there, with its transport and path type.
  std::string hops;
  for (std::size_t h = 0; h < plan.hosts.size() && h < 2; ++h) {
    const std::vector<int>& order = plan.hosts[h];
    const std::size_t count = plan.hosts.size() == 1 ? order.size() : order.size() - 1;
    for (std::size_t i = 0; i < count && order.size() > 1; ++i) {
      const int a = order[i], b = order[(i + 1) % order.size()];
      hops += " " + ctx.topology.node(ctx.placement.ranks[p2p_ix(a)]).id + "->" + ctx.topology.node(ctx.placement.ranks[p2p_ix(b)]).id + " " +
              (transports.shm(a, b) ? "SHM" : "P2P") + " (" +
              path_name(plan.host_links(h).path_between(static_cast<int>(i), static_cast<int>((i + 1) % order.size()))) + ")";
    }
  }
  if (!hops.empty()) out.push_back((plan.collective == Collective::alltoall ? "pairs (in rank order):" : "pairs:") + hops);
  if (!p.cap_note.empty()) out.push_back(p.cap_note);
  if (transports.any_shm()) out.push_back(transports.note());
  return out;
}

}  // namespace gradsync::models::nccl
