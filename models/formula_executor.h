// The "formula" executor: the papers' closed forms evaluated on a topology.
//
// The closed forms assume a uniform network (one bandwidth B, one latency a). On a real
// topology gradsync takes the slowest of the paths the strategy uses: B is the smallest
// bottleneck bandwidth and a the largest latency among the rank pairs (and the
// rank <-> server paths for strategies with a server). The analytic executor walks the
// actual schedule instead; comparing the two shows what the uniform assumption misses.
#pragma once

#include <string>

#include "models/formulas.h"
#include "models/placement.h"
#include "models/strategy.h"
#include "models/topology.h"

namespace gradsync::models {

struct FormulaContext {
  const Topology& topology;
  const Placement& placement;
  const StrategyParams& params;
  double bytes = 0;  // S: bytes each rank synchronises

  int N() const { return placement.size(); }
  // Over all ordered pairs of ranks; +inf / 0 with a single rank.
  double slowest_rank_pair_Bps() const;
  double largest_rank_pair_latency_s() const;
  // Over ranks, both directions; requires the strategy's "server" parameter.
  std::size_t server_node() const;
  double server_Bps() const;
  double server_latency_s() const;
  double gpu_reduce_s_per_byte() const;
  double server_reduce_s_per_byte() const;
  // k from the "k" parameter, or "auto": the number of distinct switches right above the
  // ranks when it divides N, else 1.
  int groups() const;

  // Inputs for formulas among the ranks only (ring, hierarchical): C is the GPUs'.
  formulas::CostInputs rank_inputs() const;
  // Inputs for formulas through a server (PS): B, a of the rank <-> server paths.
  formulas::CostInputs server_inputs() const;
  // Both (PS-HRA): the slowest of rank pairs and server paths.
  formulas::CostInputs combined_inputs() const;
};

// The node right above a GPU: its fastest-linked forwarding neighbour (its PCIe switch).
std::size_t parent_switch(const Topology& topology, std::size_t gpu);

// Evaluates the strategy's closed form; InputError when the documents give none.
formulas::Breakdown predict_with_formula(const Strategy& strategy, const FormulaContext& context);

}  // namespace gradsync::models
