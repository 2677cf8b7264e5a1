// Multi-node GPU clusters from a few parameters (gradsync topology generate): nodes, GPUs
// per node, the fabric inside a node, NICs per node and their speed, and the network that
// joins the NICs. The result is an ordinary graph-form Topology.
//
// Inside a node: GPUs sit under PCIe switches (gpus_per_pcie_switch each) under one root
// complex with the node's host memory; NIC k sits on PCIe switch k x switches / NICs (or on the
// root complex itself: nic_attach "cpu"). A GPU that carries its own CPU (GH200) sits on that CPU
// by NVLink-C2C instead, each CPU with its host memory and NIC k on CPU k x GPUs / NICs.
//   pcie     : that tree is the only path between GPUs;
//   nvlink   : besides, every pair of GPUs in a node has its own NVLink (a full mesh);
//   nvswitch : besides, every GPU has one link to the node's NVSwitch.
// The network (one link per NIC to a switch):
//   single   : every NIC on one switch;
//   fat-tree : nodes_per_leaf nodes' NICs on each leaf switch, every leaf on one core with
//              a link of (the leaf's NIC bandwidth) / oversubscription: the spine layer
//              drawn as one switch with aggregated links (routes are single paths; a real
//              spine spreads flows over its switches, which the aggregate stands for);
//   rail     : NIC k of every node on rail k's leaf switch (one per nodes_per_leaf nodes),
//              rail leaves on one core as above. Traffic between rails crosses the core
//              (no NVLink forwarding between rails: GPUs do not forward).
#pragma once

#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "models/support/json_input.h"
#include "models/topology/topology.h"

