#include "models/topology/topology.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <queue>
#include <set>
#include <unordered_set>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>

#include "models/support/error.h"
#include "models/support/units.h"

namespace gradsync::models {

namespace {
constexpr double kRouteProbeBytes = kMiB;  // routing cost of a link: latency + 1 MiB / bandwidth

const std::vector<std::pair<NodeKind, std::string>>& kind_table() {
  static const std::vector<std::pair<NodeKind, std::string>> table = {
      {NodeKind::gpu, "gpu"},
      {NodeKind::host_memory, "host_memory"},
      {NodeKind::cpu_socket, "cpu_socket"},
      {NodeKind::nic, "nic"},
      {NodeKind::pcie_switch, "pcie_switch"},
      {NodeKind::root_complex, "root_complex"},
      {NodeKind::nvswitch, "nvswitch"},
      {NodeKind::net_switch, "net_switch"},
  };
  return table;
}
}  // namespace

std::string to_string(NodeKind kind) {
  for (const auto& [k, name] : kind_table()) {
    if (k == kind) return name;
  }
  return "?";
}

std::optional<NodeKind> node_kind_from_string(const std::string& text) {
  for (const auto& [k, name] : kind_table()) {
    if (name == text) return k;
  }
  return std::nullopt;
}

std::vector<std::string> node_kind_names() {
  std::vector<std::string> names;
  for (const auto& entry : kind_table()) names.push_back(entry.second);
  return names;
}

bool forwards_traffic(NodeKind kind) { return kind != NodeKind::gpu && kind != NodeKind::host_memory; }

// --- the Boost graph ----------------------------------------------------------

struct EdgeData {
  std::size_t link;
  double cost;
};
using BoostGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property, EdgeData>;

struct Topology::Graph {
  BoostGraph g;
  std::vector<bool> forwards;  // per vertex
  // Each vertex's links in declaration order: incident[incident_first[v] .. incident_first[v + 1]).
  std::vector<std::size_t> incident_first, incident;
  // Dijkstra's maps for one route at a time, kept between routes: only the vertices a
  // search touched are reset after it (a 65,536-GPU ring asks 65,536 routes of a few hops
  // each on a graph of some 70,000 vertices: initialising every map for each would be N^2).
  std::vector<double> distance;
  std::vector<BoostGraph::vertex_descriptor> predecessor;
  std::vector<boost::default_color_type> color;
  std::vector<std::size_t> touched;
  std::vector<std::size_t> via;  // the link by which the search reached each vertex
  // The same for a search from both ends (large graphs): from the source, from the destination.
  struct Side {
    std::vector<double> distance;
    std::vector<std::size_t> via;
    std::vector<bool> settled;
  } sides[2];
  // When the links between forwarding nodes form a forest (trees of switches: PCIe trees, a
  // fat-tree drawn with one core), each forwarding node's link towards its tree's root and
  // its depth: between two endpoints of one link each, the route is then the one path
  // through the tree, found by climbing (no search).
  bool forest = false;
  std::vector<std::size_t> up_link;
  std::vector<std::size_t> depth;
};

namespace {
// An edge may be followed out of vertex u only when u forwards traffic or is the route's source.
struct OutOfForwarding {
  const BoostGraph* g = nullptr;
  const std::vector<bool>* forwards = nullptr;
  std::size_t source = 0;
  bool operator()(const BoostGraph::edge_descriptor& e) const {
    const auto u = boost::source(e, *g);
    return u == source || (*forwards)[u];
  }
};
}  // namespace

Topology::Topology(std::string name, std::vector<Node> nodes, std::vector<Link> links, std::string source)
    : name_(std::move(name)), source_(std::move(source)), nodes_(std::move(nodes)), links_(std::move(links)),
      graph_(std::make_unique<Graph>()) {
  if (nodes_.empty()) throw InputError(source_ + ": the topology has no nodes");
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].id.empty()) throw InputError(source_ + ": /nodes/" + std::to_string(i) + "/id: the id is empty");
    if (!index_.emplace(nodes_[i].id, i).second) {
      throw InputError(source_ + ": /nodes/" + std::to_string(i) + "/id: \"" + nodes_[i].id +
                       "\" is used by two nodes; expected unique ids");
    }
  }
  if (gpus().empty()) throw InputError(source_ + ": the topology has no node of kind \"gpu\"");

  // Vertices added in place: adjacency_list has no move assignment, and copying a temporary
  // in trips a false -Wmaybe-uninitialized inside Boost in some inlining contexts.
  for (std::size_t i = 0; i < nodes_.size(); ++i) boost::add_vertex(graph_->g);
  graph_->forwards.resize(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) graph_->forwards[i] = forwards_traffic(nodes_[i].kind);

  std::unordered_set<std::uint64_t> seen;  // each pair of nodes linked, smaller index first
  seen.reserve(links_.size());
  for (std::size_t i = 0; i < links_.size(); ++i) {
    const Link& l = links_[i];
    const std::string where = source_ + ": /links/" + std::to_string(i);
    if (l.a >= nodes_.size() || l.b >= nodes_.size()) throw InputError(where + ": refers to a node that does not exist");
    if (l.a == l.b) throw InputError(where + ": links \"" + nodes_[l.a].id + "\" to itself; expected two different nodes");
    if (!(l.bandwidth_Bps > 0) || !std::isfinite(l.bandwidth_Bps)) {
      throw InputError(where + "/bandwidth_GBps: got " + std::to_string(Bps_to_GBps(l.bandwidth_Bps)) +
                       "; expected a number greater than 0");
    }
    if (!(l.latency_s >= 0) || !std::isfinite(l.latency_s)) {
      throw InputError(where + "/latency_us: got " + std::to_string(s_to_us(l.latency_s)) + "; expected a number of at least 0");
    }
    if (!seen.insert((static_cast<std::uint64_t>(std::min(l.a, l.b)) << 32) | std::max(l.a, l.b)).second) {
      throw InputError(where + ": a second link between \"" + nodes_[l.a].id + "\" and \"" + nodes_[l.b].id +
                       "\"; expected one link per pair (give bonded links as one link with their summed bandwidth)");
    }
    boost::add_edge(l.a, l.b, EdgeData{i, l.latency_s + kRouteProbeBytes / l.bandwidth_Bps}, graph_->g);
  }

  {
    std::vector<std::size_t>& first = graph_->incident_first;
    first.assign(nodes_.size() + 1, 0);
    for (const Link& l : links_) {
      ++first[l.a + 1];
      ++first[l.b + 1];
    }
    for (std::size_t v = 0; v < nodes_.size(); ++v) first[v + 1] += first[v];
    std::vector<std::size_t> next(first.begin(), first.end() - 1);
    graph_->incident.resize(2 * links_.size());
    for (std::size_t i = 0; i < links_.size(); ++i) {
      graph_->incident[next[links_[i].a]++] = i;
      graph_->incident[next[links_[i].b]++] = i;
    }
  }

  // Connected?
  std::vector<int> component(nodes_.size());
  const int components = boost::connected_components(graph_->g, component.data());
  if (components > 1) {
    std::vector<std::string> cut_off;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (component[i] != component[0]) cut_off.push_back(nodes_[i].id);
    }
    if (cut_off.size() > 6) {
      cut_off.resize(6);
      cut_off.push_back("...");
    }
    throw InputError(source_ + ": the graph is disconnected: " + join(cut_off) + " cannot reach \"" + nodes_[0].id +
                     "\"; expected every node to be linked");
  }

  // Every pair of endpoints must be routable through forwarding nodes (or a direct link).
  // Union-find over links between forwarding nodes; an endpoint reaches the components of
  // its forwarding neighbours.
  std::vector<std::size_t> parent(nodes_.size());
  for (std::size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  auto find_root = [&](std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  bool forest = true;
  for (const Link& l : links_) {
    if (!(graph_->forwards[l.a] && graph_->forwards[l.b])) continue;
    const std::size_t ra = find_root(l.a), rb = find_root(l.b);
    if (ra == rb) forest = false;  // a cycle among forwarding nodes
    parent[ra] = rb;
  }
  if (forest) index_forest();
  std::vector<std::size_t> endpoints;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!graph_->forwards[i]) endpoints.push_back(i);
  }
  std::vector<std::set<std::size_t>> reach(nodes_.size());
  for (const Link& l : links_) {
    if (graph_->forwards[l.b]) reach[l.a].insert(find_root(l.b));
    if (graph_->forwards[l.a]) reach[l.b].insert(find_root(l.a));
  }
  // Fast path: one component touched by every endpoint.
  std::set<std::size_t> common = endpoints.empty() ? std::set<std::size_t>() : reach[endpoints[0]];
  for (std::size_t e : endpoints) {
    std::set<std::size_t> kept;
    for (std::size_t c : common) {
      if (reach[e].count(c)) kept.insert(c);
    }
    common.swap(kept);
  }
  if (common.empty()) {
    std::vector<std::set<std::size_t>> direct(nodes_.size());
    for (const Link& l : links_) {
      direct[l.a].insert(l.b);
      direct[l.b].insert(l.a);
    }
    for (std::size_t x = 0; x < endpoints.size(); ++x) {
      for (std::size_t y = x + 1; y < endpoints.size(); ++y) {
        const std::size_t a = endpoints[x], b = endpoints[y];
        bool ok = direct[a].count(b) > 0;
        for (std::size_t c : reach[a]) ok = ok || reach[b].count(c) > 0;
        if (!ok) {
          throw InputError(source_ + ": no route from \"" + nodes_[a].id + "\" to \"" + nodes_[b].id +
                           "\" that crosses only switches, root complexes, CPU sockets or NICs (GPUs and host memory "
                           "do not forward traffic); expected a path between them");
        }
      }
    }
  }
}

