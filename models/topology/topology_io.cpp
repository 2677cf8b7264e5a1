#include "models/topology/topology_io.h"

#include "models/topology/cluster_generator.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "gradsync/config.h"
#include "models/support/error.h"
#include "models/support/units.h"
#include "models/topology/hardware.h"

namespace gradsync::models {
namespace {

const std::vector<std::string> kGraphKeys = {"name", "description", "nodes", "links"};
const std::vector<std::string> kNodeKeys = {"id", "kind", "model", "link_layer", "gpudirect", "sharp", "vendor", "vm", "ports", "adaptive_routing"};

// Which kinds of node each fact applies to.
const std::map<std::string, std::vector<NodeKind>> kFactKinds = {
    {"model", {NodeKind::gpu}},
    {"link_layer", {NodeKind::nic}},
    {"gpudirect", {NodeKind::nic}},
    {"sharp", {NodeKind::nic, NodeKind::nvswitch}},
    {"vendor", {NodeKind::cpu_socket, NodeKind::root_complex}},
    {"vm", {NodeKind::cpu_socket, NodeKind::root_complex}},
    {"ports", {NodeKind::nic}},
    {"adaptive_routing", {NodeKind::nic}},
};

NodeFacts facts_from_json(const JsonView& nv, NodeKind kind) {
  NodeFacts f;
  for (const auto& [key, kinds] : kFactKinds) {
    const auto v = nv.get(key);
    if (!v) continue;
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
      std::vector<std::string> names;
      for (NodeKind k : kinds) names.push_back(to_string(k));
      v->fail_message("\"" + key + "\" is a fact of " + join(names, " and ") + " nodes; this node is a " + to_string(kind));
    }
    if (key == "model") {
      f.gpu_model = v->as_string();
      if (!hardware::find_gpu_model(f.gpu_model)) {
        const auto names = hardware::gpu_model_names();
        v->fail("a GPU model gradsync knows: " + join(names) + did_you_mean(f.gpu_model, names));
      }
    } else if (key == "link_layer") {
      f.link_layer = v->as_string();
      if (std::find(kNicLinkLayers.begin(), kNicLinkLayers.end(), f.link_layer) == kNicLinkLayers.end()) {
        v->fail("one of " + join(kNicLinkLayers) + did_you_mean(f.link_layer, kNicLinkLayers));
      }
    } else if (key == "gpudirect") {
      f.gpudirect = v->as_bool();
    } else if (key == "sharp") {
      f.sharp = v->as_bool();
    } else if (key == "vendor") {
      f.cpu_vendor = v->as_string();
      if (f.cpu_vendor != "intel" && f.cpu_vendor != "amd" && f.cpu_vendor != "arm") v->fail("\"intel\", \"amd\" or \"arm\"");
    } else if (key == "vm") {
      f.vm = v->as_bool();
    } else if (key == "ports") {
      f.ports = static_cast<int>(v->as_integer_in(1, 8));
    } else if (key == "adaptive_routing") {
      f.adaptive_routing = v->as_bool();
    }
  }
  return f;
}

void facts_to_json(const NodeFacts& f, ordered_json& node) {
  if (!f.gpu_model.empty()) node["model"] = f.gpu_model;
  if (!f.link_layer.empty()) node["link_layer"] = f.link_layer;
  if (f.gpudirect) node["gpudirect"] = *f.gpudirect;
  if (f.sharp) node["sharp"] = *f.sharp;
  if (!f.cpu_vendor.empty()) node["vendor"] = f.cpu_vendor;
  if (f.vm) node["vm"] = *f.vm;
  if (f.ports > 1) node["ports"] = f.ports;
  if (f.adaptive_routing) node["adaptive_routing"] = *f.adaptive_routing;
}
const std::vector<std::string> kLinkKeys = {"a", "b", "bandwidth_GBps", "latency_us", "duplex", "label"};

Topology graph_from_json(const JsonView& doc) {
  doc.expect_object(kGraphKeys);
  const std::string name = doc.at("name").as_string();
  if (name.empty()) doc.at("name").fail("a non-empty name");
  std::vector<Node> nodes;
  std::unordered_map<std::string, std::size_t> ids;
  const auto node_views = doc.at("nodes").items();
  for (const auto& nv : node_views) {
    nv.expect_object(kNodeKeys);
    Node node;
    node.id = nv.at("id").as_string();
    if (node.id.empty()) nv.at("id").fail("a non-empty id");
    if (ids.count(node.id)) nv.at("id").fail("an id not used by another node");
    const std::string kind = nv.at("kind").as_string();
    auto k = node_kind_from_string(kind);
    if (!k) nv.at("kind").fail("one of " + join(node_kind_names()) + did_you_mean(kind, node_kind_names()));
    node.kind = *k;
    node.facts = facts_from_json(nv, node.kind);
    ids[node.id] = nodes.size();
    nodes.push_back(node);
  }
  std::vector<std::string> all_ids;
  for (const auto& n : nodes) all_ids.push_back(n.id);
  std::vector<Link> links;
  for (const auto& lv : doc.at("links").items()) {
    lv.expect_object(kLinkKeys);
    Link link;
    for (const char* end : {"a", "b"}) {
      const auto ev = lv.at(end);
      const std::string id = ev.as_string();
      auto it = ids.find(id);
      if (it == ids.end()) ev.fail("the id of a node listed in \"nodes\"" + did_you_mean(id, all_ids));
      (end[0] == 'a' ? link.a : link.b) = it->second;
    }
    if (link.a == link.b) lv.at("b").fail("a node other than \"a\" (a link joins two nodes)");
    link.bandwidth_Bps = GBps_to_Bps(read_bandwidth_GBps(lv.at("bandwidth_GBps")));
    link.latency_s = us_to_s(read_latency_us(lv.at("latency_us")));
    if (auto d = lv.get("duplex")) {
      if (d->value().is_number()) {
        // The share of the bandwidth each direction keeps when both are busy.
        const double share = d->as_number();
        if (!(share >= 0.5 && share <= 1)) d->fail("\"full\", \"half\" or a share between 0.5 and 1");
        link.full_duplex = share > 0.5;
        link.duplex_share = share;
      } else {
        const std::string duplex = d->as_string();
        if (duplex != "full" && duplex != "half") d->fail("\"full\", \"half\" or a share between 0.5 and 1");
        link.full_duplex = duplex == "full";
      }
    }
    if (auto l = lv.get("label")) link.label = l->as_string();
    links.push_back(link);
  }
  Topology t(name, std::move(nodes), std::move(links), doc.source());
  if (auto d = doc.get("description")) t.set_description(d->as_string());
  return t;
}

}  // namespace

