// NCCL's view of one host, as NCCL 2.30.7 (NVIDIA/nccl 5067397c) builds it before it plans its
// channels (src/graph/topo.cc, paths.cc): the communicator's GPUs, the PCIe switches, CPUs
// (NUMA domains), the NVSwitch, the NICs and their network ports, joined by links that carry
// NCCL's own nominal rates — an NVLink at its per-link figure by compute capability, a PCIe
// link at width x speed / 80, the link between sockets by CPU vendor, a network port at its
// line rate — and, between every pair of nodes, the path NCCL would take with its bandwidth
// and its type (NVL, PIX, PXB, PXN, PHB, SYS, ...). What a measured matrix says about the
// machine is not used here: NCCL plans with these figures, and the executors then run the
// plan on the topology's own links.
//
// What the paths follow (paths.cc): breadth-first from each node, a path is better when its
// type is closer, then when its bandwidth is higher, then when it has fewer hops; a GPU is
// never crossed; between two GPUs whose path is farther than the P2P level, traffic goes
// through the CPU (SHM); between a GPU and a NIC farther than the GPUDirect RDMA level, or
// when either cannot do GPUDirect, through the CPU; and a GPU sends through an NVLink peer
// sitting next to a NIC (PXN) when that peer reaches the NIC better.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gradsync::models {
class Topology;
struct Link;
}