Topology::~Topology() = default;
Topology::Topology(Topology&& other) noexcept
    : name_(std::move(other.name_)), description_(std::move(other.description_)), source_(std::move(other.source_)),
      nodes_(std::move(other.nodes_)), links_(std::move(other.links_)), index_(std::move(other.index_)),
      graph_(std::move(other.graph_)), measured_(std::move(other.measured_)),
      measured_gpu_(std::move(other.measured_gpu_)) {}
Topology& Topology::operator=(Topology&& other) noexcept {
  if (this != &other) {
    name_ = std::move(other.name_);
    description_ = std::move(other.description_);
    source_ = std::move(other.source_);
    nodes_ = std::move(other.nodes_);
    links_ = std::move(other.links_);
    index_ = std::move(other.index_);
    graph_ = std::move(other.graph_);
    measured_ = std::move(other.measured_);
    measured_gpu_ = std::move(other.measured_gpu_);
    std::lock_guard<std::mutex> lock(cache_mutex_);
    predecessor_cache_.clear();
    memo_.clear();
    route_cache_.clear();
    requests_from_.clear();
  }
  return *this;
}

std::optional<std::size_t> Topology::find(const std::string& id) const {
  auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

std::size_t Topology::require(const std::string& id, const std::string& context) const {
  if (auto i = find(id)) return *i;
  std::vector<std::string> ids;
  for (const auto& n : nodes_) ids.push_back(n.id);
  std::vector<std::string> shown = ids;
  if (shown.size() > 12) {
    shown.resize(12);
    shown.push_back("...");
  }
  throw InputError(context + ": \"" + id + "\" is not a node of topology \"" + name_ + "\"" + did_you_mean(id, ids) +
                   "; nodes: " + join(shown));
}

std::vector<std::size_t> Topology::nodes_of_kind(NodeKind kind) const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].kind == kind) out.push_back(i);
  }
  return out;
}
std::vector<std::size_t> Topology::gpus() const { return nodes_of_kind(NodeKind::gpu); }
std::vector<std::size_t> Topology::host_memories() const { return nodes_of_kind(NodeKind::host_memory); }

