#include "models/strategies/nccl/system.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "models/topology/hardware.h"
#include "models/topology/topology.h"

namespace gradsync::models::nccl {

namespace {

constexpr double kLocBw = 5000.0;  // topo.h LOC_BW

std::size_t ix(NodeType t) { return static_cast<std::size_t>(t); }

// The path type a link starts with (the path types follow the link types: NVL 1, PCI 4 (PIX),
// SYS 9); a NIC's network port counts as local (only the NIC -> GPU side matters).
int link_path_type(LinkType t) {
  switch (t) {
    case LinkType::nvl: return kPathNvl;
    case LinkType::c2c: return kPathC2c;
    case LinkType::pci: return kPathPix;
    case LinkType::sys: return kPathSys;
    case LinkType::net: return kPathLoc;
  }
  return kPathDis;
}

// NVLinks behind a topology link: "nvlink x2" or "nvswitch x18" says; else its bandwidth over one link's rate.
int nvlink_count(const Link& l, int cc) {
  for (const std::string prefix : {"nvlink x", "nvswitch x"}) {
    if (l.label.rfind(prefix, 0) == 0) return std::max(1, std::atoi(l.label.c_str() + prefix.size()));
  }
  const double per_link = hardware::nvlink_physical_GBps_per_link(cc) * 1e9;
  return std::max(1, static_cast<int>(std::lround(l.bandwidth_Bps / per_link)));
}

// aws-ofi-nccl's RDMA protocol (EFA) drives the adapters beside a GPU as one device, a rail each
// (nccl_ofi_topo.cpp, nccl_ofi_topo_group at 2daf7d30): every GPU counts toward its nearest PCIe
// ancestor with NICs below it; each NIC moves up to its nearest ancestor some GPU counts toward,
// and the NICs there are split evenly among those GPUs, the first groups one more where they do
// not divide; a NIC near no GPU is a device of its own. The groups, each in topology order, its
// first the device's PCI place (the leader). `host` the host's nodes, `efa` its EFA adapters.
std::vector<std::vector<std::size_t>> ofi_rail_groups(const Topology& t, const std::vector<std::size_t>& host, const std::vector<std::size_t>& efa) {
  // The PCIe tree: CPUs (else root complexes) at its top, switches below; GPUs and NICs its leaves.
  auto interior = [&](std::size_t u) {
    const NodeKind k = t.node(u).kind;
    return k == NodeKind::pcie_switch || k == NodeKind::root_complex || k == NodeKind::cpu_socket;
  };
  std::unordered_map<std::size_t, int> depth;
  std::deque<std::size_t> queue;
  for (const NodeKind top : {NodeKind::cpu_socket, NodeKind::root_complex}) {
    for (std::size_t u : host) {
      if (t.node(u).kind == top) {
        depth[u] = 0;
        queue.push_back(u);
      }
    }
    if (!queue.empty()) break;
  }
  while (!queue.empty()) {
    const std::size_t u = queue.front();
    queue.pop_front();
    for (std::size_t li : t.incident_links(u)) {
      const std::size_t v = t.links()[li].a == u ? t.links()[li].b : t.links()[li].a;
      if (interior(v) && !depth.count(v)) {
        depth[v] = depth[u] + 1;
        queue.push_back(v);
      }
    }
  }
  // A node's parent: its shallowest interior neighbour above it (none for the top).
  auto parent = [&](std::size_t u) {
    const auto own = depth.find(u);
    std::size_t best = Topology::npos;
    int best_depth = own == depth.end() ? std::numeric_limits<int>::max() : own->second;
    for (std::size_t li : t.incident_links(u)) {
      const std::size_t v = t.links()[li].a == u ? t.links()[li].b : t.links()[li].a;
      const auto d = depth.find(v);
      if (d != depth.end() && d->second < best_depth) {
        best = v;
        best_depth = d->second;
      }
    }
    return best;
  };
  std::unordered_set<std::size_t> marked;  // the NICs' ancestors
  for (std::size_t nic : efa) {
    for (std::size_t u = parent(nic); u != Topology::npos && marked.insert(u).second; u = parent(u)) {
    }
  }
  // Every GPU of the host (not only the communicator's: the plugin sees them all), by the
  // switches and root complexes they hang off.
  std::map<std::size_t, int> groups_at;
  std::unordered_set<std::size_t> gpus;
  for (const auto& [u, d] : depth) {
    for (std::size_t li : t.incident_links(u)) {
      const std::size_t v = t.links()[li].a == u ? t.links()[li].b : t.links()[li].a;
      if (t.node(v).kind == NodeKind::gpu) gpus.insert(v);
    }
  }
  for (std::size_t g : gpus) {
    for (std::size_t u = parent(g); u != Topology::npos; u = parent(u)) {
      if (marked.count(u)) {
        groups_at[u] += 1;
        break;
      }
    }
  }
  std::map<std::size_t, std::vector<std::size_t>> nics_at;
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t nic : efa) {
    std::size_t u = parent(nic);
    while (u != Topology::npos && !groups_at.count(u)) u = parent(u);
    if (u == Topology::npos) {
      groups.push_back({nic});
    } else {
      nics_at[u].push_back(nic);
    }
  }
  for (auto& [at, nics] : nics_at) {
    std::sort(nics.begin(), nics.end());
    const std::size_t n = std::min(nics.size(), static_cast<std::size_t>(groups_at[at]));
    std::size_t next = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t size = nics.size() / n + (k < nics.size() % n ? 1 : 0);
      groups.emplace_back(nics.begin() + static_cast<std::ptrdiff_t>(next), nics.begin() + static_cast<std::ptrdiff_t>(next + size));
      next += size;
    }
  }
  std::sort(groups.begin(), groups.end());
  return groups;
}

}  // namespace

