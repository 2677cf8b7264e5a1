// What NCCL 2.30.7 decides for one all-reduce on a placement of ranks: the hosts the ranks sit
// on (what joins their GPUs without crossing a network switch), NCCL's view of each host
// (system.h), the channel graphs of its search (search.h) for the ring, the tree and, where the
// hosts have them, NVLink SHARP (NVLS) and in-network reduction (CollNet), the communicator's
// channel count after NCCL's duplications (connect.cc ncclTopoPostset), and the algorithm and
// protocol its cost model picks for the size (tuning.h) unless the user fixed them.
//
// Facts the topology leaves open are assumed as NCCL's defaults would find them on such a
// machine, and said: every assumption is listed, with the value taken, so that a prediction
// can be given again under the other values (see nccl.cpp's range).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/strategies/nccl/system.h"
#include "models/strategies/nccl/tuning.h"

namespace gradsync::models {
class Topology;
}

namespace gradsync::models::nccl {

// What the user (or a log's NCCL_* settings) fixed, and the facts they settle.
struct PlanOptions {
  int forced_algorithm = -1;  // NCCL_ALGO
  int forced_protocol = -1;   // NCCL_PROTO
  int p2p_level = -1;         // NCCL_P2P_LEVEL as a path type; -1: NCCL's default
  int nccl_version = kNcclVersion;  // the release whose rules differ where NCCL changed them (system.h)
  bool nccl_version_stated = false;  // a log or the user said it (else it is an open fact where it matters)
  int peer_access = -1;       // SystemOptions::peer_access: the driver's, off NVLink, where no matrix says
  int gdr_level = -1;         // NCCL_NET_GDR_LEVEL; -1: NCCL's default
  std::string cpu_vendor;     // where the topology does not say ("": not known)
  std::optional<bool> nvls;       // NVLink SHARP usable (NCCL_NVLS_ENABLE); unset: the topology's fact, else assumed
  std::optional<bool> gpudirect;  // GPUDirect RDMA; unset: the NICs' fact, else assumed
  // A virtual machine whose PCIe ATS is off: PCIe ACS then sends every peer-to-peer DMA, GPUDirect
  // RDMA's too, up through the CPU's root complex (NCCL's troubleshooting guide, "PCI Access
  // Control Services" and "Virtual machines"). Unset: the hosts' fact (NodeFacts::vm), else assumed not, an
  // open fact where it matters.
  std::optional<bool> vm;
  bool collnet = false;       // NCCL_COLLNET_ENABLE=1 (needs NICs whose switches reduce: SHARP)
  int min_ctas = 0, max_ctas = 0;  // NCCL_MIN_CTAS / NCCL_MAX_CTAS; 0: NCCL's
  double net_latency_us = -1;  // the latency the network plugin reports (OFI_NCCL_NET_LATENCY); -1: the plugin's own
  int ib_qps = 1;  // NCCL_IB_QPS_PER_CONNECTION: queue pairs a connection of NCCL's IB transport spreads its bytes over
  // Whether the fabric between the hosts routes each packet adaptively (InfiniBand's adaptive
  // routing, which NCCL enables on its side by default), so that no queue pair's bytes keep to one
  // path. Unset: the NICs' fact (NodeFacts::adaptive_routing: static where one NIC says so,
  // adaptive where every NIC says so), else assumed not, an open fact where it matters
  // (Plan::static_routing).
  std::optional<bool> adaptive_routing;
  double net_flow_share = 1.0;  // the share of its NIC one such queue pair moves at most (nccl.cpp: net_flow_share)
  // What each direction of a PCIe route that peer-to-peer copies cross both ways at once (a ring)
  // gets, as a share of what one direction gets alone, where no bidirectional measurement of the
  // GPUs says (Plan::p2p_duplex_share).
  double p2p_duplex_share = 1.0;
  Collective collective = Collective::all_reduce;  // what is costed and chosen for
};

// One fact NCCL plans with that the inputs did not state, the value taken, and the options that
// state its other plausible value (to plan again under it: how much the fact matters).
struct Assumption {
  std::string fact;   // "NVLink SHARP"
  std::string value;  // "on (H100 on an NVSwitch: NCCL enables NVLS where the switch offers it)"
  std::string other;  // "off"
  PlanOptions with_other;
  // Parameters of the strategy the other value sets too (a constant's spread over machines).
  std::map<std::string, std::string> params{};
};

// The first host as NCCL's view of it holds it, for saying what a prediction rests on.
struct HostFacts {
  int gpus = 0, nics = 0, sockets = 0;  // nics: NCCL's network devices
  int nic_ports = 0, nic_cards = 0;      // the NICs' ports and the NICs themselves (NodeFacts::ports)
  std::string link_layer;  // its NICs' (NodeFacts::link_layer; "" where not stated)
  std::string cpu_vendor;  // "" where not known
  bool nvswitch = false;
  bool gdr = false;        // GPUDirect RDMA between its first GPU and a NIC
  int p2p_level = -1, gdr_level = -1;  // path types
};

// The network plugin NCCL reaches the NICs through, by their kind, and what it changes in NCCL
// (aws-ofi-nccl at 2daf7d30: src/platform-aws.cpp, src/nccl_ofi_net.cpp). EFA and Slingshot go
// through aws-ofi-nccl (libfabric's efa and cxi providers); InfiniBand, RoCE and Ethernet through
// NCCL's own IB verbs and socket transports, which change nothing here.
// - The latency it reports, which NCCL's cost model adds to each step between hosts when it
//   chooses (twice with Simple; search.cc graph->latencyInter): on EFA the instance's figure,
//   75 us on p4d, p4de, p5 and p5e and for instances it does not list, 35 on p5en and p6, 150 on
//   p3dn; 0 elsewhere. It steers the choice only (Plan::kernel_costs).
// - NCCL_PROTO=simple without GPUDirect RDMA (the provider lacks device memory, so LL's flags
//   would be polled in host memory whose writes it does not order).
// - On EFA with GPUDirect RDMA (p4d, p5 and later), NCCL_BUFFSIZE 8 MiB and
//   NCCL_P2P_NET_CHUNKSIZE 512 KiB: twice and four times the bytes a connection keeps in flight.
// GCP's GPUDirect-TCPXO (A3 Mega) goes through its FasTrak plugin, and runs with the environment
// Google ships beside it (nccl-env-profile.sh, which its guest config checker enforces):
// NCCL_ALGO=Ring,Tree, NCCL_PROTO=Simple, NCCL_NVLS_ENABLE=0, NCCL_MIN_NCHANNELS=4,
// NCCL_BUFFSIZE 8 MiB, NCCL_P2P_NET_CHUNKSIZE 512 KiB. Its tuner plugin's configuration
// (a3plus_tuner_config.textproto) is not public and not modelled: NCCL's own model chooses.
struct NetPlugin {
  std::string name;            // "aws-ofi-nccl", "FasTrak", or "" (NCCL's own transports)
  double latency_us = 0;
  bool simple_only = false;    // NCCL_PROTO=Simple
  std::string algorithms;      // NCCL_ALGO as the environment sets it ("": not set)
  unsigned allowed_algorithms = ~0U;  // the same as Comm::allowed_algorithms
  bool nvls_off = false;       // NCCL_NVLS_ENABLE=0
  int min_channels = 0;         // NCCL_MIN_NCHANNELS (0: NCCL's own)
  double buffer_bytes = 0;     // NCCL_BUFFSIZE as the plugin sets it (0: NCCL's 4 MiB)
  double p2p_chunk_bytes = 0;  // NCCL_P2P_NET_CHUNKSIZE likewise (0: NCCL's 128 KiB)
  // CollNet takes a plugin with NCCL's CollNet API (SHARP's, beside NCCL's own IB transport);
  // aws-ofi-nccl and FasTrak give only the network API ("NET/Plugin: Failed to find
  // ncclCollNetPlugin symbol" in their logs), so NCCL_COLLNET_ENABLE=1 changes nothing there.
  bool collnet = true;
};
// For NICs of `kind` (NodeFacts::link_layer), GPUDirect RDMA on or off, and the latency the user
// gave (< 0: the plugin's).
NetPlugin net_plugin_of(const std::string& kind, bool gpudirect, double latency_us);
// EFA's latency figures by instance family (platform-aws.cpp), the first the plugin's default.
inline constexpr double kEfaLatencyUs = 75, kEfaLatencyLowUs = 35, kEfaLatencyHighUs = 150;

// How the ranks of a host reach each other as NCCL connects them (positions on the host).
struct HostLinks {
  int ranks = 0;
  std::vector<char> p2p;   // [a * ranks + b]: P2P, else SHM through host memory
  std::vector<int> path;   // [a * ranks + b]: the path's type over the links (before SHM's detour)
  bool p2p_between(int a, int b) const { return p2p[static_cast<std::size_t>(a * ranks + b)] != 0; }
  int path_between(int a, int b) const { return path[static_cast<std::size_t>(a * ranks + b)]; }
};

struct Plan {
  // The ranks (positions in the placement) on each host, in rank order; hosts in the order of
  // their first rank (NCCL's node index).
  std::vector<std::vector<int>> hosts;
  // Each rank's host (index into hosts) and its position there.
  std::vector<int> rank_host, rank_local;
  // Per host: its graphs (Comm::graph order by algorithm), the search's result for that host.
  std::vector<int> host_shape;         // host -> index into shapes
  std::vector<Comm> shapes;            // one per distinct host: its own graphs (intra orders)
  std::vector<HostLinks> links;        // per shape: P2P or SHM between its ranks
  // Per host: the topology nodes of each NCCL network device as its search numbers them
  // (Graph::inter): its NIC, or an EFA device's rails; empty where the host was searched on
  // another view of it.
  std::vector<std::vector<std::vector<std::size_t>>> host_nics;
  Comm comm;                           // what the communicator agreed on (minima over the hosts)
  Costs costs;                         // NCCL's cost model, as it chooses with it
  // The same model for how long the kernels take: without the network plugin's reported latency,
  // which is a tuning figure (aws-ofi-nccl chose EFA's "because NCCL's internal tuner choices
  // work better with this value"), not a measured one; and with the newest release's latency
  // tables and rules whatever release chooses (an older release's tables steer its choice, as
  // NCCL 2.16's moves a 2-node A100 PCIe pair from LL to Simple at 480 KB where 2.30's would at
  // 800 KB, the pair's log switching at 480 KB; the newest are NVIDIA's latest measure of the
  // steps, and over the published clusters they price the time better: fidelity.md).
  Costs kernel_costs;
  Choice choice;
  int nvls_channels = 16;              // comm->nvlsChannels
  double nic_GBps = 0;                 // the slowest NIC port's line rate on the hosts (GB/s; 0: no NIC)
  // GPUDirect RDMA between a rank's GPU and the NIC its channels leave by crosses a CPU's host
  // bridge (path PHB or SYS, where NCCL_NET_GDR_LEVEL allows it) on some host: NVIDIA's GPUDirect
  // RDMA guide warns that such paths yield worse performance (peer-to-peer reads "severely
  // limited on some processor architectures") without saying how much (nccl.cpp: gdr_cpu_share).
  bool gdr_through_cpu = false;
  bool gdr_through_vm = false;  // ... because the VM's ACS sends it there (PlanOptions::vm)
  // PlanOptions::p2p_duplex_share where the GPUs' duplex is open (no bidirectional figure or
  // concurrent probe measured it), else 1: the links as inferred say it.
  double p2p_duplex_share = 1.0;
  // Each queue pair of NCCL's IB transport (InfiniBand, RoCE) keeps to one path through the
  // fabric, as static routing (InfiniBand's subnet manager tables, RoCE's ECMP hashing) gives it:
  // NCCL's documentation of NCCL_IB_QPS_PER_CONNECTION ("useful on multi-level fabrics which need
  // multiple queue pairs to have good routing entropy"). A queue pair then moves `net_flow_share`
  // of its NIC at most (transports.cpp: net_channel_cap); `ib_qps` of them a connection.
  bool static_routing = false;
  bool adaptive_routing = false;  // stated (the user's or the NICs'), where NCCL's IB transport crosses the fabric
  int ib_qps = 1;
  HostFacts host;                      // the first host's
  NetPlugin net;                       // the first host's NICs' plugin
  std::vector<Assumption> assumed;
  double bytes = 0;
  Collective collective = Collective::all_reduce;
  // All-gather, reduce-scatter: NCCL's cost model's own pick where gradsync runs its ring instead (-1: none).
  int picked_instead = -1;
  int nccl_version = kNcclVersion;     // the release planned for (a log's, or 2.30.7)

