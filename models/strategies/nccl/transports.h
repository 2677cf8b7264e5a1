// What NCCL 2.30.7's transports move between two ranks of one host, beyond what the links carry
// (src/transport/p2p.cc, shm.cc; paths.cc ncclTopoCheckP2p says which one a pair gets, System::p2p):
// - P2P: the GPUs' threads write into the peer's memory: the topology's links decide.
// - SHM: the sender's threads write into host memory and the receiver's threads read it from
//   there (shm.cc), so both GPUs' PCIe links carry every byte, and a PCIe switch's uplink the
//   bytes of every GPU below it that goes the same way at once. GPU threads reach a share of
//   the PCIe rate that way, `shm_efficiency`: no NCCL or vendor figure states it, so it is fitted
//   once across the published machines (docs/fidelity.md gives its leave-one-machine-out figure).
// - LL over PCIe: a channel's 8-byte flagged stores carry `ll_channel_GBps` of payload at most
//   (fitted likewise).
// The PCIe rate: the topology's measured host<->device copies where it has them, else the
// `pcie` parameter, a nominal topology's rate, or the GPU model's generation and width at NCCL's
// width x speed / 80.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "models/schedule/schedule.h"
#include "models/strategies/nccl/plan.h"
#include "models/strategies/strategy_context.h"

namespace gradsync::models::nccl {

class HostTransports {
 public:
  HostTransports(const StrategyContext& ctx, const Plan& plan);

  // Whether ranks `from` and `to` (positions in the placement) share a host and talk over SHM.
  bool shm(int from, int to) const;
  // How many SHM transfers each rank sends and receives at once in this collective (its
  // channels, an alltoall's N - 1 messages): they share its PCIe link, and the ranks below one
  // PCIe switch that send (or receive) share its uplink. Before that is set, every rank is taken
  // to send and receive one.
  void set_shm_traffic(std::vector<int> sends, std::vector<int> receives);
  // What the transfers from `from` to `to` move at most, in link bytes per second (0: no limit
  // beyond the links): over SHM, all of them together, their share of both GPUs' PCIe rates
  // (shared with the GPUs' other SHM transfers at once); with LL over PCIe, each channel's (the
  // payload being `share` of the link bytes).
  struct Limit {
    double shm_Bps = 0;      // the pair's SHM transfers together
    double channel_Bps = 0;  // each transfer (a channel's)
    // One transfer's, where `parallel` of them share the pair's SHM limit.
    double one(int parallel) const;
  };
  Limit limit(int from, int to, int protocol, double share) const;
  // One transfer's, as the schedule's rounds have them (the ranks' SHM traffic as set).
  double limit_Bps(int from, int to, int protocol, double share) const { return limit(from, to, protocol, share).one(1); }
  // "SHM through host memory at 0.66 of the PCIe rate ...; PCIe rate: ..." where a pair uses SHM.
  std::string note() const;
  bool any_shm() const { return any_shm_; }
  // NCCL's PCIe rate of a rank's GPU (the measured copies', else the nominal one).
  double pcie_Bps(int rank) const;

 private:
  int uplink_sharers(int rank, bool sending) const;

