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
  bool collnet = false;       // NCCL_COLLNET_ENABLE=1 (needs NICs whose switches reduce: SHARP)
  int min_ctas = 0, max_ctas = 0;  // NCCL_MIN_CTAS / NCCL_MAX_CTAS; 0: NCCL's
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
  int gpus = 0, nics = 0, sockets = 0;
  std::string link_layer;  // its NICs' (infiniband, roce, ethernet; "" where not stated)
  std::string cpu_vendor;  // "" where not known
  bool nvswitch = false;
  bool gdr = false;        // GPUDirect RDMA between its first GPU and a NIC
  int p2p_level = -1, gdr_level = -1;  // path types
};

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
  // Per host: the topology node of each NIC as its search numbers them (Graph::inter); empty
  // where the host was searched on another view of it.
  std::vector<std::vector<std::size_t>> host_nics;
  Comm comm;                           // what the communicator agreed on (minima over the hosts)
  Costs costs;
  Choice choice;
  int nvls_channels = 16;              // comm->nvlsChannels
  double nic_GBps = 0;                 // the slowest NIC port's line rate on the hosts (GB/s; 0: no NIC)
  HostFacts host;                      // the first host's
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
  // The topology node of NIC `index` (Graph::inter) of host h; -1 where not known.
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

// NCCL's plan for an all-reduce of `bytes` by ranks on `gpus`.
Plan make_plan(const Topology& topology, const std::vector<std::size_t>& gpus, double bytes, const PlanOptions& options);

}  // namespace gradsync::models::nccl
