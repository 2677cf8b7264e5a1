#include "models/executors/predict.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/support/error.h"

namespace gradsync::models {

std::uint64_t PredictRequest::elements() const {
  if (bytes) return static_cast<std::uint64_t>(std::ceil(*bytes / 4.0));
  return workload->gradient_elements();
}

int PredictRequest::element_bytes() const { return bytes ? 4 : workload->dtype_bytes; }

StrategyContext context_of(const PredictRequest& q, const StrategyParams& params) {
  return StrategyContext{*q.topology, q.placement, params, q.elements(), q.element_bytes(), q.workload, q.explain, {}};
}

BuiltSchedule build_schedule(const PredictRequest& q) {
  if (!q.topology || !q.strategy) throw std::logic_error("build_schedule: topology and strategy are required");
  if (!q.workload && !q.bytes) throw std::logic_error("build_schedule: a workload or a size is required");
  const ParamContext choices{*q.topology, q.placement};
  StrategyParams params = resolve_params(*q.strategy, q.params, &choices);
  const StrategyContext ctx = context_of(q, params);
  Schedule schedule = q.strategy->build(ctx);
  return BuiltSchedule{std::move(schedule), params, ctx.resolved};
}

std::vector<LocalCosts> participant_costs(const Schedule& schedule) {
  std::vector<LocalCosts> costs;
  for (const Participant& p : schedule.participants) costs.push_back(p.costs);
  return costs;
}

void add_training_times(ResultRecord& r, const Workload& w, std::optional<double> iteration_s) {
  const double compute = w.compute_s();
  const double bn = static_cast<double>(w.minibatches_per_epoch);
  r.compute_s_per_minibatch = compute;
  r.time_per_iteration_s = iteration_s ? *iteration_s
                                       : formulas::minibatch_time(compute, r.time_per_sync_s / std::max(1, r.period_steps));
  r.time_per_epoch_s = formulas::epoch_time(bn, r.ranks, *r.time_per_iteration_s);
  r.one_gpu_epoch_s = formulas::epoch_time(bn, 1, compute);
  if (*r.time_per_epoch_s > 0) r.speedup_vs_1gpu = *r.one_gpu_epoch_s / *r.time_per_epoch_s;
}

}  // namespace gradsync::models
