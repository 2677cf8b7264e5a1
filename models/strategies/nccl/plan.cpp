#include "models/strategies/nccl/plan.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <mutex>
#include <map>
#include <set>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "models/strategies/nccl/system.h"
#include "models/topology/hardware.h"
#include "models/topology/matrix_inference.h"
#include "models/topology/topology.h"
#include "models/support/error.h"
#include "models/support/format.h"

namespace gradsync::models::nccl {

namespace {

constexpr int kMaxCommChannels = 64;  // device.h MAXCHANNELS

// A P2P pair's bidirectional figure over what its two directions get alone, on the published hosts
// that measured it (p2pBandwidthLatencyTest): 0.90 - 0.99 between the sockets of a dual-EPYC
// 8 x RTX 4090 host, 0.96 - 0.99 on the 4 x RTX 4090 hosts, 0.98 - 1.00 under the RTX 5090 host's
// switches. Where nothing measured it, its least is the other value of the open fact.
constexpr double kP2pDuplexShareLow = 0.90;

std::size_t find_root(std::vector<std::size_t>& parent, std::size_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

// A host's shape: its System's fields as bytes (each value exactly; the text of the doubles was
// a tenth of an 8,192-GPU prediction), so that hosts alike share one search.
std::string signature(const System& s) {
  std::string out;
  auto put = [&out](const auto& value) { out.append(reinterpret_cast<const char*>(&value), sizeof value); };
  for (const SysNode& n : s.nodes()) {
    put(n.type);
    put(n.cc);
    put(n.gdr);
    put(n.net_bw);
    put(n.coll);
    put(n.vendor.size());
    out += n.vendor;
    put(n.links.size());
    for (const SysLink& l : n.links) {
      put(l.to);
      put(l.type);
      put(l.bw);
    }
  }
  return out;
}

// One graph NCCL searches for a host, on a fresh copy of it (the search takes bandwidth from
// the links it uses). A host's shape (`shape`: its signature) and the search's arguments decide
// the graph, so the plans that differ in a fact other searches do not see (NVLink SHARP off
// leaves the ring and the tree as they were) share them; the last few are kept.
Graph searched(const System& system, const std::string& shape, Pattern pattern, int min_channels, int max_channels, bool inter,
               bool collnet = false) {
  static std::mutex mutex;
  static std::deque<std::pair<std::string, Graph>> kept;
  constexpr std::size_t kKept = 32;
  const std::string key = shape + '/' + std::to_string(static_cast<int>(pattern)) + '/' + std::to_string(min_channels) + '/' +
                          std::to_string(max_channels) + '/' + std::to_string(inter) + '/' + std::to_string(collnet);
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& [k, g] : kept) {
      if (k == key) return g;
    }
  }
  System copy = system;
  Graph g = compute_graph(copy, pattern, min_channels, max_channels, inter, collnet);
  std::lock_guard<std::mutex> lock(mutex);
  kept.emplace_back(key, g);
  if (kept.size() > kKept) kept.pop_front();
  return g;
}

// Every graph NCCL searches for a host (init.cc: ring, then the tree with the ring's channel
// count, CollNet when enabled, NVLS where supported).
Comm search_host(const System& system, const std::string& shape, bool inter, bool nvls, bool collnet) {
  Comm c;
  c.ring = searched(system, shape, Pattern::ring, 1, kMaxCommChannels / 2, inter);
  c.tree = searched(system, shape, Pattern::balanced_tree, c.ring.n_channels, c.ring.n_channels, inter);
  if (collnet) {
    c.collnet_chain = searched(system, shape, Pattern::tree, c.ring.n_channels, c.ring.n_channels, inter, true);
    c.collnet_direct = searched(system, shape, Pattern::collnet_direct, 1, kMaxCommChannels, inter, true);
  }
  if (nvls) c.nvls = searched(system, shape, Pattern::nvls, 1, kMaxCommChannels, inter);
  return c;
}

// The communicator's view of a graph: minima of channels and bandwidths, maxima of path types
// over the hosts (init.cc after AllGather3).
void agree(Graph& into, const Graph& host, bool first) {
  if (first) {
    into = host;
    return;
  }
  into.n_channels = std::min(into.n_channels, host.n_channels);
  into.same_channels = std::min(into.same_channels, host.same_channels);
  into.bw_intra = std::min(into.bw_intra, host.bw_intra);
  into.bw_inter = std::min(into.bw_inter, host.bw_inter);
  into.type_intra = std::max(into.type_intra, host.type_intra);
  into.type_inter = std::max(into.type_inter, host.type_inter);
  into.cross_nic = std::max(into.cross_nic, host.cross_nic);
  into.pattern = static_cast<Pattern>(std::max(static_cast<int>(into.pattern), static_cast<int>(host.pattern)));
}

}  // namespace

std::int32_t Plan::host_nic(std::size_t host, int index) const {
  if (host >= host_nics.size() || index < 0 || static_cast<std::size_t>(index) >= host_nics[host].size()) return -1;
  const std::vector<std::size_t>& rails = host_nics[host][static_cast<std::size_t>(index)];
  return rails.empty() ? -1 : static_cast<std::int32_t>(rails.front());
}

double Plan::algorithm_GBps() const {
  const double rest_us = choice.time_us - latency_us();
  return rest_us > 0 ? bytes / (1000.0 * rest_us) : 0.0;
}