namespace gradsync::models {

enum class IntraFabric { pcie, nvlink, nvswitch };
enum class ClusterNetwork { single, fat_tree, rail };

struct ClusterSpec {
  std::string name{};  // empty: made from the parameters ("128x8-nvswitch-rail")
  int nodes = 2;
  int gpus_per_node = 8;
  IntraFabric intra = IntraFabric::nvswitch;
  int gpus_per_pcie_switch = 1;  // with one NIC per GPU, each GPU and its NIC under their own switch (as NCCL pairs them)
  double pcie_GBps = 0;  // each PCIe link (GPU, NIC, switch uplinks); 0: the GPU model's (H100: Gen5 x16, NCCL's 48 GB/s)
  double nvlink_GBps = 0;  // per GPU pair (nvlink) or per GPU to the NVSwitch (nvswitch); 0: the default
  int nics_per_node = 8;
  int ports_per_nic = 1;  // network ports on each NIC, each at nic_GBps (NodeFacts::ports)
  double nic_GBps = 50;  // per NIC port and direction (400 Gb/s)
  ClusterNetwork network = ClusterNetwork::rail;
  double oversubscription = 1;  // fat-tree / rail: a leaf's NIC bandwidth over its uplink's
  int nodes_per_leaf = 32;
  double pcie_latency_us = 1, nvlink_latency_us = 0.5, network_latency_us = 1;
  // Facts NCCL plans with (models/topology/topology.h NodeFacts); "auto": not stated, so a
  // prediction says what it assumed, or gives the range over the fact's values.
  std::string gpu = "H100";                // every GPU's model
  std::string cpu = "auto";                // intel | amd | arm
  std::string nic_link_layer = "infiniband";  // infiniband | roce | ethernet | efa | slingshot
  std::string gpudirect = "auto";          // GPUDirect RDMA between GPUs and NICs: true | false
  std::string nic_sharp = "auto";          // in-network reduction at the NICs' switches (CollNet): true | false
  std::string nvlink_sharp = "auto";       // NVLink SHARP in the NVSwitch (NVLS): true | false
  std::string vm = "auto";                 // hosts are VMs without PCIe ATS (NodeFacts::vm): true | false
  std::string adaptive_routing = "auto";   // the fabric routes packets adaptively (NodeFacts::adaptive_routing): true | false
  // Where each NIC sits: "switch" (on the GPUs' PCIe switches, as above), "cpu" (on the root
  // complex: PHB to every GPU, so GPUDirect RDMA crosses the CPU's host bridge), or "auto": cpu
  // for a GPU that carries its own CPU (GH200), switch otherwise.
  std::string nic_attach = "auto";
};

// Every parameter of a generated cluster, once: `gradsync topology generate` makes its flags
// from this table (--gpus-per-node), and the generated form of a topology file reads its keys
// ({"name", "generate": {"gpus_per_node": 8, ...}}), so a shipped name standing for a cluster
// builds it from these parameters when it is named.
struct ClusterParam {
  std::string key;  // "gpus_per_node"; the flag is "--gpus-per-node"
  std::string help;
  std::variant<int ClusterSpec::*, double ClusterSpec::*, IntraFabric ClusterSpec::*, ClusterNetwork ClusterSpec::*,
               std::string ClusterSpec::*>
      field;
  bool show_default = true;  // false: the help says what the default is (0 stands for "from the other parameters")
  std::vector<std::string> words = {};  // a text parameter's values
};
const std::vector<ClusterParam>& cluster_params();
double nic_link_GBps(const ClusterSpec& s);  // each NIC's network link: its ports' sum
std::string cluster_flag(const ClusterParam& p);  // "--gpus-per-node"
std::vector<std::string> cluster_param_words(const ClusterParam& p);  // a word parameter's values; empty for numbers
std::string cluster_param_text(const ClusterSpec& spec, const ClusterParam& p);  // "8", "fat-tree"

// The generated form: {"name", "description"?, "generate": {key: value, ...}}, keys from
// cluster_params() (unknown keys are errors), the rest at their defaults; checked like the flags,
// with messages naming the file and the JSON path.
bool is_generated_form(const JsonView& doc);
ClusterSpec cluster_spec_from_json(const JsonView& doc);
// The generated form of `spec`: its name, and the parameters that differ from the defaults.
ordered_json cluster_spec_to_json(const ClusterSpec& spec);

// Default NVLink figures: H100 SXM's 18 NVLink4 links of 25 GB/s per direction (450 GB/s to
// its NVSwitch); for a full mesh of G GPUs, those links split evenly over the G-1 peers.
double default_nvlink_GBps(const ClusterSpec& spec);

// Throws InputError naming the parameter (as `place` names it: its flag by default), its
// value and what was expected.
using ParamPlace = std::function<std::string(const ClusterParam&)>;
void check_cluster_spec(const ClusterSpec& spec, const ParamPlace& place = {});

std::string cluster_name(const ClusterSpec& spec);

Topology generate_cluster(const ClusterSpec& spec);

// Each PCIe link's rate: --pcie-GBps, else the GPU model's (H100: Gen5 x16, NCCL's 48 GB/s).
double pcie_link_GBps(const ClusterSpec& spec);
// A GPU model's NVLink-C2C to the CPU it carries, GB/s (GH200: 450), 0 for the others: there each
// GPU of a node has its own CPU (a root complex joined to it by an "nvlink-c2c" link, the node's
// CPUs joined to each other) and no PCIe switch.
double superchip_c2c_GBps(const ClusterSpec& spec);
// Where the NICs sit, "switch" or "cpu" (nic_attach, with auto resolved by the GPU model).
std::string nic_attach_of(const ClusterSpec& spec);

// The facts the spec states for each kind of node (unset where it says auto).
struct ClusterFacts {
  NodeFacts gpu, nic, nvswitch, cpu;
  NodeFacts of(NodeKind kind) const;
};
ClusterFacts cluster_facts(const ClusterSpec& spec);

void append_link(std::vector<Link>& links, std::size_t a, std::size_t b, double GBps, double latency_us, const char* label);

// The network that joins the nodes' NICs, as the spec's network, nic_GBps, nodes_per_leaf and
// oversubscription say: its switches are added to `nodes` on construction, and plug() links
// node n's NIC k to its switch. Nothing for one node or no NICs.
class ClusterFabric {
 public:
  ClusterFabric(const ClusterSpec& spec, int nics_per_node, std::vector<Node>& nodes, std::vector<Link>& links);
  bool joins() const { return !leaf_.empty(); }
  void plug(std::size_t nic, int node, int k);
  std::string describe() const;  // "8 NICs of 50 GB/s per node, rail network, ..."

 private:
  const ClusterSpec& spec_;
  int nics_per_node_ = 0;
  std::vector<Link>& links_;
  std::vector<std::size_t> leaf_;  // fat-tree: per leaf; rail: per rail x leaf; single: one
  int leaves_ = 0;
};

IntraFabric intra_fabric_from(const std::string& text);  // pcie | nvlink | nvswitch
ClusterNetwork cluster_network_from(const std::string& text);  // single | fat-tree | rail
std::string to_string(IntraFabric f);
std::string to_string(ClusterNetwork n);

}  // namespace gradsync::models
