#include "models/topology/cluster_generator.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "models/support/error.h"
#include "models/support/format.h"
#include "models/support/units.h"
#include "models/topology/hardware.h"

namespace gradsync::models {

const std::vector<ClusterParam>& cluster_params() {
  static const std::vector<ClusterParam> params = {
      {"nodes", "machines in the cluster", &ClusterSpec::nodes},
      {"gpus_per_node", "GPUs in each machine", &ClusterSpec::gpus_per_node},
      {"intra", "the fabric between a node's GPUs: pcie | nvlink | nvswitch", &ClusterSpec::intra},
      {"nvlink_GBps",
       "per direction: each GPU pair's NVLink (nvlink) or each GPU's links to the NVSwitch (nvswitch); default 450 "
       "(nvswitch) or 450 / (GPUs - 1) rounded down to whole 25 GB/s links (nvlink)",
       &ClusterSpec::nvlink_GBps, false},
      {"gpus_per_pcie_switch",
       "GPUs under each PCIe switch (with the NICs spread over the switches; NCCL's channels leave by the NICs its "
       "search gives them, other strategies' transfers by the GPU's nearest)",
       &ClusterSpec::gpus_per_pcie_switch},
      {"pcie_GBps", "each PCIe link, per direction; default: the GPU model's (NCCL: Gen4 x16 24, Gen5 x16 48)",
       &ClusterSpec::pcie_GBps, false},
      {"nics_per_node", "network adapters per machine", &ClusterSpec::nics_per_node},
      {"ports_per_nic",
       "network ports on each NIC, each at --nic-GBps: the NIC's link carries their sum. NCCL's IB transport fuses a NIC's "
       "ports into one device from 2.20 on (2 a device up to 2.23, 4 up to 2.29, 8 in 2.30), earlier releases drive "
       "each alone; aws-ofi-nccl drives the EFA adapters beside a GPU as one device, a rail each: give them as one "
       "NIC's ports or as NICs of their own (planned alike)",
       &ClusterSpec::ports_per_nic},
      {"nic_GBps", "each NIC (each of its ports), per direction (400 Gb/s = 50)", &ClusterSpec::nic_GBps},
      {"network", "how the NICs are joined: single | fat-tree | rail", &ClusterSpec::network},
      {"oversubscription", "fat-tree / rail: a leaf's NIC bandwidth over its uplink's (>= 1)", &ClusterSpec::oversubscription},
      {"nodes_per_leaf", "fat-tree / rail: machines per leaf switch", &ClusterSpec::nodes_per_leaf},
      {"pcie_latency_us", "latency of each PCIe link", &ClusterSpec::pcie_latency_us},
      {"nvlink_latency_us", "latency of each NVLink / NVSwitch link", &ClusterSpec::nvlink_latency_us},
      {"network_latency_us", "latency of each network link", &ClusterSpec::network_latency_us},
      {"gpu", "every GPU's model (its compute capability, NVLink generation and PCIe link)", &ClusterSpec::gpu, true,
       hardware::gpu_model_names()},
      {"cpu", "the hosts' CPU vendor (NCCL's P2P level and network overhead depend on it): auto (not stated; a GH200 "
              "carries its own, Grace: arm), intel, amd or arm",
       &ClusterSpec::cpu, true, {"auto", "intel", "amd", "arm"}},
      {"nic_link_layer",
       "the NICs' kind: infiniband, roce or ethernet (NCCL's own IB verbs and socket transports), efa (AWS) or "
       "slingshot (HPE), which NCCL reaches through the aws-ofi-nccl plugin, or tcpxo (GCP's GPUDirect-TCPXO, A3 Mega: "
       "its FasTrak plugin, with the NCCL environment Google ships for it)",
       &ClusterSpec::nic_link_layer, true, kNicLinkLayers},
      {"gpudirect", "GPUDirect RDMA between GPUs and NICs: auto (not stated; true for tcpxo, GPUDirect by design), true or false", &ClusterSpec::gpudirect,
       true, {"auto", "true", "false"}},
      {"nic_sharp", "in-network reduction in the network's switches (SHARP, NCCL's CollNet): auto (not stated), true "
                    "or false",
       &ClusterSpec::nic_sharp, true, {"auto", "true", "false"}},
      {"nvlink_sharp", "NVLink SHARP in the NVSwitch (NCCL's NVLS, H100 and later): auto (not stated), true or false",
       &ClusterSpec::nvlink_sharp, true, {"auto", "true", "false"}},
      {"vm",
       "the hosts are virtual machines without PCIe ATS, whose ACS sends GPUDirect RDMA through the CPU's root complex: "
       "auto (not stated), true, or false (bare metal, or VMs whose ATS keeps it peer to peer)",
       &ClusterSpec::vm, true, {"auto", "true", "false"}},
      {"adaptive_routing",
       "the fabric between the hosts routes packets adaptively (InfiniBand adaptive routing, a RoCE fabric that sprays "
       "packets), so no queue pair of NCCL's IB transport keeps to one path: auto (not stated), true, or false (static "
       "routing: subnet-manager tables, ECMP)",
       &ClusterSpec::adaptive_routing, true, {"auto", "true", "false"}},
      {"nic_attach",
       "where each NIC sits: switch (on the GPUs' PCIe switches: PIX or PXB to its GPUs), cpu (on a CPU root port: "
       "PHB to every GPU, so GPUDirect RDMA, where NCCL_NET_GDR_LEVEL allows it, crosses the CPU's host bridge), or "
       "auto (cpu for a GPU that carries its own CPU, GH200: NIC k on GPU k x GPUs / NICs's CPU; switch otherwise)",
       &ClusterSpec::nic_attach, true, {"auto", "switch", "cpu"}},
  };
  return params;
}

std::string cluster_flag(const ClusterParam& p) {
  std::string flag = "--" + p.key;
  for (char& c : flag) c = c == '_' ? '-' : c;
  return flag;
}

std::vector<std::string> cluster_param_words(const ClusterParam& p) {
  if (std::holds_alternative<IntraFabric ClusterSpec::*>(p.field)) return {"pcie", "nvlink", "nvswitch"};
  if (std::holds_alternative<ClusterNetwork ClusterSpec::*>(p.field)) return {"single", "fat-tree", "rail"};
  return p.words;
}

std::string cluster_param_text(const ClusterSpec& spec, const ClusterParam& p) {
  return std::visit(
      [&](auto member) -> std::string {
        const auto& v = spec.*member;
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int>) return std::to_string(v);
        else if constexpr (std::is_same_v<T, double>) return number_text(v);
        else if constexpr (std::is_same_v<T, std::string>) return v;
        else return to_string(v);
      },
      p.field);
}

