// One point to evaluate — a strategy on a placement of a topology, for a workload (or a
// bare size) — and what every executor starts from: the strategy's schedule built for it.
// predict() is the analytic model's record of a point (what a search ranks by); every
// executor (models/executors/executor.h) gives the same record with its own times.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "models/topology/placement.h"
#include "models/executors/result.h"
#include "models/schedule/schedule.h"
#include "models/strategies/strategy.h"
#include "models/strategies/strategy_context.h"
#include "models/topology/topology.h"
#include "models/workload/step.h"
#include "models/workload/workload.h"

namespace gradsync::models {

struct PredictRequest {
  const Topology* topology = nullptr;
  const Workload* workload = nullptr;  // optional
  std::optional<double> bytes;  // overrides the workload's gradient size
  const Strategy* strategy = nullptr;
  SyncParams params;
  Placement placement;
  // Notes that cost more than the schedule (StrategyContext::explain): off in searches.
  bool explain = true;
  // The training step with its gradient in buckets, synchronised beside the backward pass
  // (models/workload/step.h); nullopt: compute, then one synchronisation of the whole gradient.
  std::optional<OverlapSettings> overlap;

  std::uint64_t elements() const;  // values each rank synchronises
  int element_bytes() const;
};

// The strategy's schedule for the request (what every executor runs), its parameters with
// defaults filled in, and what the build resolved ("auto" -> k, server, T).
struct BuiltSchedule {
  Schedule schedule;
  StrategyParams params;
  std::map<std::string, std::string> resolved;
};
BuiltSchedule build_schedule(const PredictRequest& request);

// The context a strategy sees for the request with these parameters.
StrategyContext context_of(const PredictRequest& request, const StrategyParams& params);

// Each participant's local work costs, as the schedule's builder set them.
std::vector<LocalCosts> participant_costs(const Schedule& schedule);

// The analytic model's record of the point.
ResultRecord predict(const PredictRequest& request);

// Adds per-iteration, per-epoch and speed-up figures to a record (every executor shares
// this step): iteration = compute + sync / period unless `iteration_s` is given.
// With the workload's convergence facts it adds the time to target too (add_time_to_target).
void add_training_times(ResultRecord& record, const Workload& workload, std::optional<double> iteration_s = std::nullopt);

// Time to the workload's target (models/workload/convergence.h) from the record's iteration time:
// synchronous SGD's samples at the record's global batch (ranks x samples_per_minibatch), times the
// strategy's own multiple where it changes the training; where the facts give none for it,
// `no_time_to_target` says why. Nothing without convergence facts.
void add_time_to_target(ResultRecord& record, const Workload& workload);

// The time of one synchronisation of the request's gradient, by an executor.
using SyncTime = std::function<double(const PredictRequest&)>;

// The request that times one synchronisation of a step plan: the strategy's own on the moved
// layers, or the collective it runs through the strategy it wraps (that one's parameters, with
// "collective" set).
PredictRequest request_for(const PredictRequest& request, const StepSync& sync);
// The strategy's training step for the workload (its own plan, else DDP's).
StepPlan step_plan_of(const Strategy& strategy, const Workload& workload, const OverlapSettings& settings);

// With request.overlap and a workload, a strategy that synchronises every step in step with
// the others: the step's timeline with the workload's buckets, each bucket's synchronisation
// timed by `sync_of` (buckets of equal layers timed once), into the record's overlap figures
// and iteration time (what add_training_times then uses). Otherwise nothing, with a note
// where overlap was asked for and the strategy does not synchronise that way.
void add_overlap(ResultRecord& record, const PredictRequest& request, const Schedule& whole, const SyncTime& sync_of);

}  // namespace gradsync::models