std::vector<std::vector<int>> hosts_of(const Topology& t, const std::vector<std::size_t>& gpus) {
  // Nodes joined by links that do not touch a network switch form one host.
  std::vector<std::size_t> parent(t.node_count());
  std::iota(parent.begin(), parent.end(), std::size_t{0});
  for (const Link& l : t.links()) {
    if (t.node(l.a).kind == NodeKind::net_switch || t.node(l.b).kind == NodeKind::net_switch) continue;
    const std::size_t a = find_root(parent, l.a), b = find_root(parent, l.b);
    if (a != b) parent[a] = b;
  }
  std::vector<std::vector<int>> hosts;
  std::map<std::size_t, std::size_t> index;
  for (std::size_t r = 0; r < gpus.size(); ++r) {
    const std::size_t root = find_root(parent, gpus[r]);
    auto [it, added] = index.emplace(root, hosts.size());
    if (added) hosts.emplace_back();
    hosts[it->second].push_back(static_cast<int>(r));
  }
  return hosts;
}

std::optional<std::size_t> nvswitch_of(const Topology& t, std::size_t gpu) {
  for (std::size_t i : t.incident_links(gpu)) {  // the GPU's own links, not every link of a cluster
    const Link& l = t.links()[i];
    const std::size_t other = l.a == gpu ? l.b : l.a;
    if (t.node(other).kind == NodeKind::nvswitch) return other;
  }
  return std::nullopt;
}

std::vector<std::string> nvls_algorithms(const Topology& t, const std::vector<std::size_t>& gpus) {
  if (gpus.size() < 2) return {};
  const std::vector<std::vector<int>> hosts = hosts_of(t, gpus);
  for (const std::vector<int>& host : hosts) {
    // nvls.cc ncclNvlsInit: no NVLS where a node has fewer than two of the GPUs.
    if (host.size() < 2 || !nvswitch_of(t, gpus[static_cast<std::size_t>(host.front())])) return {};
  }
  for (std::size_t g : gpus) {
    const hardware::GpuModel* model = hardware::find_gpu_model(t.node(g).facts.gpu_model);
    if (!model) model = hardware::gpu_model_of(t.description());
    if (!model || model->compute_capability < 90) return {};
  }
  return {hosts.size() == 1 ? "NVLS" : "NVLSTree"};  // NVLS across hosts: NCCL's pick with CollNet, not forced here
}

std::vector<std::string> collnet_algorithms(const Topology& t, const std::vector<std::size_t>& gpus) {
  const std::vector<std::vector<int>> hosts = hosts_of(t, gpus);
  if (hosts.size() < 2 || t.nodes_of_kind(NodeKind::nic).empty()) return {};
  bool nvswitch = true;
  for (const std::vector<int>& host : hosts) {
    if (host.size() > 8) return {};  // enqueue.cc: NCCL_MAX_DIRECT_ARITY + 1 GPUs a host at most
    nvswitch = nvswitch && nvswitch_of(t, gpus[static_cast<std::size_t>(host.front())]).has_value();
  }
  if (!nvswitch) return {"CollnetChain"};
  return {"CollnetChain", "CollnetDirect"};
}

namespace {

// NCCL sees a host as sysfs shows it (what nvidia-smi topo -m prints), with its own nominal
// rates, not as measured rates explain it: where a topology was inferred from measurements that
// came with topo -m classes, NCCL's view is the topology those classes give at NCCL's rates (the
// one topo -m alone imports to), whose GPUs have the same ids. Kept for the last few topologies.
std::shared_ptr<const Topology> classes_view(const Topology& t) {
  const auto& m = t.measured();
  if (!m || !m->topo_classes || m->nominal) return nullptr;
  static std::mutex mutex;
  static std::deque<std::pair<std::string, std::shared_ptr<const Topology>>> kept;
  std::ostringstream key;
  key << static_cast<const void*>(&t) << '|' << t.name() << '|' << t.node_count() << '|' << t.links().size();
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& [k, view] : kept) {
      if (k == key.str()) return view;
    }
  }
  MatrixForm form;
  form.name = m->name;
  form.description = m->description;
  form.source = m->source;
  form.gpus = m->gpus;
  form.topo_classes = m->topo_classes;
  form.p2p_supported = m->p2p_supported;
  const hardware::GpuModel* model = hardware::gpu_model_of(m->description);
  std::string cpu;
  for (const Node& n : t.nodes()) {
    if (cpu.empty() && !n.facts.cpu_vendor.empty()) cpu = n.facts.cpu_vendor;
  }
  NominalRates rates;
  rates.pcie_Bps = hardware::pcie_GBps(model ? model->pcie_gen : 4, model ? model->lanes : 16) * 1e9;
  rates.inter_socket_Bps = hardware::inter_socket_GBps(cpu) * 1e9;
  rates.nvlink_Bps_per_link = hardware::nvlink_GBps_per_link(model ? model->compute_capability : 80) * 1e9;
  rates.basis = "NCCL's view of the topo -m classes";
  const std::size_t n = form.size();
  form.bandwidth_Bps = PairMatrix(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i != j) form.bandwidth_Bps.at(i, j) = nominal_pair_Bps(rates, (*form.topo_classes)[i][j]);
    }
  }
  form.nominal = rates;
  std::shared_ptr<const Topology> view;
  try {
    view = std::make_shared<const Topology>(infer_topology(form).topology);
  } catch (const InputError&) {
    return nullptr;  // classes that build no topology: NCCL's view stays the measured one
  }
  std::lock_guard<std::mutex> lock(mutex);
  kept.emplace_back(key.str(), view);
  if (kept.size() > 8) kept.pop_front();
  return view;
}

// The latency the network plugin reports, on every graph of `comm` (NCCL adds it to each step
// between hosts).
void set_latency_inter(Comm& comm, double us) {
  for (Graph* g : {&comm.ring, &comm.tree, &comm.collnet_chain, &comm.collnet_direct, &comm.nvls}) g->latency_inter = us;
}