bool is_generated_form(const JsonView& doc) { return doc.value().is_object() && doc.value().contains("generate"); }

ClusterSpec cluster_spec_from_json(const JsonView& doc) {
  doc.expect_object({"name", "description", "generate"});
  ClusterSpec spec;
  spec.name = doc.at("name").as_string();
  if (spec.name.empty()) doc.at("name").fail("a topology name");
  const JsonView g = doc.at("generate");
  std::vector<std::string> keys;
  for (const ClusterParam& p : cluster_params()) keys.push_back(p.key);
  g.expect_object(keys);
  for (const ClusterParam& p : cluster_params()) {
    const auto v = g.get(p.key);
    if (!v) continue;
    std::visit(
        [&](auto member) {
          auto& field = spec.*member;
          using T = std::decay_t<decltype(field)>;
          if constexpr (std::is_same_v<T, int>) {
            field = static_cast<int>(v->as_integer_in(0, 1 << 20));
          } else if constexpr (std::is_same_v<T, double>) {
            field = v->as_number();
          } else {
            const std::string text = v->as_string();
            const auto words = cluster_param_words(p);
            if (std::find(words.begin(), words.end(), text) == words.end()) v->fail(join(words, " | ") + did_you_mean(text, words));
            if constexpr (std::is_same_v<T, IntraFabric>) field = intra_fabric_from(text);
            else if constexpr (std::is_same_v<T, ClusterNetwork>) field = cluster_network_from(text);
            else field = text;
          }
        },
        p.field);
  }
  check_cluster_spec(spec, [&](const ClusterParam& p) { return g.where() + "/" + p.key + ":"; });
  return spec;
}

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

ordered_json cluster_spec_to_json(const ClusterSpec& spec) {
  const ClusterSpec defaults;
  ordered_json generate = ordered_json::object();
  for (const ClusterParam& p : cluster_params()) {
    if (cluster_param_text(spec, p) == cluster_param_text(defaults, p)) continue;
    std::visit(
        [&](auto member) {
          using T = std::decay_t<decltype(spec.*member)>;
          if constexpr (std::is_same_v<T, int> || std::is_same_v<T, double> || std::is_same_v<T, std::string>) {
            generate[p.key] = spec.*member;
          } else {
            generate[p.key] = to_string(spec.*member);
          }
        },
        p.field);
  }
  return ordered_json{{"name", cluster_name(spec)}, {"generate", generate}};
}

