// How many channels NCCL stripes one point-to-point message across (ncclSend / ncclRecv: the
// alltoall's and sendrecv's messages), by the rules of the release planned for:
// - each peer's channel count (paths.cc ncclTopoGetNchannels): over NVLink twice its links, over
//   PCIe 2; to another host 2 (up to 2.19), the NICs the GPU drives or 2 fewer at scale
//   (2.20-2.28), or the NICs' bandwidth over NCCL_P2P_PER_CHANNEL_NET_BW, 14 GB/s (2.29 on);
// - the communicator's per-peer figure, the least over its peers as a power of 2, within its
//   point-to-point channels (the collective channels' count as a power of 2), fewer across hosts
//   where more peers than 8 a channel's batch would not fit (ncclTopoComputeP2pChannels);
// - one message (enqueue.cc addP2pToPlan): as few channels as give every rank's messages a channel
//   of their own, doubled while a channel's part is larger than 32 steps of the point-to-point
//   chunk on one host (one step across hosts), up to the per-peer figure.
// Each channel is one thread block with its own buffers and, across hosts, its own network
// connection: what it moves at most is what bounds a message that few channels carry.
#pragma once

#include "models/strategies/nccl/plan.h"
#include "models/strategies/strategy_context.h"

namespace gradsync::models::nccl {

struct P2pChannels {
  int per_peer = 1;     // comm->p2pnChannelsPerPeer
  int channels = 1;     // comm->p2pnChannels
  int min_per_message = 1, max_per_message = 1;
  double step_bytes = 0;  // comm->p2pChunkSize
};

// The communicator's figures for the placement (ranks of ctx on the plan's hosts); `pcie_Bps`:
// each rank's PCIe rate as NCCL reads it (its path from the GPU to its NICs).
P2pChannels p2p_channels(const StrategyContext& ctx, const Plan& plan, const std::vector<double>& pcie_Bps);

// The channels that carry one message of `bytes` (at least 1).
int message_channels(const P2pChannels& c, const Plan& plan, double bytes);

}  // namespace gradsync::models::nccl
