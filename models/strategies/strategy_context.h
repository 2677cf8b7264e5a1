// What a strategy sees when it builds its schedule or evaluates its closed form: the
// topology, where the ranks run, its parameters, the gradient size, the workload.
//
// The closed forms assume a uniform network (one bandwidth B, one latency a). On a real
// topology gradsync takes the slowest of the paths the strategy uses: B is the smallest
// bottleneck bandwidth and a the largest latency among the rank pairs (and the
// rank <-> server paths for strategies with a server).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/strategies/formulas.h"
#include "models/topology/placement.h"
#include "models/strategies/strategy.h"
#include "models/topology/topology.h"
#include "models/workload/workload.h"

namespace gradsync::models {

struct StrategyContext {
  const Topology& topology;
  const Placement& placement;
  const StrategyParams& params;
  std::uint64_t elements = 0;  // values each rank synchronises
  int element_bytes = 4;
  const Workload* workload = nullptr;  // optional: layers (rows) and minibatch size
  // Whether the build works out notes that cost more than the schedule itself (nccl: the plan
  // again under each fact the inputs leave open); a search whose candidates' notes nobody reads
  // turns it off (PredictRequest::explain).
  bool explain = true;

  // What the build resolved ("auto" -> k = 2, the server's node, the period T), by parameter
  // name: records show these values, and "-" for resolved parameters the schedule never used.
  mutable std::map<std::string, std::string> resolved;
  void resolved_as(const std::string& name, const std::string& value) const { resolved[name] = value; }

  double bytes() const { return static_cast<double>(elements) * element_bytes; }
  int N() const { return placement.size(); }

  // Over all ordered pairs of ranks; +inf / 0 with a single rank.
  double slowest_rank_pair_Bps() const;
  double largest_rank_pair_latency_s() const;
  // The parameter server's node, from the strategy's "server" parameter.
  std::size_t server_node() const;
  // Over ranks, both directions.
  double server_Bps() const;
  double server_latency_s() const;
  double gpu_reduce_s_per_byte() const;
  // What the slowest rank's GPU copies within its own memory, bytes/s: half its memory's bandwidth
  // (a copy reads and writes every byte), measured (p2pBandwidthLatencyTest's diagonal, which
  // moves a copy's bytes both ways, near the memory's rate) or else its model's; 0 where neither
  // is known.
  double gpu_copy_Bps() const;
  // How many times slower a rank's measured local work (copies and reductions, or 1-bit
  // coding when `quantize`) runs while this run's ranks all work at once: the measurement's
  // ranks_at_once rate alone over the rate with as many ranks; 1 where it was not measured.
  double colocation_slowdown(bool quantize) const;
  double server_reduce_s_per_byte() const;
  // Seconds to reduce one byte on a participant placed on `node` (host memory: the CPU's rate).
  double reduce_s_per_byte_at(std::size_t node) const;
  // A participant's local costs on `node`: reductions at its rate; an encoding pass (a
  // strategy that encodes its transfers sets its own rate) at the same rate.
  LocalCosts costs_at(std::size_t node) const {
    const double reduce = reduce_s_per_byte_at(node);
    return {reduce, reduce};
  }
  // k from the "k" parameter, or "auto": one group per switch above the ranks when the
  // switches hold equal shares of them, else 1.
  int groups() const;
  int choose_groups() const;  // the same, without recording it as resolved
  // Samples per minibatch of one worker (the workload's, else 64, source A's minibatch).
  std::int64_t samples_per_minibatch() const;

  // Inputs for formulas among the ranks only (ring, hierarchical): C is the GPUs'.
  formulas::CostInputs rank_inputs() const;
  // Inputs for formulas through a server (PS): B, a of the rank <-> server paths.
  formulas::CostInputs server_inputs() const;
  // Both (PS-HRA): the slowest of rank pairs and server paths.
  formulas::CostInputs combined_inputs() const;
};

// The node right above a GPU: its fastest-linked forwarding neighbour (its PCIe switch).
std::size_t parent_switch(const Topology& topology, std::size_t gpu);

}  // namespace gradsync::models
