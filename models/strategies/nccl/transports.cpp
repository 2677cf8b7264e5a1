#include "models/strategies/nccl/transports.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "models/support/format.h"
#include "models/topology/hardware.h"

namespace gradsync::models::nccl {

namespace {

std::size_t ix(int v) { return static_cast<std::size_t>(v); }

// One rank's block (S/N) copied within its GPU's memory; 0 where the copy rate is unknown.
double block_copy_s(const StrategyContext& ctx) {
  const double copy_Bps = ctx.gpu_copy_Bps();
  return copy_Bps > 0 ? ctx.bytes() / ctx.N() / copy_Bps : 0.0;
}

}  // namespace

HostTransports::HostTransports(const StrategyContext& ctx, const Plan& plan)
    : ctx_(ctx), plan_(plan), host_of_(plan.rank_host), local_of_(plan.rank_local) {
  host_of_.resize(ix(ctx.N()), -1);
  local_of_.resize(ix(ctx.N()), -1);
  for (const std::vector<int>& host : plan.hosts) {
    for (int a : host) {
      for (int b : host) any_shm_ = any_shm_ || shm(a, b);
    }
  }
  sends_.assign(ix(ctx.N()), 1);
  receives_.assign(ix(ctx.N()), 1);
}

bool HostTransports::shm(int from, int to) const {
  if (from < 0 || to < 0 || from >= ctx_.N() || to >= ctx_.N() || from == to) return false;
  const int h = host_of_[ix(from)];
  if (h < 0 || h != host_of_[ix(to)]) return false;
  return !plan_.host_links(ix(h)).p2p_between(local_of_[ix(from)], local_of_[ix(to)]);
}

void HostTransports::set_shm_traffic(std::vector<int> sends, std::vector<int> receives) {
  sends.resize(ix(ctx_.N()), 0);
  receives.resize(ix(ctx_.N()), 0);
  sends_ = std::move(sends);
  receives_ = std::move(receives);
}

double HostTransports::pcie_Bps(int rank) const {
  const Topology& t = ctx_.topology;
  const std::size_t node = ctx_.placement.ranks[ix(rank)];
  const auto& m = t.measured();
  if (m && m->host_to_device_Bps && m->device_to_host_Bps) {
    const auto i = std::find(m->gpus.begin(), m->gpus.end(), t.node(node).id);
    if (i != m->gpus.end()) {
      const auto k = static_cast<std::size_t>(i - m->gpus.begin());
      pcie_note_ = "PCIe rate: measured host<->device copies";
      return std::min((*m->host_to_device_Bps)[k], (*m->device_to_host_Bps)[k]);
    }
  }
  const std::string& given = ctx_.params.text("pcie");
  if (given != "auto") {
    pcie_note_ = "PCIe rate: " + given + " x16 as given (nominal, NCCL's width x speed / 80)";
    return hardware::pcie_GBps(given[3] - '0', 16) * 1e9;
  }
  if (m && m->nominal && m->nominal->pcie_Bps > 0) {
    pcie_note_ = "PCIe rate: the nominal topology's (" + m->nominal->basis + ")";
    return m->nominal->pcie_Bps;
  }
  const hardware::GpuModel* g = hardware::find_gpu_model(t.node(node).facts.gpu_model);
  if (!g) g = hardware::gpu_model_of(t.description());
  if (g) {
    pcie_note_ = std::string("PCIe rate: ") + g->name + " is Gen" + std::to_string(g->pcie_gen) + " x" + std::to_string(g->lanes) +
                 " (nominal, NCCL's width x speed / 80)";
    return hardware::pcie_GBps(g->pcie_gen, g->lanes) * 1e9;
  }
  pcie_note_ = "PCIe rate: GPU model unknown, Gen4 x16 assumed (nominal; set pcie=gen3|gen4|gen5|gen6)";
  return hardware::pcie_GBps(4, 16) * 1e9;
}

// The ranks of the host that reach host memory through what `rank` does and move SHM bytes the
// same way, itself included: those behind its PCIe switch (PIX, PXB) share the switch's uplink,
// those on its CPU (PHB: NCCL's path through one CPU, nvidia-smi's PHB or NODE) its memory and I/O
// fabric; every SHM byte is written to host memory and read back from it.
int HostTransports::uplink_sharers(int rank, bool sending) const {
  const int h = host_of_[ix(rank)];
  const HostLinks& l = plan_.host_links(ix(h));
  int count = 1;
  for (int other : plan_.hosts[ix(h)]) {
    if (other == rank || (sending ? sends_[ix(other)] : receives_[ix(other)]) == 0) continue;
    const int type = l.path_between(local_of_[ix(rank)], local_of_[ix(other)]);
    if (type == kPathPix || type == kPathPxb || type == kPathPhb) ++count;
  }
  return count;
}

double HostTransports::Limit::one(int parallel) const {
  const double shm = shm_Bps > 0 ? shm_Bps / std::max(1, parallel) : 0.0;
  if (shm > 0 && channel_Bps > 0) return std::min(shm, channel_Bps);
  return shm > 0 ? shm : channel_Bps;
}

HostTransports::Limit HostTransports::limit(int from, int to, int protocol, double share) const {
  Limit out;
  const int h = from >= 0 && from < ctx_.N() ? host_of_[ix(from)] : -1;
  if (h < 0 || to < 0 || to >= ctx_.N() || h != host_of_[ix(to)]) return out;  // between hosts: the network's
  const HostLinks& l = plan_.host_links(ix(h));
  if (shm(from, to)) {
    // The GPU's SHM sends (receives) at once share its side; each transfer of the pair gets one of them.
    const double efficiency = ctx_.params.number("shm_efficiency");
    const double sender = pcie_Bps(from) / uplink_sharers(from, true) / std::max(1, sends_[ix(from)]);
    const double receiver = pcie_Bps(to) / uplink_sharers(to, false) / std::max(1, receives_[ix(to)]);
    out.shm_Bps = efficiency * std::min(sender, receiver);
  }
  if (protocol == kLL && l.path_between(local_of_[ix(from)], local_of_[ix(to)]) > kPathNvb) {
    out.channel_Bps = ctx_.params.number("ll_channel_GBps") * 1e9 / share;
  }
  return out;
}

std::string HostTransports::note() const {
  if (!any_shm_) return "";
  if (pcie_note_.empty()) pcie_Bps(0);
  return "SHM through host memory at " + format_fixed(ctx_.params.number("shm_efficiency"), 2) +
         " of the PCIe rate, shared by the GPUs that reach host memory the same way (one PCIe switch, one CPU); " + pcie_note_;
}

double p2p_message_bytes(const Plan& plan, double bytes, int ranks) {
  return plan.collective == Collective::alltoall && ranks > 0 ? bytes / ranks : bytes;
}

double own_block_copy_s(const StrategyContext& ctx, const Plan& plan, int algorithm) {
  const bool own_block = plan.collective == Collective::alltoall || (plan.collective == Collective::all_gather && algorithm == kRing);
  if (!own_block || ctx.N() < 2 || ctx.params.text("in_place") == "on") return 0.0;
  return block_copy_s(ctx);
}

double fifo_copy_s(const StrategyContext& ctx, const Plan& plan, int algorithm) {
  const bool ring_collective = algorithm == kRing && (plan.collective == Collective::all_reduce || plan.collective == Collective::reduce_scatter ||
                                                      plan.collective == Collective::all_gather);
  if (!ring_collective || ctx.N() < 2 || plan.hosts.size() != 1 || HostTransports(ctx, plan).any_shm()) return 0.0;
  return block_copy_s(ctx);
}

double collective_net_step_bytes(const Plan& plan, int protocol) {
  // init.cc: DEFAULT_LL_BUFFSIZE (8 lines x 512 threads x 8 steps x 16 B), DEFAULT_LL128_BUFFSIZE
  // (120 elements x 640 threads x 8 steps x 8 B), DEFAULT_BUFFSIZE (4 MiB).
  const double simple = plan.net.buffer_bytes > 0 ? plan.net.buffer_bytes : 4194304.0;
  const double buffer = protocol == kLL ? 8.0 * 512 * kNcclSteps * 16 : protocol == kLL128 ? 120.0 * 640 * kNcclSteps * 8 : simple;
  return buffer / kNcclSteps;
}

double net_connection_Bps(double step_bytes, double nic_Bps, double window_bytes) {
  return window_bytes > 0 ? nic_Bps * std::min(1.0, kNcclSteps * step_bytes / window_bytes) : nic_Bps;
}

double gdr_nic_GBps(const StrategyContext& ctx, const Plan& plan) {
  return plan.gdr_through_cpu ? plan.nic_GBps * ctx.params.number("gdr_cpu_share") : plan.nic_GBps;
}

void limit_by_transports(Schedule& s, std::size_t first, HostTransports& transports, const Plan& plan, int protocol, int workers) {
  if (first >= s.rounds.size()) return;
  const double share = kPayloadShare[ix(protocol)];
  if (transports.any_shm()) {
    // Each rank's SHM transfers at once, in the first round and a middle one (a pipeline's
    // steady state).
    std::vector<int> sends(ix(workers), 0), receives(ix(workers), 0);
    std::vector<Op> ops;
    for (const std::size_t r : {first, first + (s.rounds.size() - first) / 2}) {
      for (int p = 0; p < workers; ++p) {
        ops.clear();
        s.rounds[r].ops(p, ops);
        int out = 0, in = 0;
        for (const Op& op : ops) {
          if (op.kind == OpKind::send && transports.shm(p, op.peer)) ++out;
          if ((op.kind == OpKind::recv || op.kind == OpKind::recv_reduce) && transports.shm(op.peer, p)) ++in;
        }
        sends[ix(p)] = std::max(sends[ix(p)], out);
        receives[ix(p)] = std::max(receives[ix(p)], in);
      }
    }
    transports.set_shm_traffic(sends, receives);
  }
  // limits[sender]: (receiver on its host, link bytes per second at most).
  auto limits = std::make_shared<std::vector<std::vector<std::pair<int, double>>>>(ix(workers));
  bool any = false;
  for (const std::vector<int>& host : plan.hosts) {
    for (int a : host) {
      for (int b : host) {
        const double limit = a == b ? 0.0 : transports.limit_Bps(a, b, protocol, share);
        if (limit > 0) {
          (*limits)[ix(a)].emplace_back(b, limit);
          any = true;
        }
      }
    }
  }
  if (!any) return;
  for (std::size_t r = first; r < s.rounds.size(); ++r) {
    Round& round = s.rounds[r];
    round.ops = [inner = std::move(round.ops), limits, workers](int q, std::vector<Op>& out) {
      const std::size_t start = out.size();
      inner(q, out);
      for (std::size_t i = start; i < out.size(); ++i) {
        Op& op = out[i];
        if (!op.is_transfer()) continue;
        const int sender = op.kind == OpKind::send ? q : op.peer;
        const int receiver = op.kind == OpKind::send ? op.peer : q;
        if (sender < 0 || sender >= workers) continue;
        for (const auto& [to, limit] : (*limits)[ix(sender)]) {
          if (to == receiver) op.max_Bps = op.max_Bps > 0 ? std::min(op.max_Bps, limit) : limit;
        }
      }
    };
  }
}

NetChannelCap net_channel_cap(const StrategyContext& ctx, const Plan& plan, int algorithm, int protocol, int parts) {
  const double step = collective_net_step_bytes(plan, protocol);
  const double window = ctx.params.number("net_window_MiB") * 1048576.0;
  double cap = net_connection_Bps(step, plan.nic_GBps * 1e9, window) / 1e9 * kPayloadShare[static_cast<std::size_t>(protocol)];
  std::string why = std::to_string(kNcclSteps) + " steps of " + format_bytes(step) + " in flight of the " +
                    format_fixed(ctx.params.number("net_window_MiB"), 1) + " MiB that fill a NIC: net_window_MiB";
  double in_flight = cap < plan.nic_GBps * kPayloadShare[static_cast<std::size_t>(protocol)] ? kNcclSteps * step * kPayloadShare[static_cast<std::size_t>(protocol)] : 0.0;
  // net.cc: a sender's LL buffer lives in host memory whatever GPUDirect allows, so its threads
  // store LL's flagged lines across PCIe, at LL's rate over PCIe.
  if (protocol == kLL && ctx.params.number("ll_channel_GBps") < cap) {
    cap = ctx.params.number("ll_channel_GBps");
    why = "LL's sender writes into host memory, at ll_channel_GBps";
    in_flight = 0;
  }
  // Static routing (plan.h: static_routing): a ring channel's one connection out of a host carries
  // all its bytes over its queue pairs, each on its path, at `net_flow_share` of the NIC at most.
  // (A tree's channel spreads its bytes over connections to its parent and children.)
  if (plan.static_routing && algorithm == kRing && protocol != kLL) {
    const double share = ctx.params.number("net_flow_share");
    const double routed = share * plan.ib_qps * plan.nic_GBps * kPayloadShare[static_cast<std::size_t>(protocol)];
    if (routed < cap) {
      cap = routed;
      in_flight = 0;
      why = "the fabric routes each queue pair on one path: " + std::to_string(plan.ib_qps) + " a connection (NCCL_IB_QPS_PER_CONNECTION), " +
            format_fixed(share, 2) + " of its NIC each at most (net_flow_share)";
    }
  }
  // GPUDirect RDMA through a host bridge: each NIC reads the GPU's memory at its share of its
  // rate, split over the channels that leave by it (LL sends from host memory, above: no GPU read).
  if (plan.gdr_through_cpu && protocol != kLL && plan.host.nics > 0 && parts > 0) {
    const double gdr = gdr_nic_GBps(ctx, plan) * std::min(1.0, static_cast<double>(plan.host.nics) / parts) * kPayloadShare[static_cast<std::size_t>(protocol)];
    if (gdr < cap) {
      cap = gdr;
      in_flight = 0;
      why = "GPUDirect RDMA crosses the CPU's host bridge: a NIC moves " + ctx.params.text("gdr_cpu_share") + " of its " +
            format_fixed(plan.nic_GBps, 1) + " GB/s there (gdr_cpu_share), shared by the channels that leave by it";
    }
  }
  // Without GPUDirect RDMA a connection's buffers between hosts sit in host memory (net.cc): the
  // GPU that sends a ring's channel to the next host writes its bytes there over PCIe, the one
  // that receives reads them from there, as SHM's threads do, at `shm_efficiency` of its PCIe rate,
  // shared by the channels that cross through it (V100 over EFA without GPUDirect: 8.8 GB/s where
  // the NIC moves 12.5 and 0.7 of the GPU's Gen3 PCIe is 8.4). Rings only; LL's sender writes
  // into host memory anyway (above).
  if (plan.hosts.size() > 1 && !plan.host.gdr && algorithm == kRing && protocol != kLL && parts > 0) {
    const HostTransports staging(ctx, plan);
    double staged = 0;
    for (std::size_t h = 0; h < plan.hosts.size(); ++h) {
      std::map<int, int> sends, receives;  // rank -> channels it sends to (receives from) the next host
      for (int c = 0; c < parts; ++c) {
        const std::vector<int> order = host_order(plan, h, kRing, c);
        ++sends[order.back()];
        ++receives[order.front()];
      }
      for (const auto* side : {&sends, &receives}) {
        for (const auto& [rank, channels] : *side) {
          const double each = staging.pcie_Bps(rank) * ctx.params.number("shm_efficiency") / channels / 1e9;
          if (staged == 0 || each < staged) staged = each;
        }
      }
    }
    if (staged > 0 && staged * kPayloadShare[static_cast<std::size_t>(protocol)] < cap) {
      cap = staged * kPayloadShare[static_cast<std::size_t>(protocol)];
      in_flight = 0;
      why = "no GPUDirect RDMA: a channel's bytes go through host memory, its GPU's PCIe at shm_efficiency " +
            ctx.params.text("shm_efficiency") + " shared by the channels that cross through it";
    }
  }
  return {cap, why, in_flight};
}

}  // namespace gradsync::models::nccl