double default_nvlink_GBps(const ClusterSpec& spec) {
  const hardware::GpuModel* gpu = hardware::find_gpu_model(spec.gpu);
  const int cc = gpu ? gpu->compute_capability : 90;
  const double per_link = hardware::nvlink_physical_GBps_per_link(cc);
  const int links = hardware::nvlinks_per_gpu(cc);
  if (spec.intra == IntraFabric::nvlink) return per_link * std::max(1, links / std::max(1, spec.gpus_per_node - 1));
  return per_link * links;
}

double superchip_c2c_GBps(const ClusterSpec& spec) {
  const hardware::GpuModel* gpu = hardware::find_gpu_model(spec.gpu);
  return gpu ? gpu->c2c_GBps : 0.0;
}

std::string nic_attach_of(const ClusterSpec& spec) {
  if (spec.nic_attach != "auto") return spec.nic_attach;
  return superchip_c2c_GBps(spec) > 0 ? "cpu" : "switch";
}

double pcie_link_GBps(const ClusterSpec& spec) {
  if (spec.pcie_GBps > 0) return spec.pcie_GBps;
  const hardware::GpuModel* gpu = hardware::find_gpu_model(spec.gpu);
  return gpu ? hardware::pcie_GBps(gpu->pcie_gen, gpu->lanes) : 48.0;
}