// Everything of the plan but the size's choice: the searches, the communicator, the costs.
Plan search_plan(const Topology& t, const std::vector<std::size_t>& gpus, const PlanOptions& o) {
  Plan plan;
  plan.hosts = hosts_of(t, gpus);
  plan.rank_host.assign(gpus.size(), -1);
  plan.rank_local.assign(gpus.size(), -1);
  for (std::size_t h = 0; h < plan.hosts.size(); ++h) {
    for (std::size_t k = 0; k < plan.hosts[h].size(); ++k) {
      plan.rank_host[static_cast<std::size_t>(plan.hosts[h][k])] = static_cast<int>(h);
      plan.rank_local[static_cast<std::size_t>(plan.hosts[h][k])] = static_cast<int>(k);
    }
  }
  const int nodes = static_cast<int>(plan.hosts.size());
  const bool inter = nodes > 1;

  // The facts the search needs that the topology may leave open.
  bool nic_gdr_stated = true, nic_sharp = true, nic_sharp_ok = true, any_nic = false;
  std::optional<bool> nvswitch_sharp;
  bool cpu_stated = !o.cpu_vendor.empty();
  std::optional<bool> vm = o.vm;  // the user's, else the hosts'
  bool host_nodes = false, vm_stated_everywhere = true, vm_somewhere = false;
  bool fused_ports = false;  // a NIC's ports NCCL drives as one device, which releases before 2.20 would not
  bool vm_could_matter = false;  // GPUDirect RDMA between a GPU and a NIC that a VM's ACS would divert
  // The fabric's routing: the user's, else the NICs' (static where one NIC says so, adaptive
  // where every NIC says so; unset otherwise).
  std::optional<bool> adaptive_routing = o.adaptive_routing;
  bool ar_stated_everywhere = true, ar_static_somewhere = false;
  for (const Node& n : t.nodes()) {
    if (n.kind == NodeKind::nic) {
      any_nic = true;
      if (n.facts.ports > 1 && ports_per_device(n.facts.link_layer, o.nccl_version) != ports_per_device(n.facts.link_layer, 21900)) {
        fused_ports = true;
      }
      if (!n.facts.gpudirect) nic_gdr_stated = false;
      if (!n.facts.sharp.value_or(false)) nic_sharp = false;             // every NIC says its network reduces
      if (n.facts.sharp && !*n.facts.sharp) nic_sharp_ok = false;        // a NIC says it does not
      if (!n.facts.adaptive_routing) ar_stated_everywhere = false;
      if (n.facts.adaptive_routing && !*n.facts.adaptive_routing) ar_static_somewhere = true;
    }
    if (n.kind == NodeKind::nvswitch && n.facts.sharp) nvswitch_sharp = n.facts.sharp;
    if ((n.kind == NodeKind::cpu_socket || n.kind == NodeKind::root_complex) && !n.facts.cpu_vendor.empty()) cpu_stated = true;
    if (n.kind == NodeKind::cpu_socket || n.kind == NodeKind::root_complex) {
      host_nodes = true;
      if (!n.facts.vm) vm_stated_everywhere = false;
      if (n.facts.vm.value_or(false)) vm_somewhere = true;
    }
  }
  // One host stated a VM without ATS makes the fact so for the communicator (its slowest path);
  // bare metal only where every host says so.
  if (!vm && vm_somewhere) vm = true;
  if (!vm && host_nodes && vm_stated_everywhere) vm = false;
  if (!adaptive_routing && ar_static_somewhere) adaptive_routing = false;
  if (!adaptive_routing && any_nic && ar_stated_everywhere) adaptive_routing = true;

  const std::shared_ptr<const Topology> view = classes_view(t);
  SystemOptions so;
  so.cpu_vendor = o.cpu_vendor;
  so.gdr_level = o.gdr_level;
  so.nic_reduces = o.collnet;
  so.gdr = o.gpudirect ? (*o.gpudirect ? 1 : 0) : -1;
  const hardware::GpuModel* model = hardware::find_gpu_model(t.node(gpus.front()).facts.gpu_model);
  if (!model) model = hardware::gpu_model_of(t.description());
  if (model) {
    so.cc = model->compute_capability;
    so.pcie_GBps = hardware::pcie_GBps(model->pcie_gen, model->lanes);
    // A module that carries its CPU (GH200: Grace) says what the host's CPU is.
    if (!cpu_stated && model->cpu_vendor) {
      so.cpu_vendor = model->cpu_vendor;
      cpu_stated = true;
    }
  }

  // Each host's system; hosts alike share their search.
  std::map<std::string, int> shape_of;
  std::vector<System> systems;
  std::vector<std::string> shapes;  // each system's signature
  bool nvswitch_everywhere = true;
  int cc_min = 0, cc_max = 0;
  std::string vendor;
  bool version_matters = false, peer_matters = false, duplex_open = false;
  for (std::size_t h = 0; h < plan.hosts.size(); ++h) {
    std::vector<std::size_t> host_gpus;
    for (int r : plan.hosts[h]) host_gpus.push_back(gpus[static_cast<std::size_t>(r)]);
    const Topology* seen = &t;
    if (view) {
      std::vector<std::size_t> mapped;
      for (std::size_t g : host_gpus) {
        if (const auto found = view->find(t.node(g).id)) mapped.push_back(*found);
      }
      if (mapped.size() == host_gpus.size()) {
        seen = view.get();
        host_gpus = std::move(mapped);
      }
    }
    SystemOptions options = so;
    // NCCL_P2P_LEVEL, else NCCL's default for the CPU, the GPU count and the version (System).
    options.p2p_level = o.p2p_level;
    options.nccl_version = o.nccl_version;
    options.peer_access = o.peer_access;
    System system(*seen, host_gpus, options, false);
    std::vector<std::vector<std::size_t>>& nics = plan.host_nics.emplace_back();
    if (seen == &t) {
      for (int net : system.of_type(NodeType::net)) nics.push_back(system.nodes()[static_cast<std::size_t>(net)].rails);
    }
    const std::string key = signature(system) + ':' + system.pair_facts() + ':' + std::to_string(system.p2p_level()) + ':' + std::to_string(system.gdr_level()) +
                            ':' + std::to_string(system.pxn());
    auto [it, added] = shape_of.emplace(key, static_cast<int>(systems.size()));
    if (added) {
      system.complete();
      // Facts of the host NCCL would decide otherwise under another value: NCCL's version (its
      // default P2P level changed in 2.23), the driver's peer access where no matrix says.
      const int g = system.gpu_count();
      auto p2p_differs = [&](const SystemOptions& other) {
        System alt(*seen, host_gpus, other, true);
        for (int a = 0; a < g; ++a) {
          for (int b = 0; b < g; ++b) {
            if (a != b && alt.p2p(a, b) != system.p2p(a, b)) return true;
          }
        }
        return false;
      };
      if (!o.nccl_version_stated && o.p2p_level < 0 && !version_matters) {
        SystemOptions other = options;
        other.nccl_version = o.nccl_version >= 22300 ? 22200 : kNcclVersion;
        version_matters = p2p_differs(other);
      }
      if (!system.peer_access_stated() && o.peer_access < 0 && !peer_matters) {
        SystemOptions other = options;
        other.peer_access = 0;
        peer_matters = p2p_differs(other);
      }
      // Peer-to-peer copies over PCIe whose two directions at once no measurement of these GPUs
      // saw (a bidirectional figure, or flows probed at once): the links' duplex is open.
      if (!duplex_open) {
        const auto& m = t.measured();  // the measured topology's (NCCL's view of topo -m classes measured nothing)
        const bool duplex_measured = m && (m->bidirectional_Bps || !m->concurrent_probes.empty());
        for (int a = 0; a < g && !duplex_measured && !duplex_open; ++a) {
          for (int b = 0; b < g; ++b) {
            if (a != b && system.p2p(a, b) && system.gpu_path_type(a, b) > kPathNvb) duplex_open = true;
          }
        }
      }
      systems.push_back(std::move(system));
      shapes.push_back(key);
    }
    plan.host_shape.push_back(it->second);
    const System& s = systems[static_cast<std::size_t>(it->second)];
    if (h == 0) {
      HostFacts& f = plan.host;
      f.gpus = s.gpu_count();
      f.nics = s.net_count();
      std::set<std::size_t> cards;  // the NICs, an EFA device's rails each
      for (int net : s.of_type(NodeType::net)) {
        const std::vector<std::size_t>& rails = s.nodes()[static_cast<std::size_t>(net)].rails;
        cards.insert(rails.begin(), rails.end());
      }
      for (std::size_t nic : cards) {
        f.nic_cards += 1;
        f.nic_ports += std::max(1, seen->node(nic).facts.ports);
      }
      f.sockets = static_cast<int>(s.of_type(NodeType::cpu).size());
      f.cpu_vendor = s.cpu_vendor();
      f.nvswitch = s.has_nvswitch();
      for (int n = 0; n < s.net_count() && !f.gdr; ++n) f.gdr = s.gdr(0, n);
      f.p2p_level = s.p2p_level();
      f.gdr_level = s.gdr_level();
      for (const Node& n : t.nodes()) {
        if (n.kind == NodeKind::nic && !n.facts.link_layer.empty()) {
          f.link_layer = n.facts.link_layer;
          break;
        }
      }
    }
    nvswitch_everywhere = nvswitch_everywhere && s.has_nvswitch();
    for (int g : s.of_type(NodeType::gpu)) {
      const int c = s.nodes()[static_cast<std::size_t>(g)].cc;
      cc_min = cc_min == 0 ? c : std::min(cc_min, c);
      cc_max = std::max(cc_max, c);
    }
    if (vendor.empty()) vendor = s.cpu_vendor();
    for (int n : s.of_type(NodeType::net)) {
      const double rate = s.nodes()[static_cast<std::size_t>(n)].net_bw;
      if (rate > 0) plan.nic_GBps = plan.nic_GBps > 0 ? std::min(plan.nic_GBps, rate) : rate;
    }
    // A VM's ACS sends GPUDirect RDMA between a GPU and a NIC on PCIe switches through the root
    // complex; one over the GPU's NVLink-C2C to the CPU the NIC sits on (P2C) goes that way anyway.
    for (int r = 0; r < s.gpu_count() && inter && s.net_count() > 0; ++r) {
      const int net = s.local_net(r, 0);
      if (net < 0 || !s.gdr(r, net)) continue;
      const int type = s.path(s.gpu(r), s.net(net)).type;
      if (type < kPathPhb && type != kPathP2c) vm_could_matter = true;
      if (plan.gdr_through_cpu) continue;
      plan.gdr_through_cpu = type >= kPathPhb || (vm.value_or(false) && type != kPathP2c);
      plan.gdr_through_vm = plan.gdr_through_cpu && type < kPathPhb;
    }
  }

  // The NICs' network plugin, by their kind. Whether the NICs' provider reaches GPU memory (FI_HMEM:
  // the NICs' GPUDirect RDMA fact, or the user's), whatever GDR level NCCL then keeps it to.
  bool provider_gdr = false;
  for (const System& s : systems) {
    for (int n : s.of_type(NodeType::net)) provider_gdr = provider_gdr || s.nodes()[static_cast<std::size_t>(n)].gdr;
  }
  plan.net = any_nic ? net_plugin_of(plan.host.link_layer, provider_gdr, o.net_latency_us) : NetPlugin{};

  // NVLink SHARP: NCCL_NVLS_ENABLE's default uses it where the GPUs (Hopper on) and the
  // NVSwitch offer multicast; the topology may say, else it is assumed. A plugin's environment
  // that sets NCCL_NVLS_ENABLE=0 (TCPXO's) turns it off.
  // nvls.cc ncclNvlsInit: no NVLS where a process's node has fewer than two of the GPUs.
  std::size_t fewest_local = gpus.size();
  for (const auto& host : plan.hosts) fewest_local = std::min(fewest_local, host.size());
  const bool nvls_hardware = nvswitch_everywhere && cc_min >= 90 && fewest_local >= 2;
  bool nvls = false;
  if (nvls_hardware) {
    if (o.nvls) {
      nvls = *o.nvls;
    } else if (plan.net.nvls_off) {
      nvls = false;
    } else if (nvswitch_sharp) {
      nvls = *nvswitch_sharp;
    } else {
      nvls = true;
      PlanOptions off = o;
      off.nvls = false;
      plan.assumed.push_back({"NVLink SHARP", "on (NVSwitch with Hopper or later GPUs: NCCL uses NVLS where the switch offers multicast)", "off",
                              off});
    }
  }
  // CollNet: asked for (NCCL_COLLNET_ENABLE=1), across two nodes or more, with NICs whose
  // network reduces (SHARP). A network that does not reduce (a NIC's fact says so), or is reached
  // through a plugin without NCCL's CollNet API, has no CollNet; where the NICs do not say, asking
  // for CollNet assumes it, and the range says what it is worth. CollNet takes at most 8 GPUs a
  // host (enqueue.cc, NCCL_MAX_DIRECT_ARITY + 1).
  std::size_t most_local = 0;
  for (const auto& host : plan.hosts) most_local = std::max(most_local, host.size());
  const bool collnet = o.collnet && inter && any_nic && nic_sharp_ok && plan.net.collnet && most_local <= 8;
  if (collnet && !nic_sharp) {
    PlanOptions off = o;
    off.collnet = false;
    plan.assumed.push_back({"SHARP in the network", "on (collnet=on asked for it; the NICs do not say)", "off", off});
  }
  if (inter && any_nic && !nic_gdr_stated && !o.gpudirect) {
    PlanOptions off = o;
    off.gpudirect = false;
    plan.assumed.push_back({"GPUDirect RDMA", "on (nvidia-peermem loaded: NCCL's default where GPU and NIC are close)", "off", off});
  }
  // Whether the hosts are virtual machines without PCIe ATS, where GPUDirect RDMA runs peer to
  // peer (a VM's ACS would send it through the root complex, as a host bridge between GPU and NIC
  // does: gdr_cpu_share).
  if (inter && any_nic && !vm.has_value() && plan.host.gdr && !plan.gdr_through_cpu && vm_could_matter) {
    PlanOptions other = o;
    other.vm = true;
    plan.assumed.push_back({"virtual machine", "no (bare metal, or a VM whose PCIe ATS keeps GPUDirect RDMA peer to peer)",
                            "yes, without ATS (PCIe ACS sends GPUDirect RDMA through the CPU's root complex)", other});
  }
  // NCCL's release as an open fact: `says` what the release assumed does, `other` another release
  // and what it does instead.
  auto version_fact = [&](int version, const std::string& says, const std::string& other_says) {
    PlanOptions other = o;
    other.nccl_version_stated = true;
    other.nccl_version = version;
    const std::string assumed = nccl_version_text(o.nccl_version);
    plan.assumed.push_back({"NCCL version", assumed.substr(0, assumed.rfind('.')) + " (" + says + ")", other_says, other});
  };
  if (version_matters) {
    const bool newer = o.nccl_version >= 22300;
    const std::string since = "P2P up to PXB, or SYS between the two GPUs of an AMD host";
    const std::string before = "P2P up to SYS, PXB with Intel or ARM CPUs";
    version_fact(newer ? 22200 : kNcclVersion, newer ? since : before, newer ? "2.22 (" + before + ")" : "2.30 (" + since + ")");
  }
  if (inter && fused_ports && !o.nccl_version_stated) {
    version_fact(21900, "a NIC's ports fused into one device, as from 2.20", "2.19 (each port of a NIC a device of its own)");
  }
  // NVLink-C2C (a GH200's GPU to its CPU, where the NICs sit): NCCL sees it from 2.26; before, the
  // NIC is PHB from its GPU and GPUDirect RDMA off at NCCL's default level.
  if (inter && any_nic && !o.nccl_version_stated && o.nccl_version >= kC2cSince &&
      std::any_of(t.links().begin(), t.links().end(), [](const Link& l) { return is_c2c_link(l); })) {
    version_fact(22500, "NVLink-C2C seen: the NIC on the GPU's own CPU is P2C, GPUDirect RDMA on",
                 "2.25 (NVLink-C2C not seen: that NIC is PHB from the GPU, GPUDirect RDMA off at NCCL's default level)");
  }
  if (peer_matters) {
    PlanOptions other = o;
    other.peer_access = 0;
    plan.assumed.push_back({"peer access off NVLink", "allowed (no P2P connectivity matrix says otherwise)",
                            "refused by the driver (SHM through host memory)", other});
  }
  // Both directions of a PCIe route at once (a ring's hops cross each GPU's link out and in):
  // PCIe is full duplex, but where the route crosses the CPUs' link or root complexes the two
  // directions of peer-to-peer writes may interfere; only a bidirectional measurement tells.
  if (duplex_open && plan.hosts.size() == 1) {
    plan.p2p_duplex_share = o.p2p_duplex_share;
    if (o.p2p_duplex_share >= 1) {
      PlanOptions other = o;
      other.p2p_duplex_share = kP2pDuplexShareLow;
      plan.assumed.push_back({"both directions at once over PCIe peer to peer",
                              "full duplex (each direction at what it gets alone: no bidirectional figure was measured)",
                              format_fixed(kP2pDuplexShareLow, 2) + " of that each way (the least a published host's P2P pair measured)",
                              other});
    }
  }
  if (inter && any_nic && plan.host.link_layer == "efa" && o.net_latency_us < 0) {
    for (const double us : {kEfaLatencyLowUs, kEfaLatencyHighUs}) {
      PlanOptions other = o;
      other.net_latency_us = us;
      plan.assumed.push_back({"EFA plugin latency", format_fixed(kEfaLatencyUs, 0) + " us (aws-ofi-nccl's figure for p4d and p5, and its default)",
                              format_fixed(us, 0) + " us" + (us < kEfaLatencyUs ? " (p5en, p6)" : " (p3dn)"), other});
    }
  }
  if (!cpu_stated) {
    PlanOptions amd = o;
    amd.cpu_vendor = "amd";
    plan.assumed.push_back({"CPU vendor", "not AMD (NCCL's x86 default latencies)", "AMD", amd});
  }

  // The searches, one per host shape; and how its ranks reach each other.
  for (std::size_t k = 0; k < systems.size(); ++k) {
    plan.shapes.push_back(search_host(systems[k], shapes[k], inter, nvls, collnet));
    const System& s = systems[k];
    HostLinks l;
    l.ranks = s.gpu_count();
    for (int a = 0; a < l.ranks; ++a) {
      for (int b = 0; b < l.ranks; ++b) {
        l.p2p.push_back(a == b || s.p2p(a, b) ? 1 : 0);
        l.path.push_back(s.gpu_path_type(a, b));
      }
    }
    plan.links.push_back(std::move(l));
  }
  plan.nccl_version = o.nccl_version;

  Comm& comm = plan.comm;
  comm.ranks = static_cast<int>(gpus.size());
  comm.nodes = nodes;
  comm.cc_min = cc_min == 0 ? so.cc : cc_min;
  comm.cc_max = cc_max == 0 ? so.cc : cc_max;
  comm.cpu_vendor = vendor.empty() ? o.cpu_vendor : vendor;
  comm.nccl_version = o.nccl_version;
  comm.nvswitch = nvswitch_everywhere;
  for (std::size_t h = 0; h < plan.hosts.size(); ++h) {
    const Comm& shape = plan.shapes[static_cast<std::size_t>(plan.host_shape[h])];
    const bool first = h == 0;
    agree(comm.ring, shape.ring, first);
    agree(comm.tree, shape.tree, first);
    agree(comm.collnet_chain, shape.collnet_chain, first);
    agree(comm.collnet_direct, shape.collnet_direct, first);
    agree(comm.nvls, shape.nvls, first);
    comm.max_tree_pattern = std::max(comm.max_tree_pattern, static_cast<int>(shape.tree.pattern));
  }
  comm.ring.n_channels = comm.tree.n_channels = std::min(comm.ring.n_channels, comm.tree.n_channels);
  comm.nvls_support = nvls && comm.nvls.n_channels > 0;
  comm.collnet_enable = collnet && comm.collnet_chain.n_channels > 0;
  // ncclTopoPostset: rings doubled; on Hopper across nodes doubled again while fewer than 16
  // with fast NVLink; then NCCL_MIN_CTAS / NCCL_MAX_CTAS.
  int channels = std::min(kMaxCommChannels, 2 * comm.ring.n_channels);
  if (comm.collnet_enable && comm.collnet_chain.bw_intra > comm.collnet_chain.bw_inter && comm.ranks > comm.nodes) {
    channels = std::min(kMaxCommChannels, channels + channels / 2);
  }
  if (comm.cc_min >= 90 && inter && comm.ring.bw_intra > 45.0 && channels < 16) channels *= 2;
  if (o.max_ctas > 0) channels = std::min(channels, o.max_ctas);
  channels = std::max(channels, std::min(o.min_ctas > 0 ? o.min_ctas : plan.net.min_channels, kMaxCommChannels));
  comm.channels = channels;
  // Static routing between the hosts (plan.h: static_routing): NCCL's own IB transport only (an
  // OFI or TCPXO plugin, and plain sockets, have no queue pairs of NCCL's), and only where queue
  // pairs from different NICs cross the fabric one way: not between two hosts of one NIC each,
  // whose one port each way carries every queue pair anyway. An open fact where too few queue
  // pairs leave a NIC for `net_flow_share` of it each to fill it.
  const bool ib_transport = inter && any_nic && plan.net.name.empty() &&
                            (plan.host.link_layer.empty() || plan.host.link_layer == "infiniband" || plan.host.link_layer == "roce");
  const bool paths_shared = nodes > 2 || plan.host.nics > 1;
  plan.ib_qps = o.ib_qps;
  plan.static_routing = ib_transport && paths_shared && !adaptive_routing.value_or(false);
  plan.adaptive_routing = ib_transport && paths_shared && adaptive_routing.value_or(false);
  // (The ring's channels over the NICs they leave by: at most one NIC a channel.)
  const double flows_per_nic = static_cast<double>(channels) * o.ib_qps / std::max(1, std::min(plan.host.nics, channels));
  if (plan.static_routing && !adaptive_routing.has_value() && flows_per_nic * o.net_flow_share < 1.0) {
    PlanOptions other = o;
    other.adaptive_routing = true;
    plan.assumed.push_back({"adaptive routing in the fabric",
                            "no (each queue pair keeps to one path: " + format_fixed(flows_per_nic, flows_per_nic == std::floor(flows_per_nic) ? 0 : 1) + " a NIC, " +
                                format_fixed(o.net_flow_share, 2) + " of it each at most)",
                            "yes (every queue pair at the NIC's rate)", other});
  }
  // NVLS compute channels (nvls.cc ncclNvlsTuning): 16 on Hopper, 32 / 24 on Blackwell.
  plan.nvls_channels = comm.cc_min >= 100 ? (inter ? 32 : 24) : 16;
  if (o.min_ctas > 0 || o.max_ctas > 0) {
    plan.nvls_channels = std::max(o.min_ctas > 0 ? o.min_ctas : 1, std::min(o.max_ctas > 0 ? o.max_ctas : kMaxCommChannels, plan.nvls_channels));
  }
  comm.forced_algorithm = o.forced_algorithm;
  comm.forced_protocol = o.forced_protocol;
  // The NICs' plugin (chosen above): the latency it reports on every graph that leaves the host,
  // and the NCCL_PROTO and NCCL_ALGO its environment sets (unless the user chose).
  comm.allowed_algorithms = plan.net.allowed_algorithms;
  if (inter) {
    set_latency_inter(comm, plan.net.latency_us);
  }
  if (plan.net.simple_only && comm.forced_protocol < 0) comm.forced_protocol = kSimple;

  plan.collective = o.collective;
  plan.costs = tune(comm, o.collective);
  plan.kernel_costs = plan.costs;
  if ((inter && plan.net.latency_us > 0) || comm.nccl_version != kNcclVersion) {  // plan.h: kernel_costs
    Comm kernels = comm;
    set_latency_inter(kernels, 0);
    kernels.nccl_version = kNcclVersion;
    plan.kernel_costs = tune(kernels, o.collective);
  }
  return plan;
}

}  // namespace