namespace {
struct ReachedTarget {};  // thrown to stop Dijkstra once the destination is settled
}  // namespace

namespace {
// Records the vertices a search reached (to reset their maps after it) and stops it once the
// destination is settled.
struct TouchAndStop : boost::default_dijkstra_visitor {
  std::size_t target;
  std::vector<std::size_t>* touched;
  std::vector<std::size_t>* via;
  template <class Vertex, class G>
  void discover_vertex(Vertex u, const G&) const {
    touched->push_back(u);
  }
  template <class Edge, class G>
  void edge_relaxed(Edge e, const G& g) const {
    (*via)[boost::target(e, g)] = g[e].link;
  }
  template <class Vertex, class G>
  void examine_vertex(Vertex u, const G&) const {
    if (u == target) throw ReachedTarget{};
  }
};
}  // namespace

void Topology::index_forest() {
  Graph& graph = *graph_;
  const std::size_t n = nodes_.size(), none = std::numeric_limits<std::size_t>::max();
  graph.up_link.assign(n, none);
  graph.depth.assign(n, none);
  std::vector<std::size_t> queue;
  for (std::size_t root = 0; root < n; ++root) {
    if (!graph.forwards[root] || graph.depth[root] != none) continue;
    graph.depth[root] = 0;
    queue.assign(1, root);
    for (std::size_t k = 0; k < queue.size(); ++k) {
      const std::size_t u = queue[k];
      for (auto [e, end] = boost::out_edges(u, graph.g); e != end; ++e) {
        const std::size_t v = boost::target(*e, graph.g);
        if (!graph.forwards[v] || graph.depth[v] != none) continue;
        graph.depth[v] = graph.depth[u] + 1;
        graph.up_link[v] = graph.g[*e].link;
        queue.push_back(v);
      }
    }
  }
  graph.forest = true;
}

