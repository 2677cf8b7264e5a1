// One prediction: a strategy on a placement of a topology, for a workload (or a bare
// size), through one executor, as a result record with per-iteration and per-epoch
// times (source A, eqs. 5–8) and the speed-up over one GPU training alone.
#pragma once

#include <optional>
#include <string>

#include "models/placement.h"
#include "models/result.h"
#include "models/schedule.h"
#include "models/strategy.h"
#include "models/strategy_context.h"
#include "models/topology.h"
#include "models/workload.h"

namespace gradsync::models {

struct PredictRequest {
  const Topology* topology = nullptr;
  const Workload* workload = nullptr;  // optional
  std::optional<double> bytes;  // overrides the workload's gradient size
  const Strategy* strategy = nullptr;
  SyncParams params;
  Placement placement;
  std::string executor = "analytic";
};

std::vector<std::string> executor_names();

// Builds the strategy's schedule for the request (what every executor runs).
struct BuiltSchedule {
  Schedule schedule;
  StrategyParams params;
};
BuiltSchedule build_schedule(const PredictRequest& request);

// Each participant's local work costs (host memory: the CPU's rate).
std::vector<LocalCosts> participant_costs(const StrategyContext& ctx, const Schedule& schedule);

ResultRecord predict(const PredictRequest& request);

// Adds per-iteration, per-epoch and speed-up figures to a record (every executor shares
// this step): iteration = compute + sync / period unless `iteration_s` is given.
void add_training_times(ResultRecord& record, const Workload& workload, std::optional<double> iteration_s = std::nullopt);

}  // namespace gradsync::models