namespace gradsync::models::nccl {

// Path types, closest first (graph.h PATH_*, 2.30: P2C, a GPU's NVLink-C2C to its CPU and a NIC on
// that CPU, comes before PXN; 2.27 had them the other way round).
enum PathType : int {
  kPathLoc = 0,
  kPathNvl = 1,
  kPathNvb = 2,
  kPathC2c = 3,
  kPathPix = 4,
  kPathPxb = 5,
  kPathP2c = 6,
  kPathPxn = 7,
  kPathPhb = 8,
  kPathSys = 9,
  kPathNet = 10,
  kPathDis = 11,
};
// "PIX", "NVL", ... as NCCL prints them.
std::string path_name(int type);
// The type a name stands for (NCCL_P2P_LEVEL, NCCL_NET_GDR_LEVEL): "PIX", "NVL", "SYS", ...
// and nvidia-smi topo -m's NODE (same as PHB here) and NV# (NVL); -1 for anything else.
int path_type_from_name(const std::string& name);

enum class NodeType { gpu, pci, nvs, cpu, nic, net };
enum class LinkType { nvl, c2c, pci, sys, net };

struct SysLink {
  int to = 0;
  LinkType type = LinkType::pci;
  double bw = 0;  // GB/s, NCCL's; the search takes from it what each channel uses
};

struct SysNode {
  NodeType type = NodeType::pci;
  std::size_t topology_node = static_cast<std::size_t>(-1);  // the gradsync node it stands for
  int rank = -1;          // gpu: its position among the host's ranks
  int cc = 0;             // gpu: compute capability x10
  bool gdr = true;        // gpu, net: GPUDirect RDMA possible
  double net_bw = 0;      // net: the port's line rate, GB/s (the search takes from it per channel)
  bool coll = false;      // net: in-network reduction (CollNet)
  int local_gpu = -1;     // net: the GPU closest to it
  std::vector<std::size_t> rails;  // net: the NICs (gradsync nodes) its bytes cross, the first its PCI place
  std::string vendor;     // cpu: intel, amd, arm ("" not known)
  std::vector<SysLink> links;
};

struct SysPath {
  std::vector<std::pair<int, int>> hops;  // (node, index of the link in its links) from the start
  double bw = 0;
  int type = kPathDis;
  int count() const { return static_cast<int>(hops.size()); }
};

// Whether a topology link is NVLink-C2C (a Grace Hopper GPU to its CPU): labelled "nvlink-c2c".
bool is_c2c_link(const Link& link);
// NCCL sees NVLink-C2C from 2.26 on (topo.cc's "c2c" node, from NVML); before, such a GPU is a PCI
// device of its CPU.
constexpr int kC2cSince = 22600;

// What NCCL credits a topology link of NVLinks with, GB/s: its NVLinks (the link's label
// "nvlink xN" / "nvswitch xN", else its rate over one link's) at NCCL's per-link figure.
double nccl_nvlink_GBps(const Link& link, int compute_capability);

// NCCL's release as one number, MAJOR x 10000 + MINOR x 100 + PATCH (its NCCL_VERSION_CODE):
// 2.30.7 is 23007. The rules gradsync models are those of 2.30.7 unless a rule says otherwise.
constexpr int kNcclVersion = 23007;
// "2.27.3" -> 22703; 0 for anything else.
int nccl_version_code(const std::string& text);
std::string nccl_version_text(int code);

struct SystemOptions {
  int cc = 80;                  // the GPUs' compute capability x10 (where a GPU's own model is not known)
  std::string cpu_vendor;       // where the topology does not say: intel, amd, arm, "" (not known)
  int p2p_level = -1;           // NCCL_P2P_LEVEL as a path type; -1: NCCL's default for the CPU and the version
  int nccl_version = kNcclVersion;  // the release whose default P2P level applies (paths.cc changed it in 2.23)
  // The driver's peer access between GPUs off NVLink where the topology does not say (a
  // p2pBandwidthLatencyTest or topo -p2p matrix does): -1 allowed (NCCL's view without NVML
  // saying otherwise), 0 refused, 1 allowed even where the topology says refused.
  int peer_access = -1;
  int gdr_level = -1;           // NCCL_NET_GDR_LEVEL; -1: NCCL's default (P2C)
  int gdr = -1;                 // GPUDirect RDMA where the NICs do not say: 1, 0, -1 (assume possible)
  bool pxn = true;              // NCCL_PXN_DISABLE=0
  bool nic_reduces = false;     // a NIC whose facts do not say whether its network reduces (SHARP): does it?
  double pcie_GBps = 24;        // NCCL's rate of the GPUs' PCIe links (width x speed / 80)
  double inter_socket_GBps = 16;
};

// How many of a NIC's ports (NodeFacts::ports) NCCL drives as one device: its IB transport fuses
// a multi-port NIC's ports from 2.20 on (net_ib.cc NCCL_IB_MERGE_NICS; from 2.23 topo.cc's NIC
// fusion at NCCL_NET_MERGE_LEVEL=PORT), at most 2 a device up to 2.23, 4 up to 2.29 and 8 in 2.30
// (NCCL_IB_MAX_DEVS_PER_NIC, NCCL_NET_MAX_DEVS_PER_NIC); aws-ofi-nccl's RDMA protocol drives up
// to 4 EFA adapters beside a GPU as one device's rails. NCCL's sockets, Slingshot's cxi provider
// and FasTrak drive each port alone. A link layer not stated is taken as InfiniBand.
int ports_per_device(const std::string& link_layer, int nccl_version);

class System {
 public:
  // NCCL's view of the host of `gpus` (topology nodes of the communicator's ranks on that host,
  // in rank order): what is reachable from them without crossing a network switch.
  // `with_paths` false leaves the paths to complete(): hosts alike (by their nodes and links)
  // need them computed once.
  System(const Topology& topology, const std::vector<std::size_t>& gpus, const SystemOptions& options, bool with_paths = true);
  void complete();  // computes the paths, when the constructor did not

  const std::vector<SysNode>& nodes() const { return nodes_; }
  std::vector<SysNode>& nodes() { return nodes_; }
  const std::vector<int>& of_type(NodeType type) const { return by_type_[static_cast<std::size_t>(type)]; }
  int gpu_count() const { return static_cast<int>(of_type(NodeType::gpu).size()); }
  int net_count() const { return static_cast<int>(of_type(NodeType::net).size()); }
  int gpu(int rank) const { return of_type(NodeType::gpu)[static_cast<std::size_t>(rank)]; }  // node index
  int net(int i) const { return of_type(NodeType::net)[static_cast<std::size_t>(i)]; }

