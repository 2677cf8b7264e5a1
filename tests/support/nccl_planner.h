// What the tests of NCCL's planner share: generated HGX H100 hosts, a host's GPUs, and the nccl
// strategy's request on a topology's first GPUs.
#pragma once

#include <string>
#include <vector>

#include "models/executors/predict.h"
#include "models/strategies/strategy.h"
#include "models/topology/cluster_generator.h"
#include "models/topology/placement.h"
#include "models/topology/topology.h"

namespace test_nccl_planner {

// `nodes` HGX hosts of 8 GPUs and 8 NICs on one network, as the generator makes them.
inline gradsync::models::Topology hgx(int nodes) {
  gradsync::models::ClusterSpec s;
  s.nodes = nodes;
  s.gpus_per_node = 8;
  s.nics_per_node = 8;
  s.network = gradsync::models::ClusterNetwork::single;
  return gradsync::models::generate_cluster(s);
}

// `nodes` hosts of `gpus` A100 PCIe each (no NVLink) and one 25 GB/s InfiniBand NIC with GPUDirect
// RDMA (or without), the NIC on a PCIe switch beside the GPUs ("switch") or on the CPU's root complex ("cpu"):
// the published two-node A100 PCIe pair's shape.
inline gradsync::models::Topology a100_pcie_hosts(int nodes, int gpus, const std::string& nic_attach, bool gpudirect = true,
                                                  const std::string& vm = "auto") {
  gradsync::models::ClusterSpec s;
  s.nodes = nodes;
  s.gpus_per_node = gpus;
  s.intra = gradsync::models::IntraFabric::pcie;
  s.nics_per_node = 1;
  s.nic_GBps = 25;
  s.network = gradsync::models::ClusterNetwork::single;
  s.gpu = "A100-PCIE";
  s.gpudirect = gpudirect ? "true" : "false";
  s.nic_attach = nic_attach;
  s.vm = vm;
  return gradsync::models::generate_cluster(s);
}

// Two hosts of 8 H100 on an NVSwitch with the facts a published cluster's log gives stated
// (GPUDirect RDMA, NVLink SHARP, Intel CPUs, bare metal): `nics` NICs of `ports` ports of
// `port_GBps` each, of `link_layer`, `gpus_per_switch` GPUs under each PCIe switch.
inline gradsync::models::Topology stated_hosts(int nics, int ports, double port_GBps, const std::string& link_layer,
                                               int gpus_per_switch = 1) {
  gradsync::models::ClusterSpec s;
  s.nodes = 2;
  s.nics_per_node = nics;
  s.ports_per_nic = ports;
  s.nic_GBps = port_GBps;
  s.gpus_per_pcie_switch = gpus_per_switch;
  s.nic_link_layer = link_layer;
  s.gpudirect = "true";
  s.nvlink_sharp = "true";
  s.cpu = "intel";
  s.vm = "false";
  return gradsync::models::generate_cluster(s);
}

// Four hosts of 4 `gpu` on an NVLink mesh, 4 Slingshot NICs of 25 GB/s each (Polaris's and the
// Grace Hopper machines' shape).
inline gradsync::models::Topology mesh_hosts(const std::string& gpu, const std::string& cpu = "auto", const std::string& gpudirect = "auto") {
  gradsync::models::ClusterSpec s;
  s.nodes = 4;
  s.gpus_per_node = 4;
  s.intra = gradsync::models::IntraFabric::nvlink;
  s.nics_per_node = 4;
  s.nic_GBps = 25;
  s.nic_link_layer = "slingshot";
  s.gpu = gpu;
  s.cpu = cpu;
  s.gpudirect = gpudirect;
  return gradsync::models::generate_cluster(s);
}

// The 8 GPUs of generated host `host`.
inline std::vector<std::size_t> host_gpus(const gradsync::models::Topology& t, int host) {
  std::vector<std::size_t> out;
  for (int g = 0; g < 8; ++g) out.push_back(t.require("n" + std::to_string(host) + "-gpu" + std::to_string(g), "test"));
  return out;
}

// The nccl strategy on the first `gpus` GPUs of `t` for `bytes`, with these parameters.
inline gradsync::models::PredictRequest nccl_request(const gradsync::models::Topology& t, int gpus, double bytes,
                                                     const std::vector<std::string>& params) {
  gradsync::models::PredictRequest q;
  q.topology = &t;
  q.strategy = &gradsync::models::find_strategy("nccl");
  q.placement = gradsync::models::first_gpus(t, gpus);
  q.bytes = bytes;
  q.params = gradsync::models::SyncParams::parse(params);
  return q;
}

}  // namespace test_nccl_planner
