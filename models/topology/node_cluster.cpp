#include "models/topology/node_cluster.h"

#include <algorithm>
#include <map>
#include <optional>

#include "models/support/error.h"
#include "models/support/format.h"
#include "models/topology/importers/import.h"
#include "models/topology/matrix_inference.h"

namespace gradsync::models {
namespace {

// NCCL's order of the PCIe classes, closest first (SOC is SYS's old name).
int level_of(const std::string& c) {
  static const std::vector<std::string> order = {"PIX", "PXB", "PHB", "NODE", "SYS"};
  const auto it = std::find(order.begin(), order.end(), c == "SOC" ? "SYS" : c);
  return it == order.end() ? static_cast<int>(order.size()) : static_cast<int>(it - order.begin());
}
const char* class_at(int level) {
  static const char* names[] = {"PIX", "PXB", "PHB", "NODE", "SYS"};
  return names[std::clamp(level, 0, 4)];
}
constexpr int kPxbLevel = 1;

int closest_level(const ImportedDevice& d) {
  int best = 99;
  for (const std::string& c : d.classes) best = std::min(best, level_of(c));
  return best;
}

}  // namespace

NodeCluster cluster_from_node(const std::vector<std::string>& node_files, const ClusterSpec& spec,
                              const std::vector<std::string>& nics) {
  check_cluster_spec(spec);
  ImportOptions io;
  io.gpu_model = spec.gpu;
  if (spec.cpu != "auto") io.cpu = spec.cpu;
  ImportResult r = import_tool_files(node_files, io);
  const std::string files = join(node_files);
  if (!r.form.topo_classes) {
    throw InputError(files + ": no nvidia-smi topo -m table; expected the node's nvidia-smi topo -m output, with its NIC columns");
  }
  if (!r.form.nominal) {
    throw InputError(files + ": holds measured GPU-pair bandwidth (" + join(r.tools_found) +
                     "); expected nvidia-smi topo -m alone: a cluster's node is built at NCCL's documented rates, as NCCL "
                     "plans with them");
  }
  if (r.devices.empty()) {
    throw InputError(files + ": nvidia-smi topo -m shows no NIC column; expected the table of a node with its network "
                     "adapters (columns NIC0, NIC1, ... beside GPU0, GPU1, ...), as nvidia-smi prints it on a node with NICs");
  }

  std::vector<std::string> notes;
  // The fabric's NICs: those named, else those PIX or PXB to a GPU, else every one.
  std::vector<std::size_t> fabric_nics, left_out;
  std::vector<std::string> all_names;
  for (const ImportedDevice& d : r.devices) all_names.push_back(d.name);
  for (const std::string& name : nics) {
    if (std::count(nics.begin(), nics.end(), name) > 1) throw InputError("--nics: " + name + " is named twice; expected each NIC once");
    if (std::find(all_names.begin(), all_names.end(), name) == all_names.end()) {
      throw InputError("--nics: " + files + " has no NIC named '" + name + "'" + did_you_mean(name, all_names) +
                       "; its NICs (nvidia-smi topo -m's NIC Legend): " + join(all_names));
    }
  }
  for (std::size_t d = 0; d < r.devices.size(); ++d) {
    const bool taken = nics.empty() ? closest_level(r.devices[d]) <= kPxbLevel
                                    : std::find(nics.begin(), nics.end(), r.devices[d].name) != nics.end();
    (taken ? fabric_nics : left_out).push_back(d);
  }
  const bool none_close = fabric_nics.empty();
  if (none_close) {
    fabric_nics.swap(left_out);
    notes.push_back("no NIC is PIX or PXB to a GPU: every NIC (" + std::to_string(fabric_nics.size()) +
                        ") taken as the network's, each through its host bridge or socket");
  }
  std::vector<std::string> names;
  for (std::size_t d : fabric_nics) names.push_back(r.devices[d].name + (nics.empty() ? "" : " (" + std::string(class_at(closest_level(r.devices[d]))) + ")"));
  notes.push_back("the network's NICs, one per rail: " + join(names) +
                  (!nics.empty() ? " (named by --nics)" : none_close ? " (every NIC)" : " (PIX or PXB to a GPU)"));
  if (!left_out.empty()) {
    std::vector<std::string> other;
    for (std::size_t d : left_out) other.push_back(r.devices[d].name + " (" + class_at(closest_level(r.devices[d])) + ")");
    notes.push_back(nics.empty() ? "left out, as a management or storage NIC farther than PXB from every GPU: " + join(other)
                                 : "left out, not named by --nics: " + join(other));
  }

  // The node with its NICs: the NICs join the GPUs as leaves of the nominal form, so that the
  // classes place them in the tree of switches, host bridges and sockets.
  const std::size_t n = r.form.size(), m = fabric_nics.size();
  MatrixForm node = r.form;
  const std::vector<std::vector<std::string>>& gpu_classes = *r.form.topo_classes;
  std::vector<std::vector<std::string>> classes(n + m, std::vector<std::string>(n + m, "X"));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) classes[i][j] = gpu_classes[i][j];
  }
  for (std::size_t a = 0; a < m; ++a) {
    const ImportedDevice& da = r.devices[fabric_nics[a]];
    node.gpus.push_back(da.name);
    for (std::size_t g = 0; g < n; ++g) classes[n + a][g] = classes[g][n + a] = da.classes[g];
    // Its class to another NIC: its row's, else as far as the NIC's closest GPU is from the other.
    std::size_t near = 0;
    for (std::size_t g = 1; g < n; ++g) {
      if (level_of(da.classes[g]) < level_of(da.classes[near])) near = g;
    }
    for (std::size_t b = 0; b < m; ++b) {
      if (a == b) continue;
      const ImportedDevice& db = r.devices[fabric_nics[b]];
      classes[n + a][n + b] = !da.peer_classes.empty()
                                  ? da.peer_classes[fabric_nics[b]]
                                  : class_at(std::max(level_of(da.classes[near]), level_of(db.classes[near])));
    }
  }
  node.topo_classes = classes;
  node.bandwidth_Bps = PairMatrix(n + m);
  for (std::size_t i = 0; i < n + m; ++i) {
    for (std::size_t j = 0; j < n + m; ++j) {
      if (i != j) node.bandwidth_Bps.at(i, j) = nominal_pair_Bps(*node.nominal, classes[i][j]);
    }
  }
  if (node.p2p_supported) {
    for (auto& row : *node.p2p_supported) row.resize(n + m, false);
    node.p2p_supported->resize(n + m, std::vector<bool>(n + m, false));
  }
  const InferredTopology inferred = infer_topology(node);
  const Topology& one = inferred.topology;

  // The cluster: every node's GPUs first (rank order = node order), then each node's switches,
  // bridges, sockets and NICs under its prefix, its host memory at its first socket, the network.
  const ClusterFacts facts = cluster_facts(spec);
  std::vector<Node> nodes;
  std::vector<Link> links;
  const std::vector<std::size_t> gpus = one.gpus();
  std::map<std::string, std::size_t> nic_rail;  // NIC id -> its index among the fabric's
  for (std::size_t a = 0; a < m; ++a) nic_rail[node.gpus[n + a]] = a;
  std::vector<std::vector<std::size_t>> index(static_cast<std::size_t>(spec.nodes), std::vector<std::size_t>(one.node_count()));
  for (int c = 0; c < spec.nodes; ++c) {
    for (std::size_t g : gpus) {
      if (nic_rail.count(one.node(g).id)) continue;
      index[static_cast<std::size_t>(c)][g] = nodes.size();
      nodes.push_back({"n" + std::to_string(c) + "-" + one.node(g).id, NodeKind::gpu, facts.gpu});
    }
  }
  ClusterFabric fabric(spec, static_cast<int>(m), nodes, links);
  const double pcie_GBps = node.nominal->pcie_Bps / 1e9;
  for (int c = 0; c < spec.nodes; ++c) {
    const std::string prefix = "n" + std::to_string(c) + "-";
    auto& at = index[static_cast<std::size_t>(c)];
    std::optional<std::size_t> socket;
    std::vector<std::size_t> nic_at(m);
    for (std::size_t u = 0; u < one.node_count(); ++u) {
      const Node& v = one.node(u);
      if (v.kind == NodeKind::gpu && !nic_rail.count(v.id)) continue;
      const NodeKind kind = v.kind == NodeKind::gpu ? NodeKind::nic : v.kind;
      if (kind == NodeKind::nic) nic_at[nic_rail.at(v.id)] = nodes.size();
      at[u] = nodes.size();
      nodes.push_back({prefix + v.id, kind, facts.of(kind)});
      if (!socket && (kind == NodeKind::cpu_socket || kind == NodeKind::root_complex)) socket = at[u];
    }
    for (const Link& l : one.links()) {
      Link copy = l;
      copy.a = at[l.a];
      copy.b = at[l.b];
      links.push_back(copy);
    }
    if (socket) {
      nodes.push_back({prefix + "host", NodeKind::host_memory, {}});
      append_link(links, *socket, nodes.size() - 1, pcie_GBps, spec.pcie_latency_us, "pcie");
    }
    if (!fabric.joins()) continue;
    for (std::size_t a = 0; a < m; ++a) fabric.plug(nic_at[a], c, static_cast<int>(a));
  }
  std::string stem = r.form.name;
  if (const auto k = stem.rfind("-nominal"); k != std::string::npos && k + 8 == stem.size()) stem.resize(k);
  const std::string name = !spec.name.empty() ? spec.name : std::to_string(spec.nodes) + "x-" + stem + "-" + to_string(spec.network);
  Topology cluster(name, std::move(nodes), std::move(links), name);
  cluster.set_description("Generated by gradsync topology generate --node " + files + ": " + std::to_string(spec.nodes) +
                               " nodes of " + std::to_string(n) + " " + spec.gpu + " GPUs, each as its nvidia-smi topo -m shows it (" +
                               node.nominal->basis + "), " + fabric.describe() + ". Latencies nominal.");
  for (const std::string& note : inferred.report.notes) {
    if (note.find("NVSwitch") != std::string::npos) notes.push_back(note);
  }
  return {std::move(cluster), std::move(notes)};
}

}  // namespace gradsync::models
