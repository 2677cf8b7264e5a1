#include "models/topology/ring_order.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <cstdio>
#include <numeric>
#include <unordered_map>

#include "models/topology/contention.h"
#include "models/support/error.h"
#include "models/executors/formula_executor.h"

namespace gradsync::models {

namespace {

// Scores orders of a fixed set of ranks with ContentionModel, caching each route pointer
// (Topology keeps its routes in a node-based cache, so the pointers stay valid).
class RingScorer {
 public:
  RingScorer(const Topology& t, const std::vector<std::size_t>& nodes)
      : t_(t), nodes_(nodes), n_(nodes.size()), model_(t), routes_(n_ * n_, nullptr) {}

  RingEvaluation score(const std::vector<int>& order) {
    ++evaluations_;
    ring_.resize(n_);
    RingEvaluation e{std::numeric_limits<double>::infinity(), 0};
    for (std::size_t j = 0; j < n_; ++j) {
      ring_[j] = route(static_cast<std::size_t>(order[j]), static_cast<std::size_t>(order[(j + 1) % n_]));
      e.link_crossings += ring_[j]->size();
    }
    model_.share(ring_, bandwidth_);
    for (double bw : bandwidth_) e.bottleneck_Bps = std::min(e.bottleneck_Bps, bw);
    return e;
  }

  std::size_t evaluations() const { return evaluations_; }

 private:
  const Route* route(std::size_t from, std::size_t to) {
    const Route*& r = routes_[from * n_ + to];
    if (!r) r = &t_.route(nodes_[from], nodes_[to]);
    return r;
  }

  const Topology& t_;
  const std::vector<std::size_t>& nodes_;
  std::size_t n_;
  ContentionModel model_;
  std::vector<const Route*> routes_;  // position pair -> route
  std::vector<const Route*> ring_;
  std::vector<double> bandwidth_;
  std::size_t evaluations_ = 0;
};

std::vector<int> identity(std::size_t n) {
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  return order;
}

std::vector<int> exhaustive_order(const Topology& t, const std::vector<std::size_t>& nodes) {
  const std::size_t n = nodes.size();
  RingScorer scorer(t, nodes);
  std::vector<int> order = identity(n);
  std::vector<int> best = order;
  RingEvaluation best_eval = scorer.score(order);
  // Lexicographic enumeration of order[1..n-1]; the first strictly better order wins, so
  // ties keep the lexicographically smallest one. order[1] > order[n-1] is the mirror
  // image of an order already seen (the same ring run backwards).
  while (std::next_permutation(order.begin() + 1, order.end())) {
    if (order[1] > order[n - 1]) continue;
    const RingEvaluation e = scorer.score(order);
    if (better_ring(e, best_eval)) {
      best_eval = e;
      best = order;
    }
  }
  return best;
}

void two_opt(const Topology& t, const std::vector<std::size_t>& nodes, std::vector<int>& order) {
  const std::size_t n = nodes.size();
  RingScorer scorer(t, nodes);
  RingEvaluation current = scorer.score(order);
  const std::size_t max_evaluations = std::max<std::size_t>(1, kRingSearchFlowBudget / n);
  bool improved = true;
  while (improved) {
    improved = false;
    // Reverse order[i+1..j]; position 0 (order[0]) never moves. i = 0, j = n-1 would
    // reverse the whole ring after 0: its mirror image, never better.
    for (std::size_t i = 0; i + 2 < n; ++i) {
      for (std::size_t j = i + 2; j < n; ++j) {
        if (i == 0 && j == n - 1) continue;
        if (scorer.evaluations() >= max_evaluations) return;
        std::reverse(order.begin() + static_cast<std::ptrdiff_t>(i + 1), order.begin() + static_cast<std::ptrdiff_t>(j + 1));
        const RingEvaluation e = scorer.score(order);
        if (better_ring(e, current)) {
          current = e;
          improved = true;
        } else {
          std::reverse(order.begin() + static_cast<std::ptrdiff_t>(i + 1), order.begin() + static_cast<std::ptrdiff_t>(j + 1));
        }
      }
    }
  }
}

std::string expected_permutation(std::size_t n) {
  return n == 0 ? std::string("expected auto or given (there are no ranks)")
                : "expected a permutation of 0.." + std::to_string(n - 1);
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

void check_k(int k, std::size_t n) {
  if (k < 1) {
    throw InputError("--param k=" + std::to_string(k) + ": expected a positive number of groups that divides N = " +
                     std::to_string(n));
  }
  if (n == 0 || n % static_cast<std::size_t>(k) != 0) {
    throw InputError("--param k=" + std::to_string(k) + ": N = " + std::to_string(n) + " ranks cannot be split into " +
                     std::to_string(k) + " equal groups; expected k to divide N");
  }
}

std::vector<std::vector<int>> chunks(const std::vector<int>& queue, int k) {
  const std::size_t size = queue.size() / static_cast<std::size_t>(k);
  std::vector<std::vector<int>> groups(static_cast<std::size_t>(k));
  for (std::size_t g = 0; g < groups.size(); ++g) {
    groups[g].assign(queue.begin() + static_cast<std::ptrdiff_t>(g * size),
                     queue.begin() + static_cast<std::ptrdiff_t>((g + 1) * size));
    std::sort(groups[g].begin(), groups[g].end());
  }
  return groups;
}

}  // namespace

RingEvaluation evaluate_ring(const Topology& t, const std::vector<std::size_t>& nodes) {
  if (nodes.empty()) return RingEvaluation{std::numeric_limits<double>::infinity(), 0};
  RingScorer scorer(t, nodes);
  return scorer.score(identity(nodes.size()));
}

bool better_ring(const RingEvaluation& a, const RingEvaluation& b) {
  const double x = a.bottleneck_Bps, y = b.bottleneck_Bps;
  const bool equal = x == y || std::abs(x - y) <= 1e-9 * std::max(std::abs(x), std::abs(y));
  if (!equal) return x > y;
  return a.link_crossings < b.link_crossings;
}

std::vector<int> tree_order(const Topology& t, const std::vector<std::size_t>& nodes) {
  const std::size_t n = nodes.size();
  if (n == 0) return {};
  const std::size_t count = t.node_count();
  std::vector<std::vector<int>> positions_at(count);  // node -> positions on it, increasing
  for (std::size_t i = 0; i < n; ++i) positions_at.at(nodes[i]).push_back(static_cast<int>(i));

  struct Neighbour {
    std::size_t node;
    double bandwidth_Bps;
  };
  std::vector<std::vector<Neighbour>> adjacent(count);
  for (const Link& l : t.links()) {
    adjacent[l.a].push_back({l.b, l.bandwidth_Bps});
    adjacent[l.b].push_back({l.a, l.bandwidth_Bps});
  }
  for (auto& list : adjacent) {
    std::sort(list.begin(), list.end(), [](const Neighbour& x, const Neighbour& y) {
      return x.bandwidth_Bps != y.bandwidth_Bps ? x.bandwidth_Bps > y.bandwidth_Bps : x.node < y.node;
    });
  }

  std::vector<int> order;
  order.reserve(n);
  std::vector<bool> reached(count, false);
  auto reach = [&](std::size_t v) {
    reached[v] = true;
    for (int p : positions_at[v]) order.push_back(p);
  };
  // Iterative depth-first search (same visiting order as the recursive one).
  std::vector<std::pair<std::size_t, std::size_t>> stack;  // node, next neighbour
  reach(nodes[0]);
  stack.push_back({nodes[0], 0});
  while (!stack.empty()) {
    auto& [u, next] = stack.back();
    if (next == adjacent[u].size()) {
      stack.pop_back();
      continue;
    }
    const std::size_t v = adjacent[u][next++].node;
    if (reached[v]) continue;
    reach(v);
    if (forwards_traffic(t.node(v).kind)) stack.push_back({v, 0});
  }
  if (order.size() < n) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!reached[nodes[i]]) order.push_back(static_cast<int>(i));
    }
  }
  return order;
}

