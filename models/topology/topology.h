// The topology model: endpoints (GPUs, host memory, CPU sockets, NICs) and internal
// nodes (PCIe switches, root complexes, NVSwitches, network switches) joined by links
// with a bandwidth, a latency and a duplex mode, held in a Boost.Graph.
//
// Routing: a flow from a to b follows the path of least cost, where a link costs its
// latency plus the time to move 1 MiB over it (so fast links and few hops win). Only
// "forwarding" nodes may be crossed: switches, root complexes, CPU sockets, NICs. A GPU
// or host memory is only ever the first or last node of a route (a GPU does not relay
// another GPU's traffic over NVLink; traffic without a direct link takes PCIe).
//
// A topology built from a measured matrix (see matrix_form.h, matrix_inference.h) keeps
// the measured per-pair figures: bottleneck_Bps() and latency_s() return them for the
// measured pairs, route_bottleneck_Bps() always answers from the links.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/topology/matrix_form.h"

namespace gradsync::models {

enum class NodeKind { gpu, host_memory, cpu_socket, nic, pcie_switch, root_complex, nvswitch, net_switch };

std::string to_string(NodeKind kind);
std::optional<NodeKind> node_kind_from_string(const std::string& text);
std::vector<std::string> node_kind_names();
// May a route pass through a node of this kind? (Not GPUs, not host memory.)
bool forwards_traffic(NodeKind kind);

// What a node's kind alone does not say but collectives depend on (NCCL plans with them).
// Each is stated by the topology file or the generator; unset means not known, and a
// prediction that depends on it says what it assumed (or gives the range over its values).
// The NICs' kinds, each a transport NCCL reaches them through (its own IB verbs and sockets,
// aws-ofi-nccl for EFA and Slingshot, GCP's FasTrak plugin for GPUDirect-TCPXO).
inline const std::vector<std::string> kNicLinkLayers = {"infiniband", "roce", "ethernet", "efa", "slingshot", "tcpxo"};

struct NodeFacts {
  std::string gpu_model;          // gpu: a model of models/topology/hardware.h ("H100")
  std::string link_layer;         // nic: one of kNicLinkLayers
  std::optional<bool> gpudirect;  // nic: GPUDirect RDMA between GPUs and this NIC
  std::optional<bool> sharp;      // nic: in-network reduction (NCCL's CollNet); nvswitch: NVLink SHARP (NVLS)
  std::string cpu_vendor;         // cpu_socket, root_complex: "intel", "amd" or "arm"
  // cpu_socket, root_complex: the host is a virtual machine without PCIe ATS, whose ACS sends
  // peer-to-peer DMA (GPUDirect RDMA's too) up through the CPU's root complex (NCCL's
  // troubleshooting guide, "PCI Access Control Services", "Virtual machines"); false: bare metal,
  // or a VM whose ATS keeps it peer to peer.
  std::optional<bool> vm;
  // nic: the network ports this adapter has (its link to the network carries their sum); NCCL's
  // IB transport fuses them into one device from 2.20 on, aws-ofi-nccl drives EFA adapters beside
  // a GPU as one device's rails (models/strategies/nccl/system.h ports_per_device). 0: one.
  int ports = 0;
  // nic: the fabric beyond this NIC routes packets adaptively (InfiniBand adaptive routing, a
  // RoCE fabric that sprays packets), so no queue pair of NCCL's IB transport keeps to one path;
  // false: static routing (subnet-manager tables, ECMP hashing a flow to one path).
  std::optional<bool> adaptive_routing;
  bool operator==(const NodeFacts&) const = default;
};

struct Node {
  std::string id;
  NodeKind kind;
  NodeFacts facts = {};
};

struct Link {
  std::size_t a = 0, b = 0;  // node indices
  double bandwidth_Bps = 0;  // per direction when full duplex; shared by both directions when half duplex
  double latency_s = 0;
  bool full_duplex = true;
  std::string label;  // optional: "nvlink", "pcie", "qpi", "infiniband", ...
  // Full-duplex links whose two directions interfere a little (acknowledgements of the
  // opposite flow, a shared DMA engine): when both directions carry traffic, together they
  // get at most 2 x bandwidth x duplex_share. 1: independent directions. (Half duplex is
  // full_duplex = false: both directions share one bandwidth.)
  double duplex_share = 1.0;
};

// One link crossed by a route, and in which direction (a->b is forward).
struct Hop {
  std::size_t link = 0;
  bool forward = true;
  bool operator==(const Hop&) const = default;
};
using Route = std::vector<Hop>;

class Topology {
 public:
  // Validates and builds. Throws InputError (naming `source`) on duplicate ids, unknown
  // node references, self links, duplicate links, non-positive bandwidth, negative
  // latency, a disconnected graph, or GPUs that cannot reach each other.
  Topology(std::string name, std::vector<Node> nodes, std::vector<Link> links, std::string source = "topology");
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  void set_description(std::string text) { description_ = std::move(text); }