LoadedTopology load_topology(const JsonView& doc, const InferenceOptions& options) {
  if (!doc.value().is_object()) {
    doc.fail("a topology object (graph form with \"nodes\" and \"links\", matrix form with \"gpus\" and "
             "\"bandwidth_GBps\", or generated form with \"generate\")");
  }
  if (is_generated_form(doc)) {
    const ClusterSpec spec = cluster_spec_from_json(doc);
    Topology t = generate_cluster(spec);
    if (const auto d = doc.get("description")) t.set_description(d->as_string() + " " + t.description());
    return LoadedTopology{std::move(t), std::nullopt};
  }
  const bool graph = doc.value().contains("nodes") || doc.value().contains("links");
  const bool matrix = doc.value().contains("gpus") || doc.value().contains("bandwidth_GBps");
  if (graph && matrix) {
    doc.fail_message("mixes the graph form (\"nodes\", \"links\") and the matrix form (\"gpus\", \"bandwidth_GBps\"); expected one of them");
  }
  if (graph) return LoadedTopology{graph_from_json(doc), std::nullopt};
  if (matrix) {
    MatrixForm form = matrix_form_from_json(doc);
    auto inferred = infer_topology(form, options);
    return LoadedTopology{std::move(inferred.topology), std::move(inferred.report)};
  }
  doc.fail_message("is neither a graph-form topology (keys \"nodes\" and \"links\"), a matrix-form one (keys \"gpus\" and "
                   "\"bandwidth_GBps\") nor a generated one (key \"generate\")");
}

LoadedTopology load_topology_file(const std::string& path, const InferenceOptions& options) {
  return load_topology(JsonView::load_file(path), options);
}

ordered_json topology_to_graph_json(const Topology& t) {
  ordered_json out = ordered_json::object();
  out["name"] = t.name();
  if (!t.description().empty()) out["description"] = t.description();
  ordered_json nodes = ordered_json::array();
  for (const auto& n : t.nodes()) {
    ordered_json node = {{"id", n.id}, {"kind", to_string(n.kind)}};
    facts_to_json(n.facts, node);
    nodes.push_back(std::move(node));
  }
  ordered_json links = ordered_json::array();
  for (const auto& l : t.links()) {
    ordered_json link = {{"a", t.node(l.a).id},
                 {"b", t.node(l.b).id},
                 {"bandwidth_GBps", Bps_to_GBps(l.bandwidth_Bps)},
                 {"latency_us", s_to_us(l.latency_s)},
                 {"duplex", !l.full_duplex ? ordered_json("half") : l.duplex_share < 1 ? ordered_json(l.duplex_share) : ordered_json("full")}};
    if (!l.label.empty()) link["label"] = l.label;
    links.push_back(link);
  }
  out["nodes"] = nodes;
  out["links"] = links;
  return out;
}

namespace fs = std::filesystem;

std::string topology_dir() {
  if (const char* env = std::getenv("GRADSYNC_TOPOLOGY_DIR"); env && *env) return env;
  return std::string(GRADSYNC_SOURCE_DIR) + "/topologies";
}

std::vector<std::string> shipped_topology_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(topology_dir(), ec)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string resolve_topology_path(const std::string& name_or_path) {
  std::error_code ec;
  if (fs::exists(name_or_path, ec)) return name_or_path;
  const fs::path shipped = fs::path(topology_dir()) / (name_or_path + ".json");
  if (fs::exists(shipped, ec)) return shipped.string();
  const auto names = shipped_topology_names();
  throw InputError("--topology " + name_or_path + ": no such file, nor a shipped topology" + did_you_mean(name_or_path, names) +
                   "; shipped topologies (in " + topology_dir() + "): " + join(names));
}

}  // namespace gradsync::models