namespace {

// The NIC kinds NCCL reaches through a network plugin, each with the plugin and what it and the
// environment its vendor ships beside it set. aws-ofi-nccl (EFA, and Slingshot through libfabric's
// cxi provider): Simple only where the provider cannot reach GPU memory; on EFA the latency its
// platform file reports and, with GPUDirect, the buffers platform-aws.cpp sets. FasTrak (GCP's
// GPUDirect-TCPXO): nccl-env-profile.sh, which its guest config checker enforces: NCCL_PROTO=Simple,
// NCCL_ALGO=Ring,Tree, NCCL_NVLS_ENABLE=0, NCCL_MIN_NCHANNELS=4, NCCL_BUFFSIZE 8 MiB,
// NCCL_P2P_NET_CHUNKSIZE 512 KiB.
struct PluginProfile {
  const char* kind;
  const char* name;
  double latency_us;         // what the plugin reports (0: NCCL's own figure)
  bool simple_only;          // always
  bool simple_without_gdr;   // where GPUDirect RDMA is off
  const char* algorithms;    // NCCL_ALGO ("": not set)
  bool nvls_off;
  int min_channels;
  bool buffers_with_gdr_only;
  double buffer_bytes, p2p_chunk_bytes;
};
constexpr PluginProfile kPlugins[] = {
    {"efa", "aws-ofi-nccl", kEfaLatencyUs, false, true, "", false, 0, true, 8388608, 524288},
    {"slingshot", "aws-ofi-nccl", 0, false, true, "", false, 0, false, 0, 0},
    {"tcpxo", "FasTrak", 0, true, false, "Ring,Tree", true, 4, false, 8388608, 524288},
};

}  // namespace