void check_cluster_spec(const ClusterSpec& s, const ParamPlace& place) {
  const auto where = [&](const std::string& key) {
    for (const ClusterParam& p : cluster_params()) {
      if (p.key == key) return place ? place(p) : cluster_flag(p);
    }
    throw std::logic_error("no cluster parameter " + key);
  };
  const auto require_count = [&](const std::string& key, int value, int at_least) {
    if (value < at_least) {
      throw InputError(where(key) + " " + std::to_string(value) + ": expected an integer of at least " + std::to_string(at_least));
    }
  };
  const auto require_positive = [&](const std::string& key, double value) {
    if (!(value > 0) || !std::isfinite(value)) throw InputError(where(key) + " " + number_text(value) + ": expected a number greater than 0");
  };
  const auto require_latency = [&](const std::string& key, double value) {
    if (!(value >= 0) || !std::isfinite(value)) throw InputError(where(key) + " " + number_text(value) + ": expected a number of at least 0");
    if (value > kMaxLatency_us) {
      throw InputError(where(key) + " " + number_text(value) + ": expected a latency in us of at most " + number_text(kMaxLatency_us) +
                       " (1000 s)");
    }
  };
  // Every link the cluster has, within the rates a topology file may hold (the graph form it is
  // written as reads them back): `what` says which link a parameter's value makes.
  const auto require_rate = [&](const std::string& key, double value, double link_GBps, const std::string& what) {
    require_positive(key, value);
    if (!(link_GBps >= kMinBandwidth_GBps && link_GBps <= kMaxBandwidth_GBps)) {
      throw InputError(where(key) + " " + number_text(value) + ": " + what + " would carry " + number_text(link_GBps) +
                       " GB/s; expected a bandwidth in GB/s between " + number_text(kMinBandwidth_GBps) + " (1 kB/s) and " +
                       number_text(kMaxBandwidth_GBps) + " (1 PB/s) a link");
    }
  };
  require_count("nodes", s.nodes, 1);
  require_count("gpus_per_node", s.gpus_per_node, 1);
  require_count("gpus_per_pcie_switch", s.gpus_per_pcie_switch, 1);
  require_count("nics_per_node", s.nics_per_node, s.nodes > 1 ? 1 : 0);
  require_count("ports_per_nic", s.ports_per_nic, 1);
  if (s.ports_per_nic > 8) throw InputError(where("ports_per_nic") + " " + std::to_string(s.ports_per_nic) + ": expected at most 8 (the most NCCL fuses into one device)");
  require_count("nodes_per_leaf", s.nodes_per_leaf, 1);
  if (s.pcie_GBps != 0) require_rate("pcie_GBps", s.pcie_GBps, s.pcie_GBps, "each PCIe link");
  for (const ClusterParam& p : cluster_params()) {
    const auto* text = std::get_if<std::string ClusterSpec::*>(&p.field);
    if (!text) continue;
    const std::string& v = s.*(*text);
    if (std::find(p.words.begin(), p.words.end(), v) == p.words.end()) {
      throw InputError(where(p.key) + " " + v + ": expected " + join(p.words, ", ") + did_you_mean(v, p.words));
    }
  }
  if (superchip_c2c_GBps(s) > 0 && s.nic_attach == "switch") {
    throw InputError(where("nic_attach") + " switch: a " + s.gpu + " reaches its NICs through its own CPU (NVLink-C2C, then the CPU's root ports), "
                     "not a PCIe switch; expected cpu or auto");
  }
  require_rate("nic_GBps", s.nic_GBps, nic_link_GBps(s), s.ports_per_nic > 1 ? "each NIC's link (its " + std::to_string(s.ports_per_nic) + " ports)" : "each NIC's link");
  if (s.nvlink_GBps != 0) require_rate("nvlink_GBps", s.nvlink_GBps, s.nvlink_GBps, "each NVLink");
  if (!(s.oversubscription >= 1) || !std::isfinite(s.oversubscription)) {
    throw InputError(where("oversubscription") + " " + number_text(s.oversubscription) +
                     ": expected a ratio of at least 1 (a leaf's NIC bandwidth over its uplink's)");
  }
  // A leaf's uplink, where the network has several leaves: its NICs' links over the
  // oversubscription (ClusterFabric), the fullest leaf and the last, which may hold fewer nodes.
  const int leaves = (s.nodes + s.nodes_per_leaf - 1) / s.nodes_per_leaf;
  const int rails = s.network == ClusterNetwork::rail ? s.nics_per_node : 1;
  if (s.nodes > 1 && s.network != ClusterNetwork::single && static_cast<double>(leaves) * rails >= 2 && s.nics_per_node > 0) {
    const double nics_per_node_on_leaf = s.network == ClusterNetwork::rail ? 1.0 : s.nics_per_node;
    const int last_nodes = s.nodes - (leaves - 1) * s.nodes_per_leaf;
    for (const int nodes_on_leaf : {std::min(s.nodes, s.nodes_per_leaf), last_nodes}) {
      const double uplink = nodes_on_leaf * nics_per_node_on_leaf * nic_link_GBps(s) / s.oversubscription;
      require_rate(uplink > kMaxBandwidth_GBps ? "nic_GBps" : "oversubscription", uplink > kMaxBandwidth_GBps ? s.nic_GBps : s.oversubscription,
                   uplink, "a leaf's uplink (" + number_text(nodes_on_leaf * nics_per_node_on_leaf) + " NICs' links / the oversubscription)");
    }
  }
  require_latency("pcie_latency_us", s.pcie_latency_us);
  require_latency("nvlink_latency_us", s.nvlink_latency_us);
  require_latency("network_latency_us", s.network_latency_us);
  const double gpus = static_cast<double>(s.nodes) * s.gpus_per_node;
  if (gpus > 1 << 20) {
    throw InputError(where("nodes") + " x " + where("gpus_per_node") + " = " + number_text(gpus) + ": expected at most 1048576 GPUs");
  }
}

std::string cluster_name(const ClusterSpec& s) {
  if (!s.name.empty()) return s.name;
  return std::to_string(s.nodes) + "x" + std::to_string(s.gpus_per_node) + "gpu-" + to_string(s.intra) + "-" +
         to_string(s.network) + (s.oversubscription > 1 ? "-" + number_text(s.oversubscription) + "to1" : "");
}

void append_link(std::vector<Link>& links, std::size_t a, std::size_t b, double GBps, double latency_us, const char* label) {
  Link l;
  l.a = a;
  l.b = b;
  l.bandwidth_Bps = GBps_to_Bps(GBps);
  l.latency_s = us_to_s(latency_us);
  l.label = label;
  links.push_back(l);
}

NodeFacts ClusterFacts::of(NodeKind kind) const {
  switch (kind) {
    case NodeKind::gpu: return gpu;
    case NodeKind::nic: return nic;
    case NodeKind::nvswitch: return nvswitch;
    case NodeKind::root_complex:
    case NodeKind::cpu_socket: return cpu;
    default: return {};
  }
}