std::optional<Route> Topology::forest_route(std::size_t a, std::size_t b) const {
  const Graph& graph = *graph_;
  if (!graph.forest || graph.forwards[a] || graph.forwards[b]) return std::nullopt;
  if (boost::out_degree(a, graph.g) != 1 || boost::out_degree(b, graph.g) != 1) return std::nullopt;
  const auto only_link = [&](std::size_t x) { return graph.g[*boost::out_edges(x, graph.g).first].link; };
  const std::size_t la = only_link(a), lb = only_link(b);
  const std::size_t u = links_[la].a == a ? links_[la].b : links_[la].a;
  const std::size_t v = links_[lb].a == b ? links_[lb].b : links_[lb].a;
  if (!graph.forwards[u] || !graph.forwards[v]) return std::nullopt;
  // Climb from the deeper side until both meet: u's hops go up, v's are walked back down.
  const auto other = [&](std::size_t link, std::size_t x) { return links_[link].a == x ? links_[link].b : links_[link].a; };
  Route up{Hop{la, links_[la].a == a}}, down{Hop{lb, links_[lb].a != b}};
  std::size_t x = u, y = v;
  while (x != y) {
    if (graph.depth[x] >= graph.depth[y]) {
      const std::size_t link = graph.up_link[x];
      if (link == std::numeric_limits<std::size_t>::max()) return std::nullopt;  // different trees
      up.push_back(Hop{link, links_[link].a == x});
      x = other(link, x);
    } else {
      const std::size_t link = graph.up_link[y];
      if (link == std::numeric_limits<std::size_t>::max()) return std::nullopt;
      down.push_back(Hop{link, links_[link].a != y});
      y = other(link, y);
    }
  }
  up.insert(up.end(), down.rbegin(), down.rend());
  return up;
}

std::optional<std::vector<int>> Topology::remembered(const std::vector<std::size_t>& key) const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  auto it = memo_.find(key);
  if (it == memo_.end()) return std::nullopt;
  return it->second;
}

void Topology::remember(const std::vector<std::size_t>& key, std::vector<int> value) const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  memo_.emplace(key, std::move(value));
}

std::span<const std::size_t> Topology::incident_links(std::size_t node) const {
  const std::vector<std::size_t>& first = graph_->incident_first;
  if (node + 1 >= first.size()) throw std::out_of_range("Topology::incident_links: node index");
  return {graph_->incident.data() + first[node], first[node + 1] - first[node]};
}

