// A cluster from one node's nvidia-smi topo -m (gradsync topology generate --node): what a user
// has before buying the second node. The GPU columns give the node's inside (NVLink, NVSwitch,
// PCIe switches, host bridges, sockets) at NCCL's documented rates, as `gradsync import` builds
// a nominal machine; the NIC columns (PIX, PXB, PHB, NODE, SYS to each GPU, and to each other
// where their rows are printed) place each NIC in that tree: the NICs and GPUs are clustered
// together, closest class first, so a NIC PIX to a GPU shares its PCIe switch, one NODE to a
// socket's GPUs hangs from that socket. The network side (how many nodes, the NICs' rate and
// link layer, the network's shape, GPUDirect, SHARP) comes from the ClusterSpec, as for
// generated clusters.
//
// The NICs of the fabric: those named (`nics`, the names of topo -m's NIC legend), else those
// PIX or PXB to some GPU (a management or storage NIC sits on a socket, PHB or farther from every
// GPU), all of them where none is that close. The notes say which were taken and which left out.
#pragma once

#include <string>
#include <vector>

#include "models/topology/cluster_generator.h"
#include "models/topology/topology.h"

namespace gradsync::models {

struct NodeCluster {
  Topology topology;
  std::vector<std::string> notes;  // the node's import notes that matter, the NICs taken and left out
};

// `node_files`: the node's tool outputs, holding nvidia-smi topo -m with its NIC columns. The
// spec's node-inside parameters (gpus_per_node, intra, nvlink_GBps, gpus_per_pcie_switch,
// nics_per_node) are not used: the node file gives them. Throws InputError naming the file when
// it holds no topo -m, no NIC column, or measured bandwidth (a cluster is planned at NCCL's rates),
// and a name of `nics` that is not one of its NICs (or given twice).
NodeCluster cluster_from_node(const std::vector<std::string>& node_files, const ClusterSpec& spec,
                              const std::vector<std::string>& nics = {});

}  // namespace gradsync::models