ClusterFacts cluster_facts(const ClusterSpec& s) {
  // Unset where the spec says auto.
  const auto stated = [](const std::string& v) -> std::optional<bool> {
    if (v == "auto") return std::nullopt;
    return v == "true";
  };
  ClusterFacts f;
  f.gpu.gpu_model = s.gpu;
  f.nic.link_layer = s.nic_link_layer;
  f.nic.gpudirect = stated(s.gpudirect);
  // GPUDirect-TCPXO moves the data between the NIC and GPU memory by its design (hence its name).
  if (s.nic_link_layer == "tcpxo" && !f.nic.gpudirect) f.nic.gpudirect = true;
  f.nic.sharp = stated(s.nic_sharp);
  f.nvswitch.sharp = stated(s.nvlink_sharp);
  if (s.cpu != "auto") f.cpu.cpu_vendor = s.cpu;
  f.cpu.vm = stated(s.vm);
  f.nic.adaptive_routing = stated(s.adaptive_routing);
  if (s.ports_per_nic > 1) f.nic.ports = s.ports_per_nic;
  return f;
}

double nic_link_GBps(const ClusterSpec& s) { return s.nic_GBps * s.ports_per_nic; }

ClusterFabric::ClusterFabric(const ClusterSpec& s, int nics_per_node, std::vector<Node>& nodes, std::vector<Link>& links)
    : spec_(s), nics_per_node_(nics_per_node), links_(links) {
  if (s.nodes < 2 || nics_per_node < 1) return;
  leaves_ = (s.nodes + s.nodes_per_leaf - 1) / s.nodes_per_leaf;
  const auto add_switch = [&](std::string id) {
    nodes.push_back({std::move(id), NodeKind::net_switch, {}});
    return nodes.size() - 1;
  };
  if (s.network == ClusterNetwork::single) {
    leaf_.push_back(add_switch("net-switch"));
    return;
  }
  const int rails = s.network == ClusterNetwork::rail ? nics_per_node : 1;
  for (int r = 0; r < rails; ++r) {
    for (int l = 0; l < leaves_; ++l) {
      leaf_.push_back(add_switch((s.network == ClusterNetwork::rail ? "rail" + std::to_string(r) + "-" : std::string()) + "leaf" +
                                 std::to_string(l)));
    }
  }
  if (leaf_.size() < 2) return;
  const std::size_t core = add_switch("core");
  // Each leaf's uplink: the NIC bandwidth under it over the oversubscription.
  const int nics_per_leaf = s.nodes_per_leaf * (s.network == ClusterNetwork::rail ? 1 : nics_per_node);
  const int last_nodes = s.nodes - (leaves_ - 1) * s.nodes_per_leaf;  // the last leaf may hold fewer
  for (std::size_t i = 0; i < leaf_.size(); ++i) {
    const bool last = static_cast<int>(i % static_cast<std::size_t>(leaves_)) == leaves_ - 1;
    const int nics = last ? nics_per_leaf / s.nodes_per_leaf * last_nodes : nics_per_leaf;
    append_link(links_, leaf_[i], core, nics * nic_link_GBps(s) / s.oversubscription, s.network_latency_us, "network");
  }
}

void ClusterFabric::plug(std::size_t nic, int node, int k) {
  if (leaf_.empty()) return;
  const int l = node / spec_.nodes_per_leaf;
  std::size_t sw = leaf_.front();
  if (spec_.network == ClusterNetwork::fat_tree) sw = leaf_[static_cast<std::size_t>(l)];
  if (spec_.network == ClusterNetwork::rail) sw = leaf_[static_cast<std::size_t>(k * leaves_ + l)];
  append_link(links_, nic, sw, nic_link_GBps(spec_), spec_.network_latency_us, "network");
}

std::string ClusterFabric::describe() const {
  if (leaf_.empty()) return "no network";
  return std::to_string(nics_per_node_) + " NICs of " +
         (spec_.ports_per_nic > 1 ? std::to_string(spec_.ports_per_nic) + " ports x " : std::string()) + number_text(spec_.nic_GBps) +
         " GB/s per node, " + to_string(spec_.network) +
         " network" +
         (spec_.network == ClusterNetwork::single
              ? std::string()
              : ", " + std::to_string(spec_.nodes_per_leaf) + " nodes per leaf, oversubscription " + number_text(spec_.oversubscription) + ":1");
}