Route Topology::meet_in_the_middle(std::size_t a, std::size_t b) const {
  Graph& graph = *graph_;
  const BoostGraph& g = graph.g;
  const std::size_t n = boost::num_vertices(g), none = std::numeric_limits<std::size_t>::max();
  const double inf = std::numeric_limits<double>::infinity();
  auto& side = graph.sides;
  if (side[0].distance.size() != n) {
    for (auto& s : side) {
      s.distance.assign(n, inf);
      s.via.assign(n, none);
      s.settled.assign(n, false);
    }
  }
  using Entry = std::pair<double, std::size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue[2];
  const std::size_t source[2] = {a, b};
  graph.touched.clear();
  for (int k = 0; k < 2; ++k) {
    side[k].distance[source[k]] = 0;
    queue[k].push({0.0, source[k]});
    graph.touched.push_back(source[k]);
  }
  double best = inf;
  std::size_t meet = none;
  while (!queue[0].empty() && !queue[1].empty() && queue[0].top().first + queue[1].top().first < best) {
    const int k = queue[0].top().first <= queue[1].top().first ? 0 : 1;
    const auto [d, u] = queue[k].top();
    queue[k].pop();
    if (side[k].settled[u] || d > side[k].distance[u]) continue;
    side[k].settled[u] = true;
    if (u != source[k] && !graph.forwards[u]) continue;  // endpoints do not forward
    for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) {
      const std::size_t v = boost::target(*e, g);
      const double nd = d + g[*e].cost;
      if (nd < side[k].distance[v]) {
        if (side[0].distance[v] == inf && side[1].distance[v] == inf) graph.touched.push_back(v);
        side[k].distance[v] = nd;
        side[k].via[v] = g[*e].link;
        queue[k].push({nd, v});
      }
      // A path through v: v forwards, or v is where the other search started.
      if ((graph.forwards[v] || v == source[1 - k]) && side[1 - k].distance[v] < inf &&
          side[k].distance[v] + side[1 - k].distance[v] < best) {
        best = side[k].distance[v] + side[1 - k].distance[v];
        meet = v;
      }
    }
  }
  Route r;
  if (meet != none) {
    const auto other = [&](std::size_t link, std::size_t x) { return links_[link].a == x ? links_[link].b : links_[link].a; };
    for (std::size_t v = meet; v != a;) {  // back to a, reversed below
      const std::size_t link = side[0].via[v];
      const std::size_t prev = other(link, v);
      r.push_back(Hop{link, links_[link].a == prev});
      v = prev;
    }
    std::reverse(r.begin(), r.end());
    for (std::size_t v = meet; v != b;) {  // on to b
      const std::size_t link = side[1].via[v];
      const std::size_t next = other(link, v);
      r.push_back(Hop{link, links_[link].a == v});
      v = next;
    }
  }
  for (std::size_t v : graph.touched) {
    for (auto& s : side) {
      s.distance[v] = inf;
      s.via[v] = none;
      s.settled[v] = false;
    }
  }
  if (meet == none) {
    throw InputError("topology \"" + name_ + "\": no route from \"" + nodes_[a].id + "\" to \"" + nodes_[b].id + "\"");
  }
  return r;
}

Route Topology::route_within(std::size_t a, std::size_t b) const {
  // Dijkstra on the links' routing cost that never enters a network switch: it stays in the
  // host, a few dozen nodes even on the largest clusters.
  std::unordered_map<std::size_t, std::pair<double, std::size_t>> best;  // node -> (cost, link it came by)
  using Entry = std::pair<double, std::size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  best[a] = {0.0, std::numeric_limits<std::size_t>::max()};
  queue.push({0.0, a});
  while (!queue.empty()) {
    const auto [d, u] = queue.top();
    queue.pop();
    if (d > best[u].first) continue;
    if (u == b) break;
    if (u != a && !forwards_traffic(nodes_[u].kind)) continue;
    for (const std::size_t li : incident_links(u)) {
      const Link& l = links_[li];
      const std::size_t v = l.a == u ? l.b : l.a;
      if (nodes_[v].kind == NodeKind::net_switch && v != b) continue;
      const double nd = d + l.latency_s + kRouteProbeBytes / l.bandwidth_Bps;
      auto it = best.find(v);
      if (it == best.end() || nd < it->second.first) {
        best[v] = {nd, li};
        queue.push({nd, v});
      }
    }
  }
  if (!best.count(b)) throw InputError("topology \"" + name_ + "\": no route from \"" + nodes_[a].id + "\" to \"" + nodes_[b].id + "\" within a host");
  Route r;
  for (std::size_t v = b; v != a;) {
    const std::size_t li = best[v].second;
    const Link& l = links_[li];
    const std::size_t prev = l.a == v ? l.b : l.a;
    r.push_back(Hop{li, l.a == prev});
    v = prev;
  }
  std::reverse(r.begin(), r.end());
  return r;
}