std::vector<int> best_ring_order(const Topology& t, const std::vector<std::size_t>& nodes) {
  const std::size_t n = nodes.size();
  if (n <= 3) return identity(n);  // one ring up to its mirror image
  // The same nodes get the same order: remembered by the topology (recommend builds the
  // same groups for many candidates).
  if (auto known = t.remembered(nodes)) return *known;
  std::vector<int> order;
  if (n <= kRingExhaustiveMax) {
    order = exhaustive_order(t, nodes);
  } else {
    order = tree_order(t, nodes);
    if (n <= kRingTwoOptMax) two_opt(t, nodes, order);
  }
  t.remember(nodes, order);
  return order;
}

namespace {
// What a ring's score depends on, for rings over these nodes: every pair's route as its
// links' figures, each link named by its first appearance. Node lists with the same
// fingerprint score every order alike (the same sharing, the same crossings).
std::string route_fingerprint(const Topology& t, const std::vector<std::size_t>& nodes) {
  std::unordered_map<std::size_t, std::size_t> renamed;
  std::string text;
  char buf[96];
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (std::size_t j = 0; j < nodes.size(); ++j) {
      if (i == j) continue;
      for (const Hop& h : t.route(nodes[i], nodes[j])) {
        const Link& l = t.links()[h.link];
        const std::size_t name = renamed.emplace(h.link, renamed.size()).first->second;
        std::snprintf(buf, sizeof buf, "%zu%c%.17g/%d/%.17g ", name, h.forward ? '>' : '<', l.bandwidth_Bps,
                      l.full_duplex ? 1 : 0, l.duplex_share);
        text += buf;
      }
      text += '|';
    }
  }
  return text;
}
}  // namespace