Topology generate_cluster(const ClusterSpec& s) {
  check_cluster_spec(s);
  std::vector<Node> nodes;
  std::vector<Link> links;
  const ClusterFacts facts = cluster_facts(s);
  const auto add_node = [&](std::string id, NodeKind kind) {
    nodes.push_back({std::move(id), kind, facts.of(kind)});
    return nodes.size() - 1;
  };
  const auto add_link = [&](std::size_t a, std::size_t b, double GBps, double latency_us, const char* label) {
    append_link(links, a, b, GBps, latency_us, label);
  };
  const double nvlink = s.nvlink_GBps > 0 ? s.nvlink_GBps : default_nvlink_GBps(s);
  const double pcie_GBps = pcie_link_GBps(s);
  const int switches = (s.gpus_per_node + s.gpus_per_pcie_switch - 1) / s.gpus_per_pcie_switch;

  // GPUs first, node by node (rank order = node order).
  std::vector<std::size_t> gpu(static_cast<std::size_t>(s.nodes) * static_cast<std::size_t>(s.gpus_per_node));
  for (int n = 0; n < s.nodes; ++n) {
    for (int g = 0; g < s.gpus_per_node; ++g) {
      gpu[static_cast<std::size_t>(n * s.gpus_per_node + g)] =
          add_node("n" + std::to_string(n) + "-gpu" + std::to_string(g), NodeKind::gpu);
    }
  }
  ClusterFabric fabric(s, s.nics_per_node, nodes, links);
  // A GPU that carries its own CPU (GH200): each GPU of a node joined to its CPU by NVLink-C2C, that
  // CPU's root ports holding the NICs, the CPUs joined to each other; no PCIe switch.
  const double c2c_GBps = superchip_c2c_GBps(s);
  const bool nic_on_cpu = nic_attach_of(s) == "cpu";
  for (int n = 0; n < s.nodes; ++n) {
    const std::string p = "n" + std::to_string(n) + "-";
    std::vector<std::size_t> cpus, pcie;
    if (c2c_GBps > 0) {
      for (int g = 0; g < s.gpus_per_node; ++g) {
        cpus.push_back(add_node(p + "cpu" + std::to_string(g), NodeKind::root_complex));
        const std::size_t host = add_node(p + "host" + std::to_string(g), NodeKind::host_memory);
        add_link(cpus.back(), host, pcie_GBps, s.pcie_latency_us, "pcie");
        add_link(gpu[static_cast<std::size_t>(n * s.gpus_per_node + g)], cpus.back(), c2c_GBps, s.pcie_latency_us, "nvlink-c2c");
        for (std::size_t other = 0; other + 1 < cpus.size(); ++other) add_link(cpus[other], cpus.back(), pcie_GBps, s.pcie_latency_us, "socket");
      }
    } else {
      cpus.push_back(add_node(p + "rc", NodeKind::root_complex));
      const std::size_t host = add_node(p + "host", NodeKind::host_memory);
      add_link(cpus.back(), host, pcie_GBps, s.pcie_latency_us, "pcie");
      for (int w = 0; w < switches; ++w) {
        pcie.push_back(add_node(p + "pcie" + std::to_string(w), NodeKind::pcie_switch));
        add_link(pcie.back(), cpus.back(), pcie_GBps, s.pcie_latency_us, "pcie");
      }
      for (int g = 0; g < s.gpus_per_node; ++g) {
        add_link(gpu[static_cast<std::size_t>(n * s.gpus_per_node + g)], pcie[static_cast<std::size_t>(g / s.gpus_per_pcie_switch)],
                 pcie_GBps, s.pcie_latency_us, "pcie");
      }
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
    if (!fabric.joins()) continue;
    for (int k = 0; k < s.nics_per_node; ++k) {
      const std::size_t nic = add_node(p + "nic" + std::to_string(k), NodeKind::nic);
      const std::size_t at = !nic_on_cpu ? pcie[static_cast<std::size_t>(k * switches / s.nics_per_node)]
                             : cpus[static_cast<std::size_t>(k * static_cast<int>(cpus.size()) / s.nics_per_node)];
      add_link(nic, at, pcie_GBps, s.pcie_latency_us, "pcie");
      fabric.plug(nic, n, k);
    }
  }
  const std::string name = cluster_name(s);
  Topology t(name, std::move(nodes), std::move(links), name);
  t.set_description("Generated by gradsync topology generate: " + std::to_string(s.nodes) + " nodes x " +
                    std::to_string(s.gpus_per_node) + " " + s.gpu + " GPUs (" + to_string(s.intra) + " inside a node, " +
                    (c2c_GBps > 0 ? "each on its own CPU by NVLink-C2C at " + number_text(c2c_GBps) + " GB/s, " : std::string()) + "PCIe " +
                    number_text(pcie_GBps) + " GB/s), " + fabric.describe() + ". Latencies nominal.");
  return t;
}

}  // namespace gradsync::models