Route Topology::single_route(std::size_t a, std::size_t b) const {
  Graph& graph = *graph_;
  const BoostGraph& g = graph.g;
  const std::size_t n = boost::num_vertices(g);
  if (n > kSearchBothEndsAbove) return meet_in_the_middle(a, b);
  if (graph.distance.size() != n) {
    graph.distance.assign(n, std::numeric_limits<double>::infinity());
    graph.predecessor.resize(n);
    for (std::size_t v = 0; v < n; ++v) graph.predecessor[v] = v;
    graph.color.assign(n, boost::white_color);
    graph.via.assign(n, std::numeric_limits<std::size_t>::max());
  }
  OutOfForwarding filter{&g, &graph.forwards, a};
  boost::filtered_graph<BoostGraph, OutOfForwarding> fg(g, filter);
  const auto index = boost::get(boost::vertex_index, g);
  graph.touched.clear();
  graph.touched.push_back(a);
  graph.distance[a] = 0;
  try {
    boost::dijkstra_shortest_paths_no_init(
        fg, a, boost::make_iterator_property_map(graph.predecessor.begin(), index),
        boost::make_iterator_property_map(graph.distance.begin(), index), boost::get(&EdgeData::cost, g), index,
        std::less<double>(), boost::closed_plus<double>(), 0.0, TouchAndStop{{}, b, &graph.touched, &graph.via},
        boost::make_iterator_property_map(graph.color.begin(), index));
  } catch (const ReachedTarget&) {
  }
  Route r;
  const bool reached = std::isfinite(graph.distance[b]) && (b == a || graph.predecessor[b] != b);
  for (std::size_t v = b; reached && v != a;) {
    const std::size_t prev = graph.predecessor[v];
    const std::size_t link = graph.via[v];
    const Link& l = links_[link];
    r.push_back(Hop{link, l.a == prev});
    v = prev;
  }
  for (std::size_t v : graph.touched) {
    graph.distance[v] = std::numeric_limits<double>::infinity();
    graph.predecessor[v] = v;
    graph.color[v] = boost::white_color;
  }
  if (!reached) {
    throw InputError("topology \"" + name_ + "\": no route from \"" + nodes_[a].id + "\" to \"" + nodes_[b].id + "\"");
  }
  std::reverse(r.begin(), r.end());
  return r;
}

std::vector<std::size_t> Topology::shortest_paths(std::size_t source) const {
  const BoostGraph& g = graph_->g;
  OutOfForwarding filter{&g, &graph_->forwards, source};
  boost::filtered_graph<BoostGraph, OutOfForwarding> fg(g, filter);
  const std::size_t n = boost::num_vertices(g);
  std::vector<BoostGraph::vertex_descriptor> pred(n);
  std::vector<double> dist(n, std::numeric_limits<double>::infinity());
  boost::dijkstra_shortest_paths(fg, source,
                                 boost::predecessor_map(boost::make_iterator_property_map(pred.begin(), boost::get(boost::vertex_index, g)))
                                     .distance_map(boost::make_iterator_property_map(dist.begin(), boost::get(boost::vertex_index, g)))
                                     .weight_map(boost::get(&EdgeData::cost, g)));
  // The link used to arrive at each vertex (npos: none, or not settled).
  std::vector<std::size_t> via(n, std::numeric_limits<std::size_t>::max());
  for (std::size_t v = 0; v < n; ++v) {
    if (v == source || pred[v] == v || !std::isfinite(dist[v])) continue;
    for (auto [e, end] = boost::out_edges(pred[v], g); e != end; ++e) {
      if (boost::target(*e, g) == v) via[v] = g[*e].link;  // one link per pair of nodes
    }
  }
  return via;
}

const Route& Topology::route(std::size_t a, std::size_t b) const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  const std::uint64_t key = (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint64_t>(b);
  auto it = route_cache_.find(key);
  if (it != route_cache_.end()) return it->second;
  if (a >= nodes_.size() || b >= nodes_.size()) throw std::out_of_range("Topology::route: node index");
  Route r;
  if (a != b) {
    // A source asked for many destinations keeps its whole shortest-path tree; otherwise
    // Dijkstra stops as soon as the destination is settled (a ring asks one per source).
    const std::vector<std::size_t>* tree = nullptr;
    auto cached = predecessor_cache_.find(a);
    if (cached != predecessor_cache_.end()) {
      tree = &cached->second;
    } else if (++requests_from_[a] > std::max(kRoutesBeforeTree, nodes_.size() / kNodesPerTreeRoute)) {
      tree = &predecessor_cache_.emplace(a, shortest_paths(a)).first->second;
    } else {
      if (auto r = forest_route(a, b)) return route_cache_.emplace(key, std::move(*r)).first->second;
    return route_cache_.emplace(key, single_route(a, b)).first->second;
    }
    const auto& via = *tree;
    std::size_t v = b;
    while (v != a) {
      const std::size_t link = via[v];
      if (link == std::numeric_limits<std::size_t>::max()) {
        throw InputError("topology \"" + name_ + "\": no route from \"" + nodes_[a].id + "\" to \"" + nodes_[b].id + "\"");
      }
      const Link& l = links_[link];
      const std::size_t prev = (l.a == v) ? l.b : l.a;
      r.push_back(Hop{link, l.a == prev});
      v = prev;
    }
    std::reverse(r.begin(), r.end());
  }
  return route_cache_.emplace(key, std::move(r)).first->second;
}

