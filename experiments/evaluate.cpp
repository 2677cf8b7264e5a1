#include "experiments/evaluate.h"

#include <algorithm>
#include <cmath>

#include "models/error.h"
#include "sim/simulator.h"

namespace gradsync::experiments {

namespace {

models::ResultRecord simulate_record(const models::PredictRequest& q, const SimSettings& settings, models::Trace* trace) {
  // Everything but the times comes from the analytic record (params, notes, placement).
  models::PredictRequest analytic = q;
  analytic.executor = "analytic";
  models::ResultRecord r = models::predict(analytic);
  r.executor = "sim";

  const models::BuiltSchedule built = models::build_schedule(q);
  const models::Schedule& schedule = built.schedule;
  const std::uint64_t elements = q.bytes ? static_cast<std::uint64_t>(std::ceil(*q.bytes / 4.0))
                                         : static_cast<std::uint64_t>(q.workload->total_params());
  const int element_bytes = q.bytes ? 4 : q.workload->dtype_bytes;
  const models::StrategyContext ctx{*q.topology, q.placement, built.params, elements, element_bytes, q.workload};

  sim::SimOptions one;
  one.network = settings.network;
  one.steps = 1;
  one.sync_every_step = true;
  one.costs = models::participant_costs(ctx, schedule);
  const sim::SimResult sync = sim::simulate(*q.topology, schedule, one);
  r.time_per_sync_s = sync.first_sync_s;
  r.phases = sync.phases;
  r.network_model = settings.network.name;
  r.sim_wall_s = sync.wall_s;

  if (q.workload) {
    sim::SimOptions loop = one;
    loop.sync_every_step = false;
    loop.compute_s = q.workload->compute_s();
    loop.speeds = settings.speeds;
    loop.jitter_cv = settings.jitter_cv;
    loop.seed = settings.seed;
    loop.trace = trace != nullptr;
    const int period = std::max(1, schedule.period_steps);
    loop.steps = settings.iterations > 0 ? settings.iterations : std::max(10, 2 * period);
    const sim::SimResult run = sim::simulate(*q.topology, schedule, loop);
    r.simulated_steps = loop.steps;
    if (loop.steps < period) {
      r.notes.push_back(std::to_string(loop.steps) + " steps simulated, fewer than the " + std::to_string(period) +
                        " between synchronisations: the iteration time is compute only (raise --iterations)");
    }
    r.sim_wall_s = *r.sim_wall_s + run.wall_s;
    models::add_training_times(r, *q.workload, run.total_s / loop.steps);
    if (run.updates > 0) {
      r.updates_per_s = static_cast<double>(run.updates) / run.total_s;
      r.mean_staleness = run.mean_staleness();
      r.max_staleness = run.max_staleness();
      r.staleness_histogram = run.staleness_histogram;
    }
    if (trace && run.trace) *trace = *run.trace;
  } else if (trace && settings.trace) {
    one.trace = true;
    const sim::SimResult traced = sim::simulate(*q.topology, schedule, one);
    if (traced.trace) *trace = *traced.trace;
  }
  return r;
}

}  // namespace

models::ResultRecord evaluate(const models::PredictRequest& request, const std::string& executor, const SimSettings& sim,
                              models::Trace* trace) {
  if (executor == "sim") return simulate_record(request, sim, trace);
  models::PredictRequest q = request;
  q.executor = executor;
  return models::predict(q);
}

}  // namespace gradsync::experiments
