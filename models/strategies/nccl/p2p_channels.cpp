#include "models/strategies/nccl/p2p_channels.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "models/topology/hardware.h"
#include "models/topology/topology.h"

namespace gradsync::models::nccl {

namespace {

int pow2_up(int v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

long long div_up(double a, double b) { return static_cast<long long>(std::ceil(a / b)); }

constexpr double kPerChannelNetGBps = 14;  // NCCL_P2P_PER_CHANNEL_NET_BW (2.29 on)
constexpr int kP2pPerBatch = 8;            // NCCL_MAX_DEV_WORK_P2P_PER_BATCH

}  // namespace

P2pChannels p2p_channels(const StrategyContext& ctx, const Plan& plan, const std::vector<double>& pcie_Bps) {
  P2pChannels c;
  const int n = ctx.N();
  const int v = plan.nccl_version;
  const bool across = plan.hosts.size() > 1;
  const int raw = std::max(1, std::min(plan.comm.channels, 64));  // comm->nChannels, NCCL_MAX_P2P_NCHANNELS
  c.channels = pow2_up(raw);
  std::vector<int> host_of(static_cast<std::size_t>(n), 0);
  for (std::size_t h = 0; h < plan.hosts.size(); ++h) {
    for (int r : plan.hosts[h]) host_of[static_cast<std::size_t>(r)] = static_cast<int>(h);
  }
  // The NICs a GPU drives (topo.cc ncclTopoGetLocalNetCountByBw): its host's NICs shared among
  // its GPUs, until their bandwidth meets the GPU's PCIe link.
  const int nics = std::max(1, plan.host.gpus > 0 ? plan.host.nics / plan.host.gpus : 1);
  const double per_link = hardware::nvlink_physical_GBps_per_link(plan.comm.cc_min) * 1e9;
  int least = v < 22900 ? raw : 1 << 30;  // up to 2.28 the count starts from the channels
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      int peer = 2;
      const std::size_t ga = ctx.placement.ranks[static_cast<std::size_t>(a)], gb = ctx.placement.ranks[static_cast<std::size_t>(b)];
      if (host_of[static_cast<std::size_t>(a)] == host_of[static_cast<std::size_t>(b)]) {
        const int h = host_of[static_cast<std::size_t>(a)];
        const auto& hosts = plan.hosts[static_cast<std::size_t>(h)];
        const auto la = std::find(hosts.begin(), hosts.end(), a) - hosts.begin();
        const auto lb = std::find(hosts.begin(), hosts.end(), b) - hosts.begin();
        if (plan.host_links(static_cast<std::size_t>(h)).path_between(static_cast<int>(la), static_cast<int>(lb)) <= kPathNvb && per_link > 0) {
          peer = 2 * std::max(1, static_cast<int>(std::lround(ctx.topology.bottleneck_Bps(ga, gb) / per_link)));
        }
      } else if (v >= 22900) {
        int count = 0;
        double bw = 0;
        const double path = std::min(plan.nic_GBps, pcie_Bps[static_cast<std::size_t>(a)] / 1e9);
        while (count < nics && bw < pcie_Bps[static_cast<std::size_t>(a)] / 1e9) {
          bw += path;
          ++count;
        }
        peer = std::max(std::max(1, count), static_cast<int>(div_up(bw, kPerChannelNetGBps)));
      } else if (v >= 22000) {
        int most = 2;
        while (most * n > raw * 4 && most > 1) most /= 2;
        int count = 0;
        double bw = 0;
        while (count < nics && bw < pcie_Bps[static_cast<std::size_t>(a)] / 1e9) {
          bw += std::min(plan.nic_GBps, pcie_Bps[static_cast<std::size_t>(a)] / 1e9);
          ++count;
        }
        peer = std::max(std::max(1, count), most);
      }
      least = std::min(least, peer);
    }
  }
  c.per_peer = pow2_up(std::max(1, least));
  if (v >= 22900) {
    if (across) {
      while (c.per_peer * static_cast<int>(div_up(n, kP2pPerBatch)) > c.channels && c.per_peer > 1) c.per_peer /= 2;
    } else {
      c.per_peer = std::min(c.channels, c.per_peer);
    }
  }
  c.min_per_message = c.per_peer;
  while (c.min_per_message * n > c.channels && c.min_per_message > 1) c.min_per_message /= 2;
  c.max_per_message = c.per_peer;
  if (v < 22000) {
    while (c.max_per_message * n > c.channels * 4 && c.max_per_message > 1) c.max_per_message /= 2;
  }
  // comm->p2pChunkSize (init.cc): across hosts NCCL_P2P_NET_CHUNKSIZE (twice it on Arm hosts of
  // Blackwell, 2.27 on; or as the network plugin sets it: plan.h NetPlugin), on a host all NVLink
  // NCCL_P2P_NVL_CHUNKSIZE, else NCCL_P2P_PCI_CHUNKSIZE.
  bool all_nvlink = !across;
  if (all_nvlink) {
    const HostLinks& l = plan.host_links(0);
    for (int a = 0; a < l.ranks && all_nvlink; ++a) {
      for (int b = 0; b < l.ranks && all_nvlink; ++b) all_nvlink = a == b || l.path_between(a, b) <= kPathNvb;
    }
  }
  const double net_chunk = plan.net.p2p_chunk_bytes > 0 ? plan.net.p2p_chunk_bytes : 131072.0;
  c.step_bytes = across ? net_chunk * (plan.host.cpu_vendor == "arm" && plan.comm.cc_min >= 100 && v >= 22700 ? 2 : 1)
                        : all_nvlink ? 524288.0 : 131072.0;
  return c;
}

int message_channels(const P2pChannels& c, const Plan& plan, double bytes) {
  if (bytes <= 0) return 1;
  const bool across = plan.hosts.size() > 1;
  const double min_part = across && plan.nccl_version >= 22000 ? c.step_bytes / 2 : c.step_bytes / 8;
  const double max_part = across ? c.step_bytes : c.step_bytes * 32;
  int channels = c.min_per_message;
  double part = 0;
  if (plan.nccl_version >= 22200) {
    channels = static_cast<int>(std::min<long long>(c.min_per_message, std::max<long long>(1, div_up(bytes, min_part))));
    part = std::max(min_part, std::ceil(bytes / channels));
    while (part > max_part && channels <= c.max_per_message / 2) {
      channels *= 2;
      part = std::ceil(bytes / channels);
    }
  } else {
    // calcP2pChunkSize: the part, rounded up to whole smallest parts.
    part = std::max(min_part, std::ceil(bytes / channels));
    while (part > max_part && channels <= c.max_per_message / 2) {
      channels *= 2;
      part = std::ceil(bytes / channels);
    }
    part = std::ceil(part / min_part) * min_part;
  }
  return static_cast<int>(std::max<long long>(1, std::min<long long>(channels, div_up(bytes, part))));
}

}  // namespace gradsync::models::nccl
