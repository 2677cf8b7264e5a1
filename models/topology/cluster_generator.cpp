#include "models/topology/cluster_generator.h"

#include <cmath>

#include "models/support/error.h"
#include "models/support/format.h"
#include "models/support/units.h"

namespace gradsync::models {

namespace {

constexpr double kNvlink4GBps = 25;  // per link and direction (NVLink 4, H100)
constexpr int kNvlinksPerGpu = 18;  // H100 SXM

void require_count(const std::string& flag, int value, int at_least) {
  if (value < at_least) {
    throw InputError(flag + " " + std::to_string(value) + ": expected an integer of at least " + std::to_string(at_least));
  }
}

void require_positive(const std::string& flag, double value) {
  if (!(value > 0) || !std::isfinite(value)) {
    throw InputError(flag + " " + number_text(value) + ": expected a number greater than 0");
  }
}

void require_latency(const std::string& flag, double value) {
  if (!(value >= 0) || !std::isfinite(value)) {
    throw InputError(flag + " " + number_text(value) + ": expected a number of at least 0");
  }
}

}  // namespace

std::string to_string(IntraFabric f) {
  switch (f) {
    case IntraFabric::pcie: return "pcie";
    case IntraFabric::nvlink: return "nvlink";
    case IntraFabric::nvswitch: return "nvswitch";
  }
  return "?";
}

std::string to_string(ClusterNetwork n) {
  switch (n) {
    case ClusterNetwork::single: return "single";
    case ClusterNetwork::fat_tree: return "fat-tree";
    case ClusterNetwork::rail: return "rail";
  }
  return "?";
}

IntraFabric intra_fabric_from(const std::string& text) {
  for (IntraFabric f : {IntraFabric::pcie, IntraFabric::nvlink, IntraFabric::nvswitch}) {
    if (to_string(f) == text) return f;
  }
  throw InputError("--intra " + text + ": expected pcie, nvlink or nvswitch");
}

ClusterNetwork cluster_network_from(const std::string& text) {
  for (ClusterNetwork n : {ClusterNetwork::single, ClusterNetwork::fat_tree, ClusterNetwork::rail}) {
    if (to_string(n) == text) return n;
  }
  throw InputError("--network " + text + ": expected single, fat-tree or rail");
}

double default_nvlink_GBps(const ClusterSpec& spec) {
  if (spec.intra == IntraFabric::nvlink) {
    return kNvlink4GBps * std::max(1, kNvlinksPerGpu / std::max(1, spec.gpus_per_node - 1));
  }
  return kNvlink4GBps * kNvlinksPerGpu;
}

void check_cluster_spec(const ClusterSpec& s) {
  require_count("--nodes", s.nodes, 1);
  require_count("--gpus-per-node", s.gpus_per_node, 1);
  require_count("--gpus-per-pcie-switch", s.gpus_per_pcie_switch, 1);
  require_count("--nics-per-node", s.nics_per_node, s.nodes > 1 ? 1 : 0);
  require_count("--nodes-per-leaf", s.nodes_per_leaf, 1);
  require_positive("--pcie-GBps", s.pcie_GBps);
  require_positive("--nic-GBps", s.nic_GBps);
  if (s.nvlink_GBps != 0) require_positive("--nvlink-GBps", s.nvlink_GBps);
  if (!(s.oversubscription >= 1) || !std::isfinite(s.oversubscription)) {
    throw InputError("--oversubscription " + number_text(s.oversubscription) +
                     ": expected a ratio of at least 1 (a leaf's NIC bandwidth over its uplink's)");
  }
  require_latency("--pcie-latency-us", s.pcie_latency_us);
  require_latency("--nvlink-latency-us", s.nvlink_latency_us);
  require_latency("--network-latency-us", s.network_latency_us);
  const double gpus = static_cast<double>(s.nodes) * s.gpus_per_node;
  if (gpus > 1 << 20) throw InputError("--nodes x --gpus-per-node = " + number_text(gpus) + ": expected at most 1048576 GPUs");
}

std::string cluster_name(const ClusterSpec& s) {
  if (!s.name.empty()) return s.name;
  return std::to_string(s.nodes) + "x" + std::to_string(s.gpus_per_node) + "gpu-" + to_string(s.intra) + "-" +
         to_string(s.network) + (s.oversubscription > 1 ? "-" + number_text(s.oversubscription) + "to1" : "");
}

Topology generate_cluster(const ClusterSpec& s) {
  check_cluster_spec(s);
  std::vector<Node> nodes;
  std::vector<Link> links;
  const auto add_node = [&](std::string id, NodeKind kind) {
    nodes.push_back({std::move(id), kind});
    return nodes.size() - 1;
  };
  const auto add_link = [&](std::size_t a, std::size_t b, double GBps, double latency_us, const char* label) {
    Link l;
    l.a = a;
    l.b = b;
    l.bandwidth_Bps = GBps_to_Bps(GBps);
    l.latency_s = us_to_s(latency_us);
    l.label = label;
    links.push_back(l);
  };
  const double nvlink = s.nvlink_GBps > 0 ? s.nvlink_GBps : default_nvlink_GBps(s);
  const int switches = (s.gpus_per_node + s.gpus_per_pcie_switch - 1) / s.gpus_per_pcie_switch;
  const bool networked = s.nodes > 1 && s.nics_per_node > 0;
  const int leaves = (s.nodes + s.nodes_per_leaf - 1) / s.nodes_per_leaf;
  const char* net_label = "network";

  // GPUs first, node by node (rank order = node order).
  std::vector<std::size_t> gpu(static_cast<std::size_t>(s.nodes) * static_cast<std::size_t>(s.gpus_per_node));
  for (int n = 0; n < s.nodes; ++n) {
    for (int g = 0; g < s.gpus_per_node; ++g) {
      gpu[static_cast<std::size_t>(n * s.gpus_per_node + g)] =
          add_node("n" + std::to_string(n) + "-gpu" + std::to_string(g), NodeKind::gpu);
    }
  }
  // The network's switches.
  std::vector<std::size_t> leaf;  // fat-tree: per leaf; rail: per rail x leaf; single: one
  std::size_t core = 0;
  if (networked) {
    if (s.network == ClusterNetwork::single) {
      leaf.push_back(add_node("net-switch", NodeKind::net_switch));
    } else {
      const int rails = s.network == ClusterNetwork::rail ? s.nics_per_node : 1;
      for (int r = 0; r < rails; ++r) {
        for (int l = 0; l < leaves; ++l) {
          leaf.push_back(add_node((s.network == ClusterNetwork::rail ? "rail" + std::to_string(r) + "-" : std::string()) +
                                      "leaf" + std::to_string(l),
                                  NodeKind::net_switch));
        }
      }
      if (leaf.size() > 1) {
        core = add_node("core", NodeKind::net_switch);
        // Each leaf's uplink: the NIC bandwidth under it over the oversubscription.
        const int nics_per_leaf = s.nodes_per_leaf * (s.network == ClusterNetwork::rail ? 1 : s.nics_per_node);
        const int last_nodes = s.nodes - (leaves - 1) * s.nodes_per_leaf;  // the last leaf may hold fewer
        for (std::size_t i = 0; i < leaf.size(); ++i) {
          const bool last = static_cast<int>(i % static_cast<std::size_t>(leaves)) == leaves - 1;
          const int nics = last ? nics_per_leaf / s.nodes_per_leaf * last_nodes : nics_per_leaf;
          add_link(leaf[i], core, nics * s.nic_GBps / s.oversubscription, s.network_latency_us, net_label);
        }
      }
    }
  }
  for (int n = 0; n < s.nodes; ++n) {
    const std::string p = "n" + std::to_string(n) + "-";
    const std::size_t rc = add_node(p + "rc", NodeKind::root_complex);
    const std::size_t host = add_node(p + "host", NodeKind::host_memory);
    add_link(rc, host, s.pcie_GBps, s.pcie_latency_us, "pcie");
    std::vector<std::size_t> pcie;
    for (int w = 0; w < switches; ++w) {
      pcie.push_back(add_node(p + "pcie" + std::to_string(w), NodeKind::pcie_switch));
      add_link(pcie.back(), rc, s.pcie_GBps, s.pcie_latency_us, "pcie");
    }
    for (int g = 0; g < s.gpus_per_node; ++g) {
      add_link(gpu[static_cast<std::size_t>(n * s.gpus_per_node + g)], pcie[static_cast<std::size_t>(g / s.gpus_per_pcie_switch)],
               s.pcie_GBps, s.pcie_latency_us, "pcie");
    }
    if (s.intra == IntraFabric::nvswitch) {
      const std::size_t nvs = add_node(p + "nvswitch", NodeKind::nvswitch);
      for (int g = 0; g < s.gpus_per_node; ++g) {
        add_link(gpu[static_cast<std::size_t>(n * s.gpus_per_node + g)], nvs, nvlink, s.nvlink_latency_us, "nvswitch");
      }
    } else if (s.intra == IntraFabric::nvlink) {
      for (int a = 0; a < s.gpus_per_node; ++a) {
        for (int b = a + 1; b < s.gpus_per_node; ++b) {
          add_link(gpu[static_cast<std::size_t>(n * s.gpus_per_node + a)], gpu[static_cast<std::size_t>(n * s.gpus_per_node + b)],
                   nvlink, s.nvlink_latency_us, "nvlink");
        }
      }
    }
    if (!networked) continue;
    const int l = n / s.nodes_per_leaf;
    for (int k = 0; k < s.nics_per_node; ++k) {
      const std::size_t nic = add_node(p + "nic" + std::to_string(k), NodeKind::nic);
      add_link(nic, pcie[static_cast<std::size_t>(k * switches / s.nics_per_node)], s.pcie_GBps, s.pcie_latency_us, "pcie");
      std::size_t sw = leaf.front();
      if (s.network == ClusterNetwork::fat_tree) sw = leaf[static_cast<std::size_t>(l)];
      if (s.network == ClusterNetwork::rail) sw = leaf[static_cast<std::size_t>(k * leaves + l)];
      add_link(nic, sw, s.nic_GBps, s.network_latency_us, net_label);
    }
  }
  const std::string name = cluster_name(s);
  Topology t(name, std::move(nodes), std::move(links), name);
  t.set_description("Generated by gradsync topology generate: " + std::to_string(s.nodes) + " nodes x " +
                    std::to_string(s.gpus_per_node) + " GPUs (" + to_string(s.intra) + " inside a node, PCIe " +
                    number_text(s.pcie_GBps) + " GB/s), " +
                    (networked ? std::to_string(s.nics_per_node) + " NICs of " + number_text(s.nic_GBps) + " GB/s per node, " +
                                     to_string(s.network) + " network" +
                                     (s.network == ClusterNetwork::single ? std::string()
                                                                          : ", " + std::to_string(s.nodes_per_leaf) +
                                                                                " nodes per leaf, oversubscription " +
                                                                                number_text(s.oversubscription) + ":1")
                               : std::string("no network")) +
                    ". Latencies nominal.");
  return t;
}

}  // namespace gradsync::models