std::vector<std::vector<int>> best_ring_orders(const Topology& t, const std::vector<std::vector<std::size_t>>& groups) {
  std::vector<std::vector<int>> orders;
  std::unordered_map<std::string, std::size_t> searched;  // fingerprint -> the group searched
  for (const auto& nodes : groups) {
    // Searched exhaustively, a group scores like any other with its fingerprint: 1,024
    // groups of 8 GPUs in alike nodes are one search, not 1,024.
    if (nodes.size() > 3 && nodes.size() <= kRingExhaustiveMax) {
      const auto [it, fresh] = searched.emplace(route_fingerprint(t, nodes), orders.size());
      if (!fresh) {
        orders.push_back(orders[it->second]);
        continue;
      }
    }
    orders.push_back(best_ring_order(t, nodes));
  }
  return orders;
}

std::vector<int> ring_order_from_param(const Topology& t, const std::vector<std::size_t>& nodes,
                                       const std::string& value) {
  const std::size_t n = nodes.size();
  const std::string text = trim(value);
  if (text == "auto") return best_ring_order(t, nodes);
  if (text == "given") return identity(n);
  const std::string head = "--param ring_order=" + value + ": ";
  if (text.find_first_not_of("0123456789, \t") != std::string::npos && text.find(',') == std::string::npos) {
    throw InputError(head + "expected auto, given or a comma-separated permutation of the positions" +
                     (n == 0 ? std::string(" (there are no ranks)") : " 0.." + std::to_string(n - 1)) +
                     did_you_mean(text, {"auto", "given"}));
  }
  if (n == 0) throw InputError(head + expected_permutation(0));

  std::vector<int> order;
  std::vector<bool> seen(n, false);
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string token = trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (token.empty()) throw InputError(head + "an empty position; " + expected_permutation(n) + ", separated by commas");
    unsigned long long p = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), p);
    if (ec == std::errc::result_out_of_range || (ec == std::errc() && end == token.data() + token.size() && p >= n)) {
      throw InputError(head + "position " + token + " is out of range; " + expected_permutation(n));
    }
    if (ec != std::errc() || end != token.data() + token.size()) {
      throw InputError(head + "\"" + token + "\" is not a position; " + expected_permutation(n));
    }
    if (seen[p]) throw InputError(head + "position " + token + " appears twice; " + expected_permutation(n));
    seen[p] = true;
    order.push_back(static_cast<int>(p));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (order.size() != n) {
    const auto missing = std::find(seen.begin(), seen.end(), false) - seen.begin();
    throw InputError(head + std::to_string(order.size()) + " positions for " + std::to_string(n) + " ranks (position " +
                     std::to_string(missing) + " is missing); " + expected_permutation(n));
  }
  return order;
}

std::vector<std::vector<int>> group_ranks(const Topology& t, const std::vector<std::size_t>& nodes, int k,
                                          const std::string& by, const std::vector<double>& speeds) {
  const std::vector<std::string> ways = {"switch", "speed", "order"};
  if (std::find(ways.begin(), ways.end(), by) == ways.end()) {
    throw InputError("--param grouping=" + by + ": unknown grouping; expected one of " + join(ways) + did_you_mean(by, ways));
  }
  const std::size_t n = nodes.size();
  check_k(k, n);

  if (by == "order") return chunks(identity(n), k);

  if (by == "speed") {
    if (speeds.size() != n) {
      throw InputError("--param grouping=speed: " + std::to_string(speeds.size()) + " measured speeds for " +
                       std::to_string(n) + " ranks; expected one speed per rank");
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isfinite(speeds[i])) {
        throw InputError("--param grouping=speed: the speed of rank " + std::to_string(i) + " is " + std::to_string(speeds[i]) +
                         "; expected a finite number");
      }
    }
    std::vector<int> queue = identity(n);
    std::stable_sort(queue.begin(), queue.end(), [&](int a, int b) { return speeds[a] > speeds[b]; });
    return chunks(queue, k);
  }

  // by == "switch": the tree order, made contiguous per parent switch.
  std::vector<int> order = tree_order(t, nodes);
  std::unordered_map<std::size_t, std::size_t> first_seen;  // parent switch -> index of its first rank in `order`
  std::vector<std::size_t> switch_rank(n);
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t parent = parent_switch(t, nodes[order[j]]);
    switch_rank[order[j]] = first_seen.emplace(parent, j).first->second;
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return switch_rank[a] < switch_rank[b]; });
  return chunks(order, k);
}

int groups_by_switch(const Topology& t, const std::vector<std::size_t>& nodes) {
  std::unordered_map<std::size_t, std::size_t> ranks_under;  // parent switch -> ranks
  for (std::size_t node : nodes) ++ranks_under[parent_switch(t, node)];
  if (ranks_under.empty()) return 1;
  const std::size_t each = ranks_under.begin()->second;
  for (const auto& [parent, count] : ranks_under) {
    if (count != each) return 1;
  }
  return static_cast<int>(ranks_under.size());
}

}  // namespace gradsync::models
