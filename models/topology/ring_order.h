// Ring order and rank grouping.
//
// A ring all-reduce's speed depends on the order of its ranks: on a tree of PCIe switches
// the ring 0,1,2,3 crosses each switch uplink once per direction, while 0,2,1,3 crosses
// each uplink twice per direction and halves the bottleneck. This file scores a ring with
// the analytic model's sharing rule (ContentionModel: all N neighbour transfers run at
// once), searches for the best order, parses the user's ring_order parameter, and splits
// ranks into the groups of hierarchical schemes (hierarchical, ps_hra).
//
// Throughout, `nodes[i]` is the topology node of rank (ring position) i, and an "order"
// is a permutation of the positions 0..n-1: order[j] is the position placed j-th on the
// ring.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "models/topology/topology.h"

namespace gradsync::models {

struct RingEvaluation {
  // Smallest per-flow bandwidth (bytes/s) when all N ring flows (rank i -> rank i+1 mod N)
  // run at once, under ContentionModel. +infinity when no flow crosses a link (N <= 1).
  double bottleneck_Bps = 0;
  // Total hops of the N flows (tie-breaker: fewer is better).
  std::size_t link_crossings = 0;
};

// Scores the cyclic ring nodes[0] -> nodes[1] -> ... -> nodes[n-1] -> nodes[0].
RingEvaluation evaluate_ring(const Topology& t, const std::vector<std::size_t>& nodes);

// Is `a` a better ring than `b`? Larger bottleneck first (bottlenecks within a relative
// 1e-9 count as equal), then fewer link crossings.
bool better_ring(const RingEvaluation& a, const RingEvaluation& b);

// The topology-tree order of the positions: a depth-first search from nodes[0] through
// forwarding nodes (nodes[0] itself is expanded too), visiting neighbours by decreasing
// link bandwidth, then by node index; positions are listed in the order their node is
// first reached (positions sharing a node by increasing position). Positions whose node
// the search never reaches are appended in position order. order[0] == 0.
std::vector<int> tree_order(const Topology& t, const std::vector<std::size_t>& nodes);

// A permutation `order` of 0..n-1 giving the best ring (nodes[order[0]] -> nodes[order[1]]
// -> ...): maximise bottleneck_Bps, then minimise link_crossings; order[0] == 0.
//   n <= 8:        exhaustive over the (n-1)! orders with 0 first, mirror images skipped
//                  (order[1] < order[n-1]); ties keep the lexicographically smallest order.
//   8 < n <= 256:  tree_order() improved by first-improvement 2-opt moves (segment
//                  reversals keeping position 0 first) while they strictly improve the
//                  objective, within a budget of evaluated flows (kRingSearchFlowBudget).
//   n > 256:       tree_order() as is.
std::vector<int> best_ring_order(const Topology& t, const std::vector<std::size_t>& nodes);
// best_ring_order of each group; groups whose routes are alike link for link (the nodes of
// a generated cluster) share one search.
std::vector<std::vector<int>> best_ring_orders(const Topology& t, const std::vector<std::vector<std::size_t>>& groups);

// Largest n searched exhaustively, largest n improved by 2-opt, and the 2-opt budget
// (number of ring evaluations times n; about 0.1 s on one core).
inline constexpr std::size_t kRingExhaustiveMax = 8;
inline constexpr std::size_t kRingTwoOptMax = 256;
inline constexpr std::size_t kRingSearchFlowBudget = 4'000'000;

// Parses the --ring-order / ring_order parameter: "auto" (best_ring_order), "given"
// (identity), or an explicit permutation of the positions, "2,0,1,3". Anything else is an
// InputError naming the value and what was expected, e.g.
//   "ring_order=0,1,1: position 1 appears twice; expected a permutation of 0..2".
std::vector<int> ring_order_from_param(const Topology& t, const std::vector<std::size_t>& nodes,
                                       const std::string& value);

// Splits the ranks 0..n-1 (on topology nodes `nodes`) into k equal groups for
// hierarchical schemes. k must be positive and divide n (else InputError).
//   by == "switch": ranks under the same parent switch (parent_switch()) stay together:
//                   the ranks in tree_order(), made contiguous per parent switch (switches
//                   in the order the tree order first reaches them), cut into k consecutive
//                   chunks of n/k. When every switch holds n/k ranks, groups = switches.
//   by == "speed":  source B's queue grouping: speeds[i] is rank i's measured speed
//                   (larger = faster, finite); ranks queue by decreasing speed (ties by
//                   rank) and every n/k consecutive ranks of the queue form a group, the
//                   fastest group first. speeds.size() must be n.
//   by == "order":  consecutive chunks of 0..n-1.
// Unknown `by` -> InputError listing switch, speed, order. Within each group, members are
// sorted by rank position.
std::vector<std::vector<int>> group_ranks(const Topology& t, const std::vector<std::size_t>& nodes, int k,
                                          const std::string& by, const std::vector<double>& speeds = {});

// The natural k for hierarchical schemes: the number of distinct parent switches of
// `nodes` when every switch holds the same number of ranks (so it divides n), else 1.
int groups_by_switch(const Topology& t, const std::vector<std::size_t>& nodes);

}  // namespace gradsync::models
