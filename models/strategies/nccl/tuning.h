// NCCL's cost model as 2.30.7 has it, with its latency tables and the rules it changed since 2.14
// by release (Comm::nccl_version) (src/graph/tuning.cc ncclTopoTuneModel, ncclTopoGetAlgoTime) and its
// choice of algorithm and protocol (src/enqueue.cc): for each algorithm (ring, tree, CollNet
// direct and chain, NVLS, NVLS tree) and protocol (LL, LL128, Simple), a latency and a bus
// bandwidth built from the channel graphs (search.h) and NCCL's tables, the rules that enable
// or disable each, and the time NCCL expects for a size: latency + bytes / bandwidth, with the
// tree's correction by size and the ring's plateau across nodes.
#pragma once

#include <optional>
#include <string>

#include <array>
#include <string>

#include "models/strategies/nccl/search.h"

namespace gradsync::models::nccl {

enum Algorithm : int { kTree = 0, kRing = 1, kCollnetDirect = 2, kCollnetChain = 3, kNvls = 4, kNvlsTree = 5, kPat = 6 };
constexpr int kAlgorithms = 7;
enum Protocol : int { kLL = 0, kLL128 = 1, kSimple = 2 };
constexpr int kProtocols = 3;
// The payload share of each protocol's lines: LL stores a flag beside every 4 bytes, LL128 120
// of every 128 bytes, Simple only data.
inline constexpr std::array<double, kProtocols> kPayloadShare = {0.5, 120.0 / 128.0, 1.0};
enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv };
// All-gather and reduce-scatter: one half of an all-reduce's ring.
bool all_gather_like(Collective c);
// Alltoall and sendrecv: point-to-point work (ncclSend / ncclRecv), which NCCL runs outside its
// collective algorithms and does not price with its cost model.
bool point_to_point(Collective c);
// nccl-tests' name of it ("all_gather"), and back (nullopt: not one of these).
const char* collective_name(Collective c);
std::optional<Collective> collective_from_name(const std::string& name);

const char* algorithm_name(int a);  // "Ring", "Tree", "NVLS", "NVLSTree", "CollnetDirect", "CollnetChain", "PAT"
const char* protocol_name(int p);   // "LL", "LL128", "Simple"
int algorithm_from_name(const std::string& name);  // -1 for none
int protocol_from_name(const std::string& name);

// What NCCL's tuning reads of a communicator.
struct Comm {
  int ranks = 1, nodes = 1;
  int cc_min = 80, cc_max = 80;
  std::string cpu_vendor;  // intel, amd, arm, "" (not known: NCCL's x86 other)
  int nccl_version = kNcclVersion;  // the release whose tables and rules price it (22105 for 2.21.5)
  bool nvls_support = false;     // NVLink SHARP available (NVSwitch, H100 or later, multicast)
  bool collnet_enable = false;   // NCCL_COLLNET_ENABLE and a SHARP-capable network
  bool nvswitch = false;         // the host has an NVSwitch (CollNet direct needs one)
  Graph ring, tree, collnet_chain, collnet_direct, nvls;
  int max_tree_pattern = static_cast<int>(Pattern::balanced_tree);
  int channels = 1;              // comm->nChannels, for the ring's plateau
  // User choices (NCCL_ALGO / NCCL_PROTO): -1 for NCCL's own.
  int forced_algorithm = -1, forced_protocol = -1;
  // The algorithms NCCL_ALGO allows where a network plugin's environment sets it (bit a for
  // algorithm a; all by default); a forced algorithm overrides it.
  unsigned allowed_algorithms = ~0U;

  const Graph& graph(int algorithm) const;
};

struct Costs {
  std::array<std::array<double, kProtocols>, kAlgorithms> bw{};   // GB/s of algorithm bandwidth; 0: disabled
  std::array<std::array<double, kProtocols>, kAlgorithms> lat{};  // us
};

// What ncclTopoTuneModel gives a channel of an algorithm per step within a host and between
// hosts (GB/s), before its protocol factors and caps: the graph's bandwidths, and for NVLS the
// switch's efficiency on the heads' links.
struct StepBandwidths {
  double intra = 0, inter = 0;
};
StepBandwidths step_bandwidths(const Comm& comm, Collective collective, int algorithm);

// How much faster than NCCL's model the NVLS tree's kernels run across hosts. NCCL prices its
// NVSwitch stage at the graph's per-channel speed times the switch's efficiency; an NVLS graph
// has one speed for both sides, which across hosts the NIC sets (the search finds no channel
// faster than the network takes), so the stage's price follows the NIC's rate, not the NVLinks'.
// Where that term alone holds NCCL's per-channel bandwidth below the network's and NCCL's own
// per-channel ceiling for the NVLS tree (perChMaxNVLSTreeBws, its measured figure), the kernels
// run at those (Blackwell, two nodes of 400 Gb/s NICs: 96 GB/s a channel against 62); 1
// elsewhere (on Hopper the ceiling binds first).
double nvls_tree_kernel_speedup(const Comm& comm, Collective collective);

// tuning.cc's nvlsEfficiency: the share of a GPU's NVLink rate NCCL credits NVLink SHARP with
// (Hopper 0.85, Blackwell 0.74; 0 before Hopper).
double nvls_efficiency(int compute_capability);

// ncclTopoTuneModel for one collective, with NCCL's enable rules and the user's choices applied.
Costs tune(const Comm& comm, Collective collective);
// ncclTopoGetAlgoTime, in its parts: the latency (us, the ring's plateau applied) and the
// bandwidth (GB/s, the tree's correction for the size applied) NCCL expects for `bytes`; a
// bandwidth of 0 where disabled.
struct AlgoTime {
  double latency_us = 0;
  double bw_GBps = 0;
  double time_us(double bytes) const { return bw_GBps > 0 ? latency_us + bytes / (1000 * bw_GBps) : -1; }
};
AlgoTime algorithm_time(const Comm& comm, const Costs& costs, Collective collective, int algorithm, int protocol, double bytes);
// Microseconds for `bytes`, or a negative value where disabled.
double algorithm_time_us(const Comm& comm, const Costs& costs, Collective collective, int algorithm, int protocol, double bytes);
// tuning.cc's baseLat as the newest release has it (what prices a time, Plan::kernel_costs):
// the fixed part of an algorithm's latency with a protocol (us).
double base_latency_us(int algorithm, int protocol);
// tuning.cc's hwLat as the newest release has it: one step's latency over NVLink, PCIe or the
// network (us).
enum Hw : int { kNvlinkHw = 0, kPciHw = 1, kNetHw = 2 };
double hop_latency_us(int hw, int algorithm, int protocol);

struct Choice {
  int algorithm = kRing;
  int protocol = kSimple;
  double time_us = 0;
};
// The fastest enabled algorithm and protocol for `bytes` (ties: the first in NCCL's order).
Choice choose(const Comm& comm, const Costs& costs, Collective collective, double bytes);

// enqueue.cc topoGetAlgoInfo: the channels a ring or tree kernel runs on for `bytes` (the whole
// buffer, as nccl-tests sizes it). NCCL drops channels while each of a channel's threads would
// have less than its threshold of bytes (64 with Simple, 8 with LL and LL128; a ring's LL
// threshold x ranks), down to one; NVLS and CollNet direct keep theirs; before 2.12 CollNet's
// chain runs on half of them (the other half carry it back down). Never more than
// `comm.channels`; `bytes` of infinity gives the count at NCCL's plateau.
int kernel_channels(const Comm& comm, int algorithm, int protocol, double bytes);

}  // namespace gradsync::models::nccl