  // The path NCCL takes from node `from` to node `to`.
  const SysPath& path(int from, int to) const { return paths_[static_cast<std::size_t>(from) * nodes_.size() + static_cast<std::size_t>(to)]; }
  // Between two ranks' GPUs: P2P (type within the P2P level, and the driver allows peer
  // access: p2pBandwidthLatencyTest's or topo -p2p's matrix where the topology has one) or
  // through the CPU (SHM).
  bool p2p(int rank_a, int rank_b) const;
  // Whether the driver lets two ranks' GPUs access each other (what NCCL asks NVML).
  bool peer_access(int rank_a, int rank_b) const;
  // Whether the topology says which pairs the driver lets access each other (a measured matrix).
  bool peer_access_stated() const { return peer_stated_; }
  // Those pair facts as bytes (peer access, topo -m's path types), for telling hosts apart.
  std::string pair_facts() const;
  // The type of the path between two ranks' GPUs over their links, before SHM sends it through
  // the CPU (PIX, PXB: they share a PCIe switch).
  int gpu_path_type(int rank_a, int rank_b) const;
  // Between a rank's GPU and a NIC: GPUDirect RDMA.
  bool gdr(int rank, int net) const;
  // The path type GPUDirect RDMA is judged by between two nodes (a GPU's, a NIC's): the path's,
  // or through a peer GPU (PXN) the peer's to the NIC.
  int gdr_distance(int gpu_node, int net_node) const;

  int min_compute_capability() const;
  std::string cpu_vendor() const;  // of the first CPU ("" not known)
  bool has_nvswitch() const { return !of_type(NodeType::nvs).empty(); }
  // system->maxBw and totalBw (search.cc ncclTopoSearchInit): the best path bandwidth from a GPU
  // to a GPU (or a NIC when `inter`), and the most a GPU can move (its NVLinks together, or its PCIe link).
  double max_bw(bool inter) const;
  double total_bw() const;
  int p2p_level() const { return p2p_level_; }
  int gdr_level() const { return gdr_level_; }
  bool pxn() const { return pxn_; }

  // ncclTopoGetLocal: the nodes of `type` that node `from` reaches best (the highest path
  // bandwidth, then the closest type), in index order (indices among that type).
  std::vector<int> local(int from, NodeType type) const;
  // ncclTopoGetLocalNet: the NIC (index among the NICs) a rank's channel `channel` uses, so that
  // the GPUs sharing NICs spread over them.
  int local_net(int rank, int channel) const;
  // ncclTopoGetLocalGpu: the rank whose local NICs include NIC `net` (index), -1 for none.
  int local_gpu(int net) const;

 private:
  void add_link(int a, int b, LinkType type, double bw);
  void compute_paths();
  void bfs_from(int base);
  // The path from `a` to `b` through `via` (a CPU or a GPU): NCCL's addInterStep.
  void reroute(int a, int b, int via, bool via_gpu);
  SysPath& path_mut(int from, int to) { return paths_[static_cast<std::size_t>(from) * nodes_.size() + static_cast<std::size_t>(to)]; }
  int local_cpu(int node) const;

  std::vector<SysNode> nodes_;
  std::vector<std::vector<int>> by_type_;
  // Per pair of ranks (a x gpu_count + b): the driver allows peer access; the path type
  // nvidia-smi topo -m gave the pair (-1: none given), which NCCL would find from sysfs.
  std::vector<char> peer_;
  bool peer_stated_ = false;
  std::vector<int> class_type_;
  std::vector<int> direct_type_;  // per pair of ranks: the path's type before SHM's detour
  std::vector<SysPath> paths_;
  std::string cpu_vendor_;  // where no CPU node says (the caller's)
  int peer_override_ = -1;  // SystemOptions::peer_access
  int p2p_level_ = kPathPxb;
  int gdr_level_ = kPathP2c;
  bool pxn_ = true;
};

}  // namespace gradsync::models::nccl