NetPlugin net_plugin_of(const std::string& kind, bool gpudirect, double latency_us) {
  NetPlugin p;
  const auto* profile = std::find_if(std::begin(kPlugins), std::end(kPlugins), [&](const PluginProfile& f) { return kind == f.kind; });
  if (profile == std::end(kPlugins)) {
    if (latency_us > 0) p.latency_us = latency_us;
    return p;
  }
  p.name = profile->name;
  p.latency_us = latency_us >= 0 ? latency_us : profile->latency_us;
  p.simple_only = profile->simple_only || (profile->simple_without_gdr && !gpudirect);
  p.algorithms = profile->algorithms;
  if (!p.algorithms.empty()) {
    p.allowed_algorithms = 0;
    std::istringstream names(p.algorithms);
    for (std::string name; std::getline(names, name, ',');) {
      const int algorithm = algorithm_from_name(name);
      // kPlugins is ours, not the user's: a name NCCL does not have is a mistake in the table.
      if (algorithm < 0) {
        throw std::logic_error("kPlugins: " + std::string(profile->kind) + " names algorithm \"" + name +
                               "\", which NCCL does not have");
      }
      p.allowed_algorithms |= 1U << algorithm;
    }
  }
  p.nvls_off = profile->nvls_off;
  p.collnet = false;  // every plugin of the table offers NCCL's network API alone
  p.min_channels = profile->min_channels;
  if (gpudirect || !profile->buffers_with_gdr_only) {
    p.buffer_bytes = profile->buffer_bytes;
    p.p2p_chunk_bytes = profile->p2p_chunk_bytes;
  }
  return p;
}