bool is_c2c_link(const Link& link) { return link.label.rfind("nvlink-c2c", 0) == 0; }

double nccl_nvlink_GBps(const Link& link, int cc) { return nvlink_count(link, cc) * hardware::nvlink_GBps_per_link(cc); }

int nccl_version_code(const std::string& text) {
  int major = 0, minor = 0, patch = 0;
  char tail = 0;
  const int got = std::sscanf(text.c_str(), "%d.%d.%d%c", &major, &minor, &patch, &tail);
  if (got < 2 || major != 2 || minor < 0 || minor > 99 || patch < 0 || patch > 99 || (got == 4 && tail != '+')) return 0;
  return major * 10000 + minor * 100 + patch;
}

std::string nccl_version_text(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

std::string path_name(int type) {
  static const std::array<const char*, 12> names = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
  return type >= 0 && type < 12 ? names[static_cast<std::size_t>(type)] : "?";
}

int path_type_from_name(const std::string& name) {
  for (int t = 0; t < 12; ++t) {
    if (path_name(t) == name) return t;
  }
  if (name == "NODE") return kPathPhb;
  if (name.rfind("NV", 0) == 0) return kPathNvl;
  return -1;
}

int ports_per_device(const std::string& link_layer, int nccl_version) {
  if (link_layer == "efa") return 4;  // aws-ofi-nccl's rails (nccl_ofi_rdma.h MAX_NUM_RAILS)
  if (!link_layer.empty() && link_layer != "infiniband" && link_layer != "roce") return 1;
  if (nccl_version < 22000) return 1;
  if (nccl_version < 22400) return 2;   // net_ib.cc / common.h NCCL_IB_MAX_DEVS_PER_NIC
  if (nccl_version < 23000) return 4;   // NCCL_NET_MAX_DEVS_PER_NIC (net plugin API v9-v11)
  return 8;                             // v12
}

System::System(const Topology& t, const std::vector<std::size_t>& gpus, const SystemOptions& options, bool with_paths)
    : by_type_(6), cpu_vendor_(options.cpu_vendor), peer_override_(options.peer_access), pxn_(options.pxn) {
  // The host: what the ranks' GPUs reach through switches, CPUs, NVSwitches and NICs. Only the
  // host's own nodes are visited (a cluster has thousands of hosts).
  std::unordered_set<std::size_t> in_host(gpus.begin(), gpus.end());
  const std::unordered_set<std::size_t> is_rank(gpus.begin(), gpus.end());
  std::vector<std::size_t> members(gpus.begin(), gpus.end());
  std::deque<std::size_t> queue(gpus.begin(), gpus.end());
  while (!queue.empty()) {
    const std::size_t u = queue.front();
    queue.pop_front();
    const NodeKind ku = t.node(u).kind;
    if (ku == NodeKind::nic || (ku == NodeKind::gpu && !is_rank.count(u))) continue;  // NICs and GPUs end the walk
    for (std::size_t li : t.incident_links(u)) {
      const Link& l = t.links()[li];
      const std::size_t v = l.a == u ? l.b : l.a;
      const NodeKind kv = t.node(v).kind;
      if (in_host.count(v) || kv == NodeKind::net_switch || kv == NodeKind::host_memory) continue;
      if (kv == NodeKind::gpu && !is_rank.count(v)) continue;  // NCCL keeps only the communicator's GPUs
      in_host.insert(v);
      members.push_back(v);
      if (ku == NodeKind::gpu && kv == NodeKind::gpu) continue;  // reached over NVLink: it is a rank, already queued
      queue.push_back(v);
    }
  }
  std::sort(members.begin(), members.end());  // in the topology's order, as NCCL numbers its nodes
  // One NVSwitch node for all of them, one CPU for a root complex and the socket it hangs off.
  std::unordered_map<std::size_t, int> sys_of;
  for (std::size_t u : members) sys_of[u] = -1;
  auto add_node = [&](NodeType type, std::size_t topology_node) {
    SysNode n;
    n.type = type;
    n.topology_node = topology_node;
    nodes_.push_back(n);
    by_type_[ix(type)].push_back(static_cast<int>(nodes_.size() - 1));
    return static_cast<int>(nodes_.size() - 1);
  };
  for (std::size_t r = 0; r < gpus.size(); ++r) {
    const int n = add_node(NodeType::gpu, gpus[r]);
    nodes_[static_cast<std::size_t>(n)].rank = static_cast<int>(r);
    const hardware::GpuModel* model = hardware::find_gpu_model(t.node(gpus[r]).facts.gpu_model);
    nodes_[static_cast<std::size_t>(n)].cc = model ? model->compute_capability : options.cc;
    sys_of[gpus[r]] = n;
  }
  // EFA adapters as aws-ofi-nccl groups them: NCCL sees each group's first only, a device whose
  // rails are the group.
  std::vector<std::size_t> efa;
  for (std::size_t u : members) {
    if (t.node(u).kind == NodeKind::nic && t.node(u).facts.link_layer == "efa") efa.push_back(u);
  }
  std::unordered_map<std::size_t, std::vector<std::size_t>> rails_of;  // a group's first -> the group
  std::unordered_set<std::size_t> rail_only;                           // the groups' others
  if (!efa.empty()) {
    for (std::vector<std::size_t>& group : ofi_rail_groups(t, members, efa)) {
      rail_only.insert(group.begin() + 1, group.end());
      rails_of[group.front()] = std::move(group);
    }
  }
  int nvs = -1;
  for (std::size_t u : members) {
    if (sys_of[u] >= 0 || rail_only.count(u)) continue;
    switch (t.node(u).kind) {
      case NodeKind::pcie_switch: sys_of[u] = add_node(NodeType::pci, u); break;
      case NodeKind::nvswitch:
        if (nvs < 0) nvs = add_node(NodeType::nvs, u);
        sys_of[u] = nvs;
        break;
      case NodeKind::nic: sys_of[u] = add_node(NodeType::nic, u); break;
      case NodeKind::cpu_socket: sys_of[u] = add_node(NodeType::cpu, u); break;
      default: break;
    }
  }
  // A root complex is its socket's; alone, it is a CPU of its own.
  for (std::size_t u : members) {
    if (t.node(u).kind != NodeKind::root_complex) continue;
    for (std::size_t li : t.incident_links(u)) {
      const Link& l = t.links()[li];
      const std::size_t v = l.a == u ? l.b : l.a;
      if (t.node(v).kind == NodeKind::cpu_socket && sys_of.count(v) && sys_of[v] >= 0) sys_of[u] = sys_of[v];
    }
    if (sys_of[u] < 0) sys_of[u] = add_node(NodeType::cpu, u);
  }
  for (int c : of_type(NodeType::cpu)) {
    SysNode& n = nodes_[static_cast<std::size_t>(c)];
    n.vendor = t.node(n.topology_node).facts.cpu_vendor;
    if (n.vendor.empty()) n.vendor = options.cpu_vendor;
  }
  const int cc = min_compute_capability();
  // Links at NCCL's rates (two between the same nodes add up, as ncclTopoConnectNodes does).
  std::map<std::pair<int, int>, std::pair<LinkType, double>> joined;
  for (std::size_t u : members) {
    for (std::size_t li : t.incident_links(u)) {
      const Link& l = t.links()[li];
      if (l.a != u || !sys_of.count(l.b)) continue;  // each link of the host once, from its first end
      const int a = sys_of[l.a], b = sys_of[l.b];
      if (a < 0 || b < 0 || a == b) continue;
      const NodeType ta = nodes_[static_cast<std::size_t>(a)].type, tb = nodes_[static_cast<std::size_t>(b)].type;
      LinkType type = LinkType::pci;
      double bw = options.pcie_GBps;
      if (ta == NodeType::nvs || tb == NodeType::nvs || (ta == NodeType::gpu && tb == NodeType::gpu)) {
        type = LinkType::nvl;
        bw = nccl_nvlink_GBps(l, cc);
      } else if (is_c2c_link(l) && options.nccl_version >= kC2cSince && (ta == NodeType::gpu || tb == NodeType::gpu) &&
                 (ta == NodeType::cpu || tb == NodeType::cpu)) {
        type = LinkType::c2c;  // topo.cc: the C2C links' bandwidth together, as NVML gives them
        bw = l.bandwidth_Bps / 1e9;
      } else if (ta == NodeType::cpu && tb == NodeType::cpu) {
        type = LinkType::sys;
        bw = options.inter_socket_GBps;
      }
      auto& [kind, sum] = joined[{std::min(a, b), std::max(a, b)}];
      kind = type;
      sum += bw;
    }
  }
  for (const auto& [pair, link] : joined) add_link(pair.first, pair.second, link.first, link.second);
  // Each NIC's network port: its links to network switches, at their line rate; an EFA group's
  // its rails' together.
  auto line_rate = [&](std::size_t u) {
    double rate = 0;
    for (std::size_t li : t.incident_links(u)) {
      const Link& l = t.links()[li];
      const std::size_t v = l.a == u ? l.b : l.a;
      if (t.node(v).kind == NodeKind::net_switch) rate += l.bandwidth_Bps / 1e9;
    }
    return rate;
  };
  for (int nic : std::vector<int>(of_type(NodeType::nic))) {
    const std::size_t u = nodes_[static_cast<std::size_t>(nic)].topology_node;
    const auto group = rails_of.find(u);
    const std::vector<std::size_t> rails = group == rails_of.end() ? std::vector<std::size_t>{u} : group->second;
    double rate = 0;
    std::vector<std::size_t> port_of;  // each port's NIC
    for (std::size_t r : rails) {
      rate += line_rate(r);
      port_of.insert(port_of.end(), static_cast<std::size_t>(std::max(1, t.node(r).facts.ports)), r);
    }
    // The devices NCCL drives the ports as, each with its ports' share of the rate.
    const NodeFacts& facts = t.node(u).facts;
    const int ports = static_cast<int>(port_of.size());
    const int per_device = ports_per_device(facts.link_layer, options.nccl_version);
    for (int first = 0; first < ports; first += per_device) {
      const int count = std::min(per_device, ports - first);
      const double share = rate * count / ports;
      const int net = add_node(NodeType::net, u);
      SysNode& n = nodes_[static_cast<std::size_t>(net)];
      n.net_bw = share;
      n.gdr = facts.gpudirect ? *facts.gpudirect : options.gdr != 0;
      n.coll = facts.sharp.value_or(options.nic_reduces);
      for (int p = first; p < first + count; ++p) {
        const std::size_t r = port_of[static_cast<std::size_t>(p)];
        if (std::find(n.rails.begin(), n.rails.end(), r) == n.rails.end()) n.rails.push_back(r);
      }
      add_link(nic, net, LinkType::net, share);
    }
  }
  // What the driver allows between the ranks' GPUs, and the classes topo -m gave them.
  const std::size_t g = gpus.size();
  peer_.assign(g * g, 1);
  class_type_.assign(g * g, -1);
  if (const auto& m = t.measured()) {
    std::vector<int> row(g, -1);
    for (std::size_t r = 0; r < g; ++r) {
      const auto it = std::find(m->gpus.begin(), m->gpus.end(), t.node(gpus[r]).id);
      if (it != m->gpus.end()) row[r] = static_cast<int>(it - m->gpus.begin());
    }
    for (std::size_t a = 0; a < g; ++a) {
      for (std::size_t b = 0; b < g; ++b) {
        if (a == b || row[a] < 0 || row[b] < 0) continue;
        const auto ia = static_cast<std::size_t>(row[a]), ib = static_cast<std::size_t>(row[b]);
        if (m->p2p_supported) {
          peer_[a * g + b] = (*m->p2p_supported)[ia][ib] ? 1 : 0;
          peer_stated_ = true;
        }
        if (m->topo_classes) {
          const int type = path_type_from_name((*m->topo_classes)[ia][ib]);
          if (type > kPathNvl) class_type_[a * g + b] = type;
        }
      }
    }
  }
  // Levels: NCCL_P2P_LEVEL, else NCCL's default (paths.cc ncclTopoCheckP2p): since 2.23 PXB, or
  // SYS between the GPUs of an AMD host of two; before, SYS, or PXB on Intel, ARM and Zhaoxin
  // CPUs. NCCL_NET_GDR_LEVEL.
  if (options.p2p_level >= 0) {
    p2p_level_ = options.p2p_level;
  } else if (options.nccl_version >= 22300) {
    p2p_level_ = cpu_vendor() == "amd" && gpu_count() <= 2 ? kPathSys : kPathPxb;
  } else {
    const std::string v = cpu_vendor();
    p2p_level_ = v == "intel" || v == "arm" || v == "zhaoxin" ? kPathPxb : kPathSys;
  }
  gdr_level_ = options.gdr_level >= 0 ? options.gdr_level : kPathP2c;
  if (with_paths) compute_paths();
}

void System::complete() {
  if (paths_.empty()) compute_paths();
}

void System::add_link(int a, int b, LinkType type, double bw) {
  nodes_[static_cast<std::size_t>(a)].links.push_back({b, type, bw});
  nodes_[static_cast<std::size_t>(b)].links.push_back({a, type, bw});
}

int System::min_compute_capability() const {
  int cc = 0;
  for (int g : of_type(NodeType::gpu)) {
    const int c = nodes_[static_cast<std::size_t>(g)].cc;
    cc = cc == 0 ? c : std::min(cc, c);
  }
  return cc == 0 ? 80 : cc;
}

std::string System::cpu_vendor() const {
  const auto& cpus = of_type(NodeType::cpu);
  return cpus.empty() ? cpu_vendor_ : nodes_[static_cast<std::size_t>(cpus.front())].vendor;
}

// Breadth-first from `base`: every node's path to it (paths.cc ncclTopoSetPaths).
void System::bfs_from(int base) {
  SysPath& self = path_mut(base, base);
  self = SysPath{{}, kLocBw, kPathLoc};
  std::vector<int> frontier = {base};
  while (!frontier.empty()) {
    std::vector<int> next;
    for (int node : frontier) {
      const SysNode& n = nodes_[static_cast<std::size_t>(node)];
      const SysPath here = path(node, base);
      for (std::size_t li = 0; li < n.links.size(); ++li) {
        const SysLink& link = n.links[li];
        const int rem = link.to;
        const SysNode& r = nodes_[static_cast<std::size_t>(rem)];
        // A GPU is crossed only over NVLink to another GPU, once (NVB).
        const bool nvb = n.type == NodeType::gpu && link.type == LinkType::nvl && r.type == NodeType::gpu;
        if (node != base && n.type == NodeType::gpu && !(nvb && here.count() <= 1 && here.type == kPathNvl)) continue;
        int type = link_path_type(link.type);
        if (n.type == NodeType::pci && r.type == NodeType::pci) type = kPathPxb;
        if (link.type == LinkType::pci && (n.type == NodeType::cpu || r.type == NodeType::cpu)) type = kPathPhb;
        if (node != base && nvb) type = kPathNvb;
        type = std::max(here.type, type);
        const double bw = std::min(here.bw, link.bw);
        SysPath& to = path_mut(rem, base);
        if (type < to.type || (type == to.type && to.bw < bw) ||
            (type == to.type && to.bw == bw && to.count() > here.count() + 1)) {
          // rem -> node over the reverse link, then node's path to base.
          std::size_t reverse = 0;
          while (reverse < r.links.size() && !(r.links[reverse].to == node && r.links[reverse].type == link.type)) ++reverse;
          if (reverse == r.links.size()) throw std::logic_error("nccl system: a link without its reverse");
          to.hops.clear();
          to.hops.emplace_back(rem, static_cast<int>(reverse));
          to.hops.insert(to.hops.end(), here.hops.begin(), here.hops.end());
          to.bw = bw;
          to.type = type;
          if (std::find(next.begin(), next.end(), rem) == next.end()) next.push_back(rem);
        }
      }
    }
    frontier = std::move(next);
  }
}

int System::local_cpu(int node) const {
  int best = -1;
  for (int c : of_type(NodeType::cpu)) {
    const SysPath& p = path(node, c);
    if (p.type == kPathDis) continue;
    if (best < 0 || p.type < path(node, best).type || (p.type == path(node, best).type && p.count() < path(node, best).count())) {
      best = c;
    }
  }
  return best;
}

void System::reroute(int a, int b, int via, bool via_gpu) {
  const SysPath first = path(a, via), second = path(via, b);
  SysPath& p = path_mut(a, b);
  p.hops = first.hops;
  p.hops.insert(p.hops.end(), second.hops.begin(), second.hops.end());
  p.bw = std::min(first.bw, second.bw);
  p.type = via_gpu ? kPathPxn : std::max(first.type, second.type);
}

bool System::p2p(int rank_a, int rank_b) const { return path(gpu(rank_a), gpu(rank_b)).type <= p2p_level_ && peer_access(rank_a, rank_b); }

int System::gpu_path_type(int rank_a, int rank_b) const {
  return direct_type_[static_cast<std::size_t>(rank_a * gpu_count() + rank_b)];
}

std::string System::pair_facts() const {
  std::string out(peer_.begin(), peer_.end());
  for (int t : class_type_) out += static_cast<char>(t + 1);
  return out;
}

bool System::peer_access(int rank_a, int rank_b) const {
  const auto g = static_cast<std::size_t>(gpu_count());
  return peer_[static_cast<std::size_t>(rank_a) * g + static_cast<std::size_t>(rank_b)] != 0;
}

bool System::gdr(int rank, int net_index) const {
  const int g = gpu(rank), n = net(net_index);
  if (!nodes_[static_cast<std::size_t>(n)].gdr || !nodes_[static_cast<std::size_t>(g)].gdr) return false;
  return gdr_distance(g, n) <= gdr_level_;
}

// paths.cc ncclTopoCheckGdr: through a peer GPU (PXN), the peer's distance to the NIC.
int System::gdr_distance(int gpu_node, int net_node) const {
  const int type = path(gpu_node, net_node).type;
  const int peer = nodes_[static_cast<std::size_t>(net_node)].local_gpu;
  return type == kPathPxn && peer >= 0 ? path(peer, net_node).type : type;
}

void System::compute_paths() {
  const std::size_t n = nodes_.size();
  paths_.assign(n * n, SysPath{});
  for (std::size_t base = 0; base < n; ++base) bfs_from(static_cast<int>(base));
  // A pair topo -m classed takes that class where its path is not NVLink: a tree inferred from
  // measured rates may join GPUs under a "switch" where sysfs would show NCCL a host bridge or
  // the link between sockets.
  const int g = gpu_count();
  for (int a = 0; a < g; ++a) {
    for (int b = 0; b < g; ++b) {
      const int type = class_type_[static_cast<std::size_t>(a * g + b)];
      SysPath& p = path_mut(gpu(a), gpu(b));
      if (a != b && type > 0 && p.type > kPathNvb) p.type = type;
    }
  }
  // The driver's peer access as the caller would have it, off NVLink.
  if (peer_override_ >= 0) {
    for (int a = 0; a < g; ++a) {
      for (int b = 0; b < g; ++b) {
        if (a != b && path(gpu(a), gpu(b)).type > kPathNvb) peer_[static_cast<std::size_t>(a * g + b)] = static_cast<char>(peer_override_);
      }
    }
  }
  direct_type_.assign(static_cast<std::size_t>(g * g), kPathLoc);
  for (int a = 0; a < g; ++a) {
    for (int b = 0; b < g; ++b) direct_type_[static_cast<std::size_t>(a * g + b)] = path(gpu(a), gpu(b)).type;
  }
  // GPUs that may not talk P2P go through the CPU next to the receiver (SHM).
  for (int a = 0; a < g; ++a) {
    for (int b = 0; b < g; ++b) {
      if (a == b || p2p(a, b)) continue;
      const int cpu = local_cpu(gpu(b));
      if (cpu >= 0) reroute(gpu(a), gpu(b), cpu, false);
    }
  }
  // NVLink-C2C (paths.cc, from 2.27; 2.26 let GPUDirect RDMA through likewise): a GPU's path to
  // the NICs closest to it, on its own CPU, is P2C (C2C to the CPU, then PCI) rather than PHB.
  for (int a = 0; a < g; ++a) {
    const int cpu = local_cpu(gpu(a));
    if (cpu < 0 || path(gpu(a), cpu).type != kPathC2c) continue;
    for (int i : local(gpu(a), NodeType::net)) {
      const int n = net(i);
      if (path(n, cpu).type != kPathPhb) continue;
      path_mut(gpu(a), n).type = std::min<int>(kPathP2c, path(gpu(a), n).type);
      path_mut(n, gpu(a)).type = std::min<int>(kPathP2c, path(n, gpu(a)).type);
    }
  }
  // Each NIC's local GPU (from the paths as they are before PXN and GPUDirect change them).
  for (int i = 0; i < net_count(); ++i) {
    const int rank = local_gpu(i);
    nodes_[static_cast<std::size_t>(net(i))].local_gpu = rank >= 0 ? gpu(rank) : -1;
  }
  // GPU -> NIC: through an NVLink peer next to the NIC (PXN), or through the CPU without GPUDirect.
  for (int net : of_type(NodeType::net)) {
    const SysNode& nn = nodes_[static_cast<std::size_t>(net)];
    for (int g : of_type(NodeType::gpu)) {
      const int peer = nn.local_gpu;
      if (pxn_ && peer >= 0 && peer != g) {
        const bool peer_gdr = nn.gdr && nodes_[static_cast<std::size_t>(peer)].gdr && path(peer, net).type <= gdr_level_;
        if (path(peer, net).type <= kPathP2c && peer_gdr && path(g, peer).type <= kPathNvl &&
            (path(peer, net).bw > path(g, net).bw || path(g, net).type > kPathPxn)) {
          reroute(g, net, peer, true);
        }
      }
      if (path(g, net).type < kPathPhb) {
        const bool direct = nn.gdr && nodes_[static_cast<std::size_t>(g)].gdr && gdr_distance(g, net) <= gdr_level_;
        if (!direct) {
          const int cpu = local_cpu(g);
          if (cpu >= 0) {
            reroute(net, g, cpu, false);
            reroute(g, net, cpu, false);
          }
        }
      }
    }
  }
}

std::vector<int> System::local(int from, NodeType type) const {
  double best_bw = 0;
  int best_type = kPathDis;
  std::vector<int> out;
  const auto& targets = of_type(type);
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const SysPath& p = path(from, targets[i]);
    if (p.type >= kPathDis) continue;
    if (p.bw > best_bw || (p.bw == best_bw && p.type < best_type)) {
      best_bw = p.bw;
      best_type = p.type;
      out.clear();
    }
    if (p.bw == best_bw && p.type == best_type) out.push_back(static_cast<int>(i));
  }
  return out;
}