  const StrategyContext& ctx_;
  const Plan& plan_;
  std::vector<int> host_of_;   // rank -> host index
  std::vector<int> local_of_;  // rank -> its position on its host
  std::vector<int> sends_, receives_;
  bool any_shm_ = false;
  mutable std::string pcie_note_;
};

// Between hosts, a channel's network connection keeps NCCL_STEPS (8) steps of its buffer in
// flight (the proxy posts a step when the GPU has filled it, the receiver's proxy hands it on
// and frees the slot), each step coming back after `net_loop_us`, so the connection moves at
// most 8 steps per loop whatever its NIC allows. A step is NCCL's (init.cc computeBuffSizes):
// a collective's protocol buffer over 8 (Simple 4 MiB, LL128 4.9 MB, LL 512 KiB), a point-to-
// point message's P2P_NET_CHUNKSIZE (p2p_channels.h). The loop's time is no figure NCCL or a
// vendor states: it is fitted once across the published multi-node runs (docs/fidelity.md).
inline constexpr int kNcclSteps = 8;
// (NCCL_BUFFSIZE as the network plugin sets it for Simple: plan.h NetPlugin).
double collective_net_step_bytes(const Plan& plan, int protocol);
// What one connection moves at most, link bytes per second.
double net_connection_Bps(double step_bytes, double nic_Bps, double window_bytes);
// What one channel's connection between hosts moves at most, GB/s of payload, and why: the steps
// it keeps in flight (net_window_MiB), LL's sender writing into host memory (ll_channel_GBps),
// GPUDirect RDMA across a host bridge (gdr_cpu_share), and without GPUDirect RDMA a ring's bytes
// staged through host memory over its boundary GPUs' PCIe (shm_efficiency).
struct NetChannelCap {
  double GBps = 0;
  std::string why;
  double in_flight_bytes = 0;  // where the steps in flight set GBps: the payload they hold (0 elsewhere)
};
NetChannelCap net_channel_cap(const StrategyContext& ctx, const Plan& plan, int algorithm, int protocol, int parts);
// Where GPUDirect RDMA crosses a CPU's host bridge (Plan::gdr_through_cpu), what a NIC moves at
// most: its rate x `gdr_cpu_share`, a figure no NCCL or vendor source states (NVIDIA's guide
// says only "worse"), fitted once across the published clusters; elsewhere its rate. GB/s.
double gdr_nic_GBps(const StrategyContext& ctx, const Plan& plan);

// The transfers of rounds [first, end) between two ranks of one host, each at most what its
// transport moves (transports.h): SHM's share of the PCIe links, LL's rate per channel over PCIe.
// Each rank's SHM transfers at once are counted in the busiest of those rounds.
void limit_by_transports(Schedule& s, std::size_t first, HostTransports& transports, const Plan& plan, int protocol, int workers);

// nccl-tests' bytes of one message of a point-to-point collective: alltoall sends S/N to each
// rank, sendrecv S to the next.
double p2p_message_bytes(const Plan& plan, double bytes, int ranks);

// Out of place (nccl-tests' first columns; in_place=off), a rank's own block of an all-gather on
// rings (all_gather.h: the ring's first step copies the input to its place in the output as it
// sends it on) and of an alltoall (the message a rank sends itself) is copied within the GPU's
// memory: S/N bytes at StrategyContext::gpu_copy_Bps, in turn with the transfers, as the same
// threads do both (on 2-8 x A100 under NCCL 2.18 out-of-place takes that much longer than
// in-place). 0 in place, for other collectives and algorithms, or where the copy rate is unknown.
double own_block_copy_s(const StrategyContext& ctx, const Plan& plan, int algorithm);

// A ring's all-reduce, reduce-scatter or all-gather between the GPUs of one host over P2P: in each
// loop every channel runs its operations in turn (2N - 1 for an all-reduce, N for the others), one
// of which moves nothing over the links but copies its block within the GPU (all_reduce.h,
// reduce_scatter.h, all_gather.h: with P2P read, NCCL's default over Ampere's NVLink, the first
// send into the sender's own FIFO, which the next rank then reads; with P2P write, the last receive
// out of the FIFO the previous rank wrote), and every rank of the ring does it at once, so the
// links wait: S/N bytes in all at StrategyContext::gpu_copy_Bps, in turn with the transfers, in
// place or not (an out-of-place all-gather copies its own block to the output besides:
// own_block_copy_s). A pair of A100 SXM under NCCL 2.18 reaches 204 GB/s of all-reduce where 12
// channels of 20 GB/s give 240 (214 with the copy). Not between hosts (the network's proxy moves a
// channel's data while its threads copy) nor over SHM (every operation there crosses PCIe). 0 where
// the copy rate is unknown.
double fifo_copy_s(const StrategyContext& ctx, const Plan& plan, int algorithm);

}  // namespace gradsync::models::nccl
