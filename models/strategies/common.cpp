#include "models/strategies/common.h"

#include <algorithm>
#include <limits>

#include "models/support/error.h"
#include "models/executors/result.h"
#include "models/topology/importers/nccl_tests.h"
#include "models/topology/ring_order.h"

namespace gradsync::models::strategies {

ParamSpec server_param() {
  ParamSpec p{"server", "auto",
              "where the parameter server lives: host (host memory), rank<i>, or a node id; auto: host memory when the "
              "topology has it (as in source A), else rank0"};
  p.domain = word_domain({}, true);
  p.domain.values = [](const ParamContext& c) {
    std::vector<std::string> out;
    for (int r = 0; r < c.placement.size(); ++r) out.push_back("rank" + std::to_string(r));
    if (!c.topology.host_memories().empty()) out.push_back("host");
    for (std::size_t h : c.topology.host_memories()) out.push_back(c.topology.node(h).id);
    for (std::size_t g : c.topology.gpus()) out.push_back(c.topology.node(g).id);
    return out;
  };
  p.domain.values_text = [](const ParamContext& c) {
    return "rank0 to rank" + std::to_string(c.placement.size() - 1) +
           (c.topology.host_memories().empty() ? "" : ", host") + " or the id of a GPU or host memory of " + c.topology.name();
  };
  // A search puts the server in host memory or on one of the ranks' GPUs. On a cluster
  // that is thousands of places, each predicted with every other parameter searched: past
  // kMostServers, places spread evenly over that list (host memories first, then the
  // ranks' GPUs in rank order).
  p.search = [](const ParamContext& c) {
    constexpr std::size_t kMostServers = 16;
    std::vector<std::string> out;
    for (std::size_t h : c.topology.host_memories()) out.push_back(c.topology.node(h).id);
    for (std::size_t g : c.placement.ranks) out.push_back(c.topology.node(g).id);
    if (out.size() > kMostServers) {
      std::vector<std::string> spread;
      for (std::size_t i = 0; i < kMostServers; ++i) spread.push_back(out[i * out.size() / kMostServers]);
      out = std::move(spread);
    }
    return out;
  };
  p.resolved = true;
  p.shown = ParamSpec::Shown::when_resolved;
  return p;
}

ParamSpec k_param() {
  ParamSpec p{"k", "auto", "number of groups (must divide N); auto: one group per switch above the ranks"};
  p.domain = integer_domain(1, 2147483647, 0, true);
  p.domain.values = [](const ParamContext& c) {
    std::vector<std::string> out;
    for (int k = 1; k <= c.placement.size(); ++k) {
      if (c.placement.size() % k == 0) out.push_back(std::to_string(k));
    }
    return out;
  };
  p.domain.values_text = [](const ParamContext& c) {
    std::vector<std::string> divisors;
    for (int k = 1; k <= c.placement.size(); ++k) {
      if (c.placement.size() % k == 0) divisors.push_back(std::to_string(k));
    }
    return "a number of groups that divides N = " + std::to_string(c.placement.size()) + " (" + join(divisors) + ")";
  };
  // auto, and every k that splits the ranks into groups of at least two (k = 1 is a ring, k = N a ring of groups of one).
  p.search = [](const ParamContext& c) {
    std::vector<std::string> out = {"auto"};
    const int n = c.placement.size();
    for (int k = 2; k < n; ++k) {
      if (n % k == 0) out.push_back(std::to_string(k));
    }
    return out;
  };
  p.resolved = true;
  p.shown = ParamSpec::Shown::when_resolved;
  return p;
}

ParamSpec grouping_param() {
  ParamSpec p{"grouping", "switch",
              "how ranks form groups: switch (ranks behind one switch together), speed (source B's queue: ranks of similar "
              "measured speed together; needs speeds), order (consecutive ranks)"};
  p.domain = word_domain({"switch", "speed", "order"});
  p.needs = {{"speed", "speeds"}};
  p.search = [](const ParamContext&) { return std::vector<std::string>{"switch", "order"}; };  // speed needs measured speeds
  return p;
}

ParamSpec speeds_param() {
  ParamSpec p{"speeds", "", "measured speed of each rank for grouping=speed, comma-separated (larger = faster)"};
  p.domain = real_domain(0, std::numeric_limits<double>::infinity(), false, true, 10);
  p.domain.kind = ParamDomain::Kind::per_rank;
  return p;
}

ParamSpec ring_order_param(bool searched) {
  ParamSpec p{"ring_order", "auto",
              "order of the ranks around a ring: auto (the order with the widest bottleneck and fewest shared links), given "
              "(rank order), or positions i,j,k,..."};
  p.domain = word_domain({"given"}, true);
  p.domain.kind = ParamDomain::Kind::permutation;
  if (searched) p.search = [](const ParamContext&) { return std::vector<std::string>{"auto", "given"}; };
  return p;
}

ParamSpec inner_param(const std::string& default_inner, const std::string& help) {
  ParamSpec p{"inner", default_inner, help};
  p.shown = ParamSpec::Shown::always;
  return p;
}

std::string changes_by_period(const ResultRecord& r) {
  return r.period_steps > 1 ? "synchronises every " + std::to_string(r.period_steps) + " steps" : "";
}

Schedule start_schedule(const std::string& strategy, const StrategyContext& ctx) {
  Schedule s;
  s.strategy = strategy;
  s.workers = ctx.N();
  s.element_bytes = ctx.element_bytes;
  s.gradient_bytes = ctx.elements * static_cast<std::uint64_t>(ctx.element_bytes);
  for (std::size_t node : ctx.placement.ranks) s.participants.push_back({Role::worker, node, ctx.costs_at(node)});
  return s;
}

int add_server(Schedule& s, const StrategyContext& ctx) {
  const std::size_t node = ctx.server_node();
  s.participants.push_back({Role::server, node, ctx.costs_at(node)});
  return s.participant_count() - 1;
}

std::vector<int> all_workers(const Schedule& s) {
  std::vector<int> w(static_cast<std::size_t>(s.workers));
  for (int i = 0; i < s.workers; ++i) w[static_cast<std::size_t>(i)] = i;
  return w;
}

std::vector<int> ring_of_ranks(const StrategyContext& ctx) {
  return ring_order_from_param(ctx.topology, ctx.placement.ranks, ctx.params.text("ring_order"));
}

std::vector<std::vector<int>> groups_of_ranks(const StrategyContext& ctx) {
  std::vector<double> speeds;
  const std::string& text = ctx.params.text("speeds");
  if (!text.empty()) {
    for (const auto& item : split_list(text, "--param speeds")) {
      char* end = nullptr;
      const double v = std::strtod(item.c_str(), &end);
      if (*end != '\0' || !(v > 0)) throw InputError("--param speeds=" + text + ": \"" + item + "\" is not a positive speed");
      speeds.push_back(v);
    }
  }
  const std::string& by = ctx.params.text("grouping");
  if (by == "speed" && speeds.size() != static_cast<std::size_t>(ctx.N())) {
    throw InputError("--param grouping=speed needs --param speeds with one value per rank (" + std::to_string(ctx.N()) +
                     "), got " + std::to_string(speeds.size()));
  }
  auto groups = group_ranks(ctx.topology, ctx.placement.ranks, ctx.groups(), by, speeds);
  // Order each group around its ring as the ring_order parameter says.
  if (ctx.params.text("ring_order") == "auto") {
    std::vector<std::vector<std::size_t>> nodes(groups.size());
    for (std::size_t i = 0; i < groups.size(); ++i) {
      for (int r : groups[i]) nodes[i].push_back(ctx.placement.ranks[static_cast<std::size_t>(r)]);
    }
    const auto orders = best_ring_orders(ctx.topology, nodes);
    for (std::size_t i = 0; i < groups.size(); ++i) {
      std::vector<int> reordered;
      for (int pos : orders[i]) reordered.push_back(groups[i][static_cast<std::size_t>(pos)]);
      groups[i] = reordered;
    }
  }
  return groups;
}

namespace {
// position of each participant in its ring (-1: not in any), and which ring.
struct RingIndex {
  std::vector<int> ring, position;
  int m = 0;
};
std::shared_ptr<const RingIndex> index_rings(const Schedule& s, const Rings& rings) {
  auto idx = std::make_shared<RingIndex>();
  idx->ring.assign(static_cast<std::size_t>(s.participant_count()), -1);
  idx->position.assign(static_cast<std::size_t>(s.participant_count()), -1);
  idx->m = rings.empty() ? 0 : static_cast<int>(rings.front().size());
  for (std::size_t r = 0; r < rings.size(); ++r) {
    if (static_cast<int>(rings[r].size()) != idx->m) throw std::logic_error("rings of different sizes");
    for (std::size_t j = 0; j < rings[r].size(); ++j) {
      idx->ring[static_cast<std::size_t>(rings[r][j])] = static_cast<int>(r);
      idx->position[static_cast<std::size_t>(rings[r][j])] = static_cast<int>(j);
    }
  }
  return idx;
}
}  // namespace

namespace {
// One ring pass of source A's Algorithm 1, m-1 rounds. Reduce-scatter (phase 1): position
// `id` sends block (i + id) mod m and adds the one it receives into block (i + id - 1) mod m.
// All-gather (phase 2): sends block (i + id + 1) mod m, overwrites block (i + id) mod m.
void add_ring_pass(Schedule& s, const Rings& rings, Region region, bool reduce, const std::string& phase,
                   const std::string& compute_phase) {
  auto idx = index_rings(s, rings);
  auto members = std::make_shared<const Rings>(rings);
  const int m = idx->m;
  const int shift = reduce ? 0 : 1;
  // With equal blocks every step moves the same bytes between the same neighbours; with
  // unequal ones the same bytes turned along the ring.
  const int first = static_cast<int>(s.rounds.size());
  const bool equal_blocks = m > 0 && region.elements % static_cast<std::uint64_t>(m) == 0;
  for (int i = m; i >= 2; --i) {  // Algorithm 1: for i = N ... 2
    s.rounds.push_back(Round{phase, compute_phase, [idx, members, region, m, i, shift, reduce](int p, std::vector<Op>& out) {
                               // Participants added after these rounds (a server) take no part.
                               if (static_cast<std::size_t>(p) >= idx->ring.size()) return;
                               const int ring = idx->ring[static_cast<std::size_t>(p)];
                               if (ring < 0) return;
                               const int id = idx->position[static_cast<std::size_t>(p)];
                               const auto& members_of = (*members)[static_cast<std::size_t>(ring)];
                               const int next = members_of[static_cast<std::size_t>((id + 1) % m)];
                               const int prev = members_of[static_cast<std::size_t>((id + m - 1) % m)];
                               const Slice sent = block(region.base, region.elements, m, (i + id + shift) % m, region.element_bytes);
                               const Slice got = block(region.base, region.elements, m, (i + id + shift - 1) % m, region.element_bytes);
                               out.push_back(Op::send(next, sent));
                               out.push_back(reduce ? Op::recv_reduce(prev, got) : Op::recv(prev, got));
                             }});
    // Unequal blocks: step i is the first step turned by i along the rings (position id
    // sends block (i + id + shift) mod m, which position (id + i) mod m sent first).
    if (i < m) {
      s.rounds.back().same_as = first;
      if (!equal_blocks) {
        s.rounds.back().rotated_along = members;
        s.rounds.back().rotated_by = i % m;
      }
    }
  }
}
}  // namespace

void add_ring_reduce_scatter(Schedule& s, const Rings& rings, Region region, const std::string& phase,
                             const std::string& compute_phase) {
  add_ring_pass(s, rings, region, true, phase, compute_phase);
}

void add_ring_all_gather(Schedule& s, const Rings& rings, Region region, const std::string& phase) {
  add_ring_pass(s, rings, region, false, phase, "");
}

Groups add_group_all_reduce(Schedule& s, const Rings& groups, Region region) {
  add_ring_reduce_scatter(s, groups, region, "group reduce-scatter", "group reduce");
  add_ring_all_gather(s, groups, region, "group all-gather");
  Groups out;
  for (const auto& g : groups) {
    out.representatives.push_back(g.front());
    out.broadcasts.push_back({g.front(), std::vector<int>(g.begin() + 1, g.end())});
  }
  return out;
}

void add_ring_allreduce(Schedule& s, const Rings& rings, Region region, const std::string& prefix) {
  add_ring_reduce_scatter(s, rings, region, prefix + "reduce-scatter", prefix + "reduce");
  add_ring_all_gather(s, rings, region, prefix + "all-gather");
}

void add_hierarchical_allreduce(Schedule& s, const Rings& groups, Region region) {
  const auto [representatives, broadcasts] = add_group_all_reduce(s, groups, region);
  add_ring_reduce_scatter(s, {representatives}, region, "inter-group ring", "inter-group reduce");
  add_ring_all_gather(s, {representatives}, region, "inter-group ring");
  if (groups.front().size() > 1) add_broadcasts(s, broadcasts, region.slice(), "broadcast");
}

void add_ring_half(Schedule& s, const std::vector<int>& ring, Region region, bool reduce_scatter,
                   const std::string& compute_phase) {
  if (reduce_scatter) {
    add_ring_reduce_scatter(s, {ring}, region, "reduce-scatter", compute_phase);
  } else {
    add_ring_all_gather(s, {ring}, region, "all-gather");
  }
  s.expected = ring_half_expected(ring, region, reduce_scatter);
}

std::vector<ExpectedRegion> ring_half_expected(const std::vector<int>& ring, Region region, bool reduce_scatter) {
  const int m = static_cast<int>(ring.size());
  std::vector<ExpectedRegion> out;
  for (int b = 0; b < m; ++b) {
    const int owner = ring[static_cast<std::size_t>((b - 1 + m) % m)];
    ExpectedRegion e{block(region.base, region.elements, m, b, region.element_bytes), reduce_scatter, false, {}};
    if (reduce_scatter) {
      e.holders = {owner};
    } else {
      e.contributors = {owner};
    }
    out.push_back(e);
  }
  return out;
}

double collective_busbw_factor(int ranks, const std::map<std::string, std::string>& params) {
  const auto it = params.find("collective");
  return nccl_tests_busbw_factor(it == params.end() ? "all_reduce" : it->second, ranks).value_or(allreduce_busbw_factor(ranks));
}

void add_gather_reduce(Schedule& s, const std::vector<int>& senders, int root, Slice slice, const std::string& phase,
                       const std::string& compute_phase) {
  auto from = std::make_shared<const std::vector<int>>(senders);
  auto sends = std::make_shared<std::vector<bool>>(static_cast<std::size_t>(s.participant_count()), false);
  for (int w : senders) (*sends)[static_cast<std::size_t>(w)] = true;
  s.rounds.push_back(Round{phase, compute_phase, [from, sends, root, slice](int p, std::vector<Op>& out) {
                             if (p == root) {
                               for (int w : *from) out.push_back(Op::recv_reduce(w, slice));
                             } else if (static_cast<std::size_t>(p) < sends->size() && (*sends)[static_cast<std::size_t>(p)]) {
                               out.push_back(Op::send(root, slice));
                             }
                           }});
}

void add_broadcasts(Schedule& s, const std::vector<std::pair<int, std::vector<int>>>& trees, Slice slice,
                    const std::string& phase) {
  // participant -> (is root: its receivers) or (receiver: its root)
  auto sends = std::make_shared<std::vector<std::vector<int>>>(static_cast<std::size_t>(s.participant_count()));
  auto source = std::make_shared<std::vector<int>>(static_cast<std::size_t>(s.participant_count()), -1);
  for (const auto& [root, receivers] : trees) {
    for (int r : receivers) {
      (*sends)[static_cast<std::size_t>(root)].push_back(r);
      (*source)[static_cast<std::size_t>(r)] = root;
    }
  }
  s.rounds.push_back(Round{phase, "", [sends, source, slice](int p, std::vector<Op>& out) {
                             if (static_cast<std::size_t>(p) >= sends->size()) return;
                             for (int r : (*sends)[static_cast<std::size_t>(p)]) out.push_back(Op::send(r, slice));
                             const int from = (*source)[static_cast<std::size_t>(p)];
                             if (from >= 0) out.push_back(Op::recv(from, slice));
                           }});
}

void add_compute(Schedule& s, const std::vector<int>& participants, double seconds, const std::string& phase) {
  auto busy = std::make_shared<std::vector<bool>>(static_cast<std::size_t>(s.participant_count()), false);
  for (int p : participants) (*busy)[static_cast<std::size_t>(p)] = true;
  s.rounds.push_back(Round{phase, phase, [busy, seconds](int p, std::vector<Op>& out) {
                             if (static_cast<std::size_t>(p) < busy->size() && (*busy)[static_cast<std::size_t>(p)]) {
                               out.push_back(Op::compute(seconds));
                             }
                           }});
}

std::string describe_groups(const StrategyContext& ctx, const Rings& groups) {
  std::string text = "groups:";
  for (const auto& g : groups) {
    text += " {";
    for (std::size_t i = 0; i < g.size(); ++i) {
      text += (i ? " " : "") + ctx.topology.node(ctx.placement.ranks[static_cast<std::size_t>(g[i])]).id;
    }
    text += "}";
  }
  return text;
}

const Strategy& inner_strategy(const StrategyContext& ctx) {
  const Strategy& wrapper = ctx.params.strategy();
  const std::string& name = ctx.params.text("inner");
  std::vector<std::string> allowed;
  for (const InnerChoice& c : wrapper.inners) allowed.push_back(c.name);
  if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
    throw InputError("--param inner=" + name + ": strategy " + wrapper.name + " wraps one of " + join(allowed) +
                     did_you_mean(name, allowed));
  }
  return find_strategy(name);
}

}  // namespace gradsync::models::strategies
