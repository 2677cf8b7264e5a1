#include "models/topology/uniform_topologies.h"

#include "models/support/units.h"

namespace gradsync::models {

namespace {
Link make_link(std::size_t a, std::size_t b, const UniformLink& l, const std::string& label = "") {
  return Link{a, b, GBps_to_Bps(l.GBps), us_to_s(l.latency_us), true, label};
}
}  // namespace

Topology star_topology(const StarSpec& s) {
  std::vector<Node> nodes = {{s.hub_id, s.hub}};
  std::vector<Link> links;
  if (s.host) {
    nodes.push_back({s.host_id, NodeKind::host_memory});
    links.push_back(make_link(0, 1, *s.host, s.label));
  }
  for (int g = 0; g < s.gpus; ++g) {
    nodes.push_back({s.gpu_prefix + std::to_string(g), NodeKind::gpu});
    links.push_back(make_link(0, nodes.size() - 1, s.gpu_link, s.label));
  }
  Topology t(s.name, std::move(nodes), std::move(links), "generated star");
  if (!s.description.empty()) t.set_description(s.description);
  return t;
}

Topology tree_topology(const TreeSpec& s) {
  std::vector<Node> nodes = {{"root", NodeKind::root_complex}};
  std::vector<Link> links;
  if (s.host) {
    nodes.push_back({"host", NodeKind::host_memory});
    links.push_back(make_link(0, 1, *s.host));
  }
  const std::size_t first_switch = nodes.size();
  for (int w = 0; w < s.switches; ++w) {
    nodes.push_back({"sw" + std::to_string(w), NodeKind::pcie_switch});
    links.push_back(make_link(0, nodes.size() - 1, s.uplink));
  }
  for (int g = 0; g < s.switches * s.per_switch; ++g) {
    nodes.push_back({"gpu" + std::to_string(g), NodeKind::gpu});
    links.push_back(make_link(first_switch + static_cast<std::size_t>(g / s.per_switch), nodes.size() - 1, s.gpu_link));
  }
  return Topology(s.name, std::move(nodes), std::move(links), "generated tree");
}

Topology mesh_topology(const std::string& name, int gpus, const std::function<UniformLink(int a, int b)>& link) {
  std::vector<Node> nodes;
  std::vector<Link> links;
  for (int g = 0; g < gpus; ++g) nodes.push_back({"gpu" + std::to_string(g), NodeKind::gpu});
  for (int a = 0; a < gpus; ++a) {
    for (int b = a + 1; b < gpus; ++b) links.push_back(make_link(static_cast<std::size_t>(a), static_cast<std::size_t>(b), link(a, b)));
  }
  return Topology(name, std::move(nodes), std::move(links), "generated mesh");
}

Topology flat_topology(int gpus, double GBps, double latency_us) {
  StarSpec s;
  s.name = "flat-" + std::to_string(gpus);
  s.gpus = gpus;
  s.gpu_link = {GBps, latency_us / 2};
  s.host = UniformLink{GBps, latency_us / 2};
  s.label = "flat";
  Topology t = star_topology(s);
  return t;
}

}  // namespace gradsync::models