const Route& Topology::route_through(std::size_t a, std::size_t first, std::size_t second, std::size_t b) const {
  const std::array<std::size_t, 4> key{a, first, second, b};
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (auto it = through_cache_.find(key); it != through_cache_.end()) return it->second;
  }
  Route r;
  std::size_t at = a;
  auto leg = [&](std::size_t next, bool inside) {
    if (next == at) return;
    const Route part = inside ? route_within(at, next) : route(at, next);
    r.insert(r.end(), part.begin(), part.end());
    at = next;
  };
  if (first != npos) leg(first, true);  // a to the first chosen node within its host
  if (second != npos) {
    leg(second, false);
    leg(b, true);  // from the last chosen node to b within b's host
  } else {
    leg(b, false);
  }
  std::lock_guard<std::mutex> lock(cache_mutex_);
  return through_cache_.emplace(key, std::move(r)).first->second;
}

double Topology::latency_s(const Route& route) const {
  double lat = 0;
  for (const Hop& h : route) lat += links_[h.link].latency_s;
  return lat;
}

double Topology::route_bottleneck_Bps(std::size_t a, std::size_t b) const {
  double bw = std::numeric_limits<double>::infinity();
  for (const Hop& h : route(a, b)) bw = std::min(bw, links_[h.link].bandwidth_Bps);
  return bw;
}

double Topology::route_latency_s(std::size_t a, std::size_t b) const { return latency_s(route(a, b)); }

void Topology::attach_measurements(MatrixForm measured) {
  measured_gpu_.assign(nodes_.size(), std::nullopt);
  for (std::size_t i = 0; i < measured.gpus.size(); ++i) {
    if (auto n = find(measured.gpus[i])) measured_gpu_[*n] = i;
  }
  measured_ = std::move(measured);
}

std::optional<double> Topology::measured_pair(std::size_t a, std::size_t b, bool latency) const {
  if (!measured_ || a >= measured_gpu_.size() || b >= measured_gpu_.size()) return std::nullopt;
  const auto& i = measured_gpu_[a];
  const auto& j = measured_gpu_[b];
  if (!i || !j || *i == *j) return std::nullopt;
  if (latency) {
    if (!measured_->latency_s) return std::nullopt;
    return measured_->latency_s->at(*i, *j);
  }
  return measured_->bandwidth_Bps.at(*i, *j);
}

std::optional<double> Topology::staged_copy_Bps(std::size_t a, std::size_t b) const {
  if (!measured_ || measured_->nominal || !measured_->p2p_supported || a >= measured_gpu_.size() || b >= measured_gpu_.size()) {
    return std::nullopt;
  }
  const auto& i = measured_gpu_[a];
  const auto& j = measured_gpu_[b];
  if (!i || !j || *i == *j) return std::nullopt;
  const auto& p2p = *measured_->p2p_supported;
  if (*i >= p2p.size() || *j >= p2p.size() || (p2p[*i][*j] && p2p[*j][*i])) return std::nullopt;
  return measured_->bandwidth_Bps.at(*i, *j);
}

double Topology::bottleneck_Bps(std::size_t a, std::size_t b) const {
  if (auto m = measured_pair(a, b, false)) return *m;
  return route_bottleneck_Bps(a, b);
}

double Topology::latency_s(std::size_t a, std::size_t b) const {
  if (auto m = measured_pair(a, b, true)) return *m;
  return route_latency_s(a, b);
}

}  // namespace gradsync::models