  int algorithm() const { return choice.algorithm; }
  int protocol() const { return choice.protocol; }
  // NCCL's expected time for the plan's size (us) and its parts: latency, and the algorithm
  // bandwidth the rest of the time stands for (GB/s: bytes / (time - latency)).
  double time_us() const { return choice.time_us; }
  double latency_us() const { return costs.lat[static_cast<std::size_t>(choice.algorithm)][static_cast<std::size_t>(choice.protocol)]; }
  double algorithm_GBps() const;
  // The graph of host h for the chosen algorithm.
  const Graph& host_graph(std::size_t host, int algorithm) const { return shapes[static_cast<std::size_t>(host_shape[host])].graph(algorithm); }
  const HostLinks& host_links(std::size_t host) const { return links[static_cast<std::size_t>(host_shape[host])]; }
  // The topology node of network device `index` (Graph::inter) of host h (an EFA device's first
  // rail: rails.h stripes its transfers over the others); -1 where not known.
  std::int32_t host_nic(std::size_t host, int index) const;
};

// The hosts of the ranks placed on `gpus` (topology nodes, in rank order).
std::vector<std::vector<int>> hosts_of(const Topology& topology, const std::vector<std::size_t>& gpus);

// The NVSwitch a GPU node is joined to, if any.
std::optional<std::size_t> nvswitch_of(const Topology& topology, std::size_t gpu);

// The NVLS algorithms NCCL can run for ranks on `gpus`: "NVLS" on one host, "NVLSTree" across
// hosts, where every host has an NVSwitch and Hopper or later GPUs; none otherwise. (NVLS
// across hosts runs where CollNet is on and NCCL's cost model picks it; it is not forced.)
std::vector<std::string> nvls_algorithms(const Topology& topology, const std::vector<std::size_t>& gpus);

// The CollNet algorithms NCCL can run for ranks on `gpus` when CollNet is enabled: across two
// hosts or more with NICs, at most 8 GPUs a host: "CollnetChain", and "CollnetDirect" where
// every host has an NVSwitch.
std::vector<std::string> collnet_algorithms(const Topology& topology, const std::vector<std::size_t>& gpus);

// A host's ranks in the order its graph gives for a channel (intra positions -> ranks); the
// host's ranks as listed where its graph has no order for them.
inline std::vector<int> host_order(const Plan& plan, std::size_t host, int algorithm, int channel) {
  const std::vector<int>& ranks = plan.hosts[host];
  const Graph& g = plan.host_graph(host, algorithm);
  if (g.n_channels == 0 || g.intra.empty()) return ranks;
  const std::vector<int>& intra = g.intra[static_cast<std::size_t>(channel % static_cast<int>(g.intra.size()))];
  std::vector<int> order;
  for (int local : intra) {
    if (local >= 0 && static_cast<std::size_t>(local) < ranks.size()) order.push_back(ranks[static_cast<std::size_t>(local)]);
  }
  if (order.size() != ranks.size()) return ranks;
  return order;
}

// NCCL's plan for an all-reduce of `bytes` by ranks on `gpus`.
Plan make_plan(const Topology& topology, const std::vector<std::size_t>& gpus, double bytes, const PlanOptions& options);

}  // namespace gradsync::models::nccl