int System::local_net(int rank, int channel) const {
  const std::vector<int> nets = local(gpu(rank), NodeType::net);
  if (nets.empty()) return -1;
  const std::vector<int> gpus = local(net(nets.front()), NodeType::gpu);
  const int gpu_count = std::max<int>(1, static_cast<int>(gpus.size()));
  const int count = static_cast<int>(nets.size());
  const int per_gpu = (count + gpu_count - 1) / gpu_count;
  int n = rank % gpu_count;
  if ((count & (count - 1)) == 0) {  // a power of two: mirror the bits, so that neighbours spread
    int bits = 0, mirrored = 0;
    while ((1 << bits) < count) ++bits;
    for (int b = 0; b < bits; ++b) mirrored |= ((n >> b) & 1) << (bits - 1 - b);
    n = mirrored;
  }
  n += channel % std::max(1, per_gpu);
  return nets[static_cast<std::size_t>(n % count)];
}

int System::local_gpu(int net_index) const {
  const std::vector<int> gpus = local(net(net_index), NodeType::gpu);
  for (int c = 0; c < 64; ++c) {
    for (int g : gpus) {
      if (local_net(g, c) == net_index) return g;
    }
  }
  return -1;
}

double System::max_bw(bool inter) const {
  double best = 0;
  for (int g : of_type(NodeType::gpu)) {
    for (int to : of_type(inter ? NodeType::net : NodeType::gpu)) {
      const SysPath& p = path(g, to);
      if (p.count() == 0) continue;
      best = std::max(best, p.bw);
    }
  }
  return best;
}

double System::total_bw() const {
  double best = 0;
  for (int g : of_type(NodeType::gpu)) {
    double nvl = 0, pci = 0;
    for (const SysLink& l : nodes_[static_cast<std::size_t>(g)].links) {
      if (l.type == LinkType::nvl) nvl += l.bw;
      if (l.type == LinkType::pci) pci = l.bw;
    }
    best = std::max({best, nvl, pci});
  }
  return best;
}

}  // namespace gradsync::models::nccl
