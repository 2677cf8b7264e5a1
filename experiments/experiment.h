// An experiment: which topology, workload (or sizes), GPU counts, strategies with their
// parameters, and executors — from an experiment JSON file or from command-line flags —
// resolved into the list of points to evaluate.
//
// Experiment JSON (units in the keys; unknown keys are errors):
//   {"topology": "source-a-titanx-4gpu" | "path.json",
//    "workload": "source-a-ffnn-lm" | "path.json",          (or "sizes_bytes": [1048576, ...])
//    "gpus": [1, 2, 3, 4],                                   (or "ranks": ["gpu0", "gpu2"])
//    "strategies": [{"name": "hierarchical", "k": 2}, {"name": "ring"}],
//    "executors": ["formula", "analytic", "sim"],
//    "iterations": 20, "network_model": "CM02", "latency_factor": 1.0, "bandwidth_factor": 1.0,
//    "speeds": [1.0, 0.8, 1.0, 1.0], "jitter_cv": 0.05, "seed": 1}
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/executors/executor.h"
#include "models/topology/placement.h"
#include "models/strategies/strategy.h"
#include "models/topology/topology_io.h"
#include "models/workload/step.h"
#include "models/workload/workload.h"

namespace gradsync::experiments {

struct StrategyChoice {
  const models::Strategy* strategy = nullptr;
  models::SyncParams params;  // only parameters this strategy declares
  std::string origin;  // "FILE: /strategies/2" when an experiment file chose it; "" for flags
};

// A parameter error ("--param k=0 ...") raised while evaluating a point of `c`, with the place
// in the experiment file that gave the parameter in front ("FILE: /strategies/2/k: --param ...").
// Other messages, and choices made by flags, are returned unchanged.
std::string located_error(const StrategyChoice& c, const std::string& message);

using models::SimSettings;  // models/executors/executor.h

struct Experiment {
  std::string source = "command line";
  std::string topology;
  std::string workload;  // preset or path; empty with sizes_bytes
  std::vector<double> sizes_bytes;
  std::vector<int> gpus;  // empty: every GPU of the topology
  std::vector<std::string> ranks;  // explicit placement (instead of gpus)
  std::vector<StrategyChoice> strategies;  // empty: every strategy the executors can run
  std::vector<std::string> executors;  // names (models/executors/executor.h); empty: the analytic model
  SimSettings sim;
  std::optional<models::OverlapSettings> overlap;  // the step's buckets beside the backward pass
};

Experiment load_experiment(const std::string& path);
// The same from a parsed document; its source() names it in messages and in Experiment::source.
Experiment load_experiment(const models::JsonView& doc);

// Spreads --param values over the chosen strategies (each gets the ones it declares);
// a parameter no chosen strategy declares is an error listing theirs. No names: every
// strategy all the executors cover.
std::vector<StrategyChoice> choose_strategies(const std::vector<std::string>& names, const models::SyncParams& params,
                                              const std::vector<const models::Executor*>& executors);
// Executors by name (InputError naming `where` for an unknown one); none: the analytic model.
std::vector<const models::Executor*> find_executors(const std::vector<std::string>& names, const std::string& where);

// "4", "1,2,4", "1-4" -> counts.
std::vector<int> parse_gpu_counts(const std::string& text);

struct Plan {
  models::LoadedTopology topology;
  std::optional<models::Workload> workload;
  std::vector<std::optional<double>> sizes;  // nullopt: the workload's gradient
  std::vector<StrategyChoice> strategies;
  std::vector<models::Placement> placements;
  std::vector<const models::Executor*> executors;
  models::ExecutorSettings settings;
  std::optional<models::OverlapSettings> overlap;
  bool has_slow_executor() const;  // sim, run: progress worth showing
  std::size_t points() const { return sizes.size() * strategies.size() * placements.size() * executors.size(); }
};

Plan make_plan(const Experiment& e);

}  // namespace gradsync::experiments