namespace {

// What identifies a search: the topology (by address and shape: a topology lives as long as the
// requests on it), the ranks' GPUs, and every option.
std::string search_key(const Topology& t, const std::vector<std::size_t>& gpus, const PlanOptions& o) {
  std::ostringstream k;
  k << static_cast<const void*>(&t) << '|' << t.name() << '|' << t.node_count() << '|' << t.links().size() << '|' << o.forced_algorithm << ','
    << o.forced_protocol << ',' << o.p2p_level << ',' << o.nccl_version << ',' << o.nccl_version_stated << ',' << o.peer_access << ',' << o.gdr_level << ',' << o.cpu_vendor << ','
    << (o.nvls ? (*o.nvls ? 1 : 0) : -1) << ',' << (o.gpudirect ? (*o.gpudirect ? 1 : 0) : -1) << ',' << (o.vm ? (*o.vm ? 1 : 0) : -1) << ',' << o.collnet << ',' << o.min_ctas << ','
    << o.max_ctas << ',' << static_cast<int>(o.collective) << ',' << o.net_latency_us << ',' << o.p2p_duplex_share << ','
    << o.ib_qps << ',' << (o.adaptive_routing ? (*o.adaptive_routing ? 1 : 0) : -1) << ',' << o.net_flow_share << '|';
  for (std::size_t g : gpus) k << g << ',';
  // The facts NCCL plans with and the links' rates, folded into one number each.
  std::size_t facts = 0;
  double rates = 0;
  for (const Node& n : t.nodes()) {
    const NodeFacts& f = n.facts;
    facts = facts * 31 + std::hash<std::string>{}(f.gpu_model + '/' + f.link_layer + '/' + f.cpu_vendor) +
            static_cast<std::size_t>(f.gpudirect ? 1 + *f.gpudirect : 0) * 7 + static_cast<std::size_t>(f.sharp ? 1 + *f.sharp : 0) * 17 +
            static_cast<std::size_t>(f.vm ? 1 + *f.vm : 0) * 23 + static_cast<std::size_t>(f.ports) * 29 +
            static_cast<std::size_t>(f.adaptive_routing ? 1 + *f.adaptive_routing : 0) * 37;
  }
  std::size_t c2c = 0;  // NVLink-C2C links, which NCCL tells from PCIe
  for (const Link& l : t.links()) {
    rates += l.bandwidth_Bps * static_cast<double>(l.a + 1) + static_cast<double>(l.b);
    c2c += is_c2c_link(l) ? l.a + 1 : 0;
  }
  k << '|' << facts << '|' << rates << '|' << c2c;
  return k.str();
}

}  // namespace