  std::size_t node_count() const { return nodes_.size(); }
  const Node& node(std::size_t index) const { return nodes_.at(index); }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Link>& links() const { return links_; }
  std::optional<std::size_t> find(const std::string& id) const;
  // Throws InputError listing valid ids (with a suggestion) when `id` is unknown.
  std::size_t require(const std::string& id, const std::string& context) const;

  std::vector<std::size_t> gpus() const;  // in declaration order
  std::vector<std::size_t> host_memories() const;
  std::vector<std::size_t> nodes_of_kind(NodeKind kind) const;

  // A memo for results computed from this topology alone (a ring order searched for a
  // list of nodes: recommend asks the same one for many candidates). Thread-safe.
  std::optional<std::vector<int>> remembered(const std::vector<std::size_t>& key) const;
  void remember(const std::vector<std::size_t>& key, std::vector<int> value) const;

  // The links that end at `node` (indices into links()).
  std::span<const std::size_t> incident_links(std::size_t node) const;  // in declaration order

  // The links a flow from a to b crosses. Empty when a == b.
  const Route& route(std::size_t a, std::size_t b) const;
  double route_bottleneck_Bps(std::size_t a, std::size_t b) const;
  double route_latency_s(std::size_t a, std::size_t b) const;
  // The links a flow from a to b crosses when it passes through `first` and then `second` on
  // its way (npos: no such node): each leg's route in turn, the legs to `first` and from
  // `second` kept off the network's switches (within a host). (NCCL's channel between two hosts
  // leaves by the NIC its search gave the channel, which need not be the one nearest the GPU;
  // the GPU reaches it within its host, never out through another NIC and back.)
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  const Route& route_through(std::size_t a, std::size_t first, std::size_t second, std::size_t b) const;
  double latency_s(const Route& route) const;
  // As above, but a measured per-pair figure wins where one was kept.
  double bottleneck_Bps(std::size_t a, std::size_t b) const;
  double latency_s(std::size_t a, std::size_t b) const;

  // A measured pair without peer access (MatrixForm::p2p_supported): its figure is a copy the
  // driver staged through host memory, one half after the other, not what its links carry
  // (they may carry more: NCCL's SHM overlaps the halves). Copies between them that no engine
  // of their own moves (Op::max_Bps) go at most that fast. nullopt for any other pair.
  std::optional<double> staged_copy_Bps(std::size_t a, std::size_t b) const;

  // The measured matrices this topology was inferred from, if any.
  const std::optional<MatrixForm>& measured() const { return measured_; }
  void attach_measurements(MatrixForm measured);

 private:
  struct Graph;
  std::optional<double> measured_pair(std::size_t a, std::size_t b, bool latency) const;
  // For every vertex, the link by which the least-cost route from `source` arrives
  // (npos where unreached).
  std::vector<std::size_t> shortest_paths(std::size_t source) const;
  // The least-cost route from a to b, searching only as far as b (callers hold cache_mutex_).
  Route single_route(std::size_t a, std::size_t b) const;
  // The least-cost route from a to b through no network switch (callers do not hold cache_mutex_).
  Route route_within(std::size_t a, std::size_t b) const;
  // The same, searching from both ends at once until the searches meet (graphs of more than
  // kSearchBothEndsAbove nodes: on an 8,192-GPU cluster a search from one end reaches every
  // NIC before a GPU in the next node; from both ends, a few leaves).
  Route meet_in_the_middle(std::size_t a, std::size_t b) const;
  static constexpr std::size_t kSearchBothEndsAbove = 2048;
  // Between two endpoints of one link each to a forest of forwarding nodes: the one path
  // (nullopt where that does not apply).
  std::optional<Route> forest_route(std::size_t a, std::size_t b) const;
  void index_forest();
  // A source keeps its whole shortest-path tree (a search over every node, and a vector of
  // them) once asked for more routes than this many, or one per kNodesPerTreeRoute nodes on
  // large graphs: 8,192 GPUs each asked 7 routes in their node must not build 8,192 trees
  // of 24,000 nodes (1.5 GB).
  static constexpr std::size_t kRoutesBeforeTree = 4;
  static constexpr std::size_t kNodesPerTreeRoute = 256;

  std::string name_, description_, source_;
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::unordered_map<std::string, std::size_t> index_;
  std::unique_ptr<Graph> graph_;
  std::optional<MatrixForm> measured_;
  std::vector<std::optional<std::size_t>> measured_gpu_;  // node index -> row in measured_

  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::size_t, std::vector<std::size_t>> predecessor_cache_;
  mutable std::unordered_map<std::uint64_t, Route> route_cache_;
  mutable std::map<std::array<std::size_t, 4>, Route> through_cache_;
  mutable std::unordered_map<std::size_t, std::size_t> requests_from_;
  mutable std::map<std::vector<std::size_t>, std::vector<int>> memo_;
};

}  // namespace gradsync::models