namespace {

// Where no log or user states NCCL's release, the older cost models' choice for this size
// (tuning.cpp: 2.18 - 2.22's, 2.8 - 2.17's), where it differs from the newest's, is an open fact:
// the release then decides the algorithm or protocol. Beside the P2P level's "NCCL version"
// fact where that one is there already.
void add_older_releases(Plan& plan, const PlanOptions& o, double bytes) {
  if (plan.choice.time_us < 0 || o.nccl_version != kNcclVersion) return;
  struct Older {
    int version;
    const char* text;
  };
  for (const Older older : {Older{22200, "2.22 (2.18 - 2.22's cost model)"}, Older{21700, "2.17 (2.8 - 2.17's cost model)"}}) {
    auto is_version = [](const Assumption& a) { return a.fact == "NCCL version"; };
    if (std::any_of(plan.assumed.begin(), plan.assumed.end(),
                    [&](const Assumption& a) { return is_version(a) && a.with_other.nccl_version == older.version; })) {
      continue;  // that release is a value of the fact already
    }
    Comm comm = plan.comm;
    comm.nccl_version = older.version;
    const Choice theirs = choose(comm, tune(comm, plan.collective), plan.collective, bytes);
    if (theirs.algorithm == plan.choice.algorithm && theirs.protocol == plan.choice.protocol) continue;
    PlanOptions other = o;
    other.nccl_version = older.version;
    other.nccl_version_stated = true;
    Assumption fact{"NCCL version", nccl_version_text(o.nccl_version).substr(0, nccl_version_text(o.nccl_version).rfind('.')) +
                                        " (the newest release's cost model)",
                    older.text, other};
    auto at = plan.assumed.end();  // after the fact's other values, said together
    for (auto it = plan.assumed.begin(); it != plan.assumed.end(); ++it) {
      if (is_version(*it)) at = it + 1;
    }
    plan.assumed.insert(at, std::move(fact));
  }
}

}  // namespace

Plan make_plan(const Topology& t, const std::vector<std::size_t>& gpus, double bytes, const PlanOptions& o) {
  // The search does not depend on the size: a sweep over sizes (compare, predict --size a,b,c)
  // searches once. The last few searches are kept.
  static std::mutex mutex;
  static std::deque<std::pair<std::string, std::shared_ptr<const Plan>>> cache;
  constexpr std::size_t kKept = 16;
  const std::string key = search_key(t, gpus, o);
  std::shared_ptr<const Plan> searched;
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& [k, p] : cache) {
      if (k == key) searched = p;
    }
  }
  if (!searched) {
    searched = std::make_shared<const Plan>(search_plan(t, gpus, o));
    std::lock_guard<std::mutex> lock(mutex);
    cache.emplace_back(key, searched);
    if (cache.size() > kKept) cache.pop_front();
  }
  Plan plan = *searched;
  plan.bytes = bytes;
  if (point_to_point(plan.collective)) {
    // enqueue.cc: a message of at most NCCL_P2P_LL_THRESHOLD (16 KiB) goes with LL, a larger one
    // with Simple (or as NCCL_PROTO says: LL or Simple); NCCL prices no point-to-point work, so the
    // time is the launch's base latency (planned.h adds the hops and the bytes).
    const double ranks = std::max<double>(1, static_cast<double>(gpus.size()));
    const double message = plan.collective == Collective::alltoall ? bytes / ranks : bytes;
    const int p = o.forced_protocol == kLL || o.forced_protocol == kSimple ? o.forced_protocol : message <= 16384 ? kLL : kSimple;
    plan.choice = Choice{kRing, p, o.forced_protocol == kLL128 ? -1.0 : base_latency_us(kRing, p)};
    return plan;
  }
  plan.choice = choose(plan.comm, plan.costs, plan.collective, bytes);
  if (!o.nccl_version_stated) add_older_releases(plan, o, bytes);
  return plan;
}

}  // namespace gradsync::models::nccl
