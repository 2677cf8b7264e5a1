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

PredictRequest request_for(const PredictRequest& q, const StepSync& sync) {
  PredictRequest part = q;
  part.workload = &sync.moved;
  part.bytes.reset();
  part.overlap.reset();
  part.explain = false;
  if (!sync.collective.empty()) {
    // A collective of the strategy's own, run by the strategy it wraps: that one's parameters.
    const Strategy& inner = find_strategy(resolve_params(*q.strategy, q.params).text("inner"));
    part.strategy = &inner;
    part.params = SyncParams{};
    for (const auto& [name, value] : q.params.values()) {
      if (declares(inner, name)) part.params.set(name, value);
    }
    part.params.set("collective", sync.collective);
  }
  return part;
}

StepPlan step_plan_of(const Strategy& s, const Workload& w, const OverlapSettings& o) {
  return s.step_plan ? s.step_plan(w, o) : ddp_plan(w, buckets_of(w, o));
}

void add_overlap(ResultRecord& r, const PredictRequest& q, const Schedule& whole, const SyncTime& sync_of) {
  if (!q.overlap || !q.workload || q.bytes) return;
  if (const std::string why = whole.not_overlapped_because(); !why.empty()) {
    r.notes.push_back("not overlapped: " + why);
    return;
  }
  const OverlapSettings& o = *q.overlap;
  const Workload& w = *q.workload;
  const StepPlan plan = step_plan_of(*q.strategy, w, o);
  // Synchronisations of equal layers (a transformer's blocks) take equal times: time each kind once.
  std::map<std::pair<std::string, std::vector<std::int64_t>>, double> timed;
  std::vector<double> sync;
  for (const StepSync& step : plan.syncs) {
    std::vector<std::int64_t> key = {step.moved.dtype_bytes};
    for (const Layer& l : step.moved.layers) {
      key.push_back(l.params);
      key.push_back(l.rows.value_or(-1));
    }
    auto it = timed.find({step.collective, key});
    if (it == timed.end()) {
      const double seconds = step.moved.gradient_bytes() > 0 ? sync_of(request_for(q, step)) : 0.0;
      it = timed.emplace(std::make_pair(step.collective, std::move(key)), seconds).first;
    }
    sync.push_back(it->second);
  }
  const StepTime st = step_time(plan, run_plan(plan, sync, o.slowdown));
  OverlapFigures f;
  f.buckets = static_cast<int>(plan.syncs.size());
  f.bucket_cap_bytes = o.bucket_cap_bytes;
  f.first_bucket_bytes = o.first_bucket_bytes;
  f.slowdown = o.slowdown;
  f.exposed_s = st.exposed_s;
  f.bucket_sync_s = st.sync_s;
  f.backward_s = st.backward_s;
  f.iteration_without_s = formulas::minibatch_time(w.compute_s(), r.time_per_sync_s);
  r.overlap = f;
  r.time_per_iteration_s = st.iteration_s;
}

void add_training_times(ResultRecord& r, const Workload& w, std::optional<double> iteration_s) {
  const double compute = w.compute_s();
  const double bn = static_cast<double>(w.minibatches_per_epoch);
  r.compute_s_per_minibatch = compute;
  r.time_per_iteration_s = iteration_s          ? *iteration_s
                           : r.overlap          ? *r.time_per_iteration_s
                                                : formulas::minibatch_time(compute, r.time_per_sync_s / std::max(1, r.period_steps));
  r.time_per_epoch_s = formulas::epoch_time(bn, r.ranks, *r.time_per_iteration_s);
  r.one_gpu_epoch_s = formulas::epoch_time(bn, 1, compute);
  if (*r.time_per_epoch_s > 0) r.speedup_vs_1gpu = *r.one_gpu_epoch_s / *r.time_per_epoch_s;
  add_time_to_target(r, w);
}

void add_time_to_target(ResultRecord& r, const Workload& w) {
  if (!w.convergence || !w.samples_per_minibatch || !r.time_per_iteration_s || r.ranks < 1) return;
  const ConvergenceFacts& f = *w.convergence;
  ConvergenceFigures c;
  c.target = f.target;
  const auto b = static_cast<double>(*w.samples_per_minibatch);
  c.global_batch = b * r.ranks;
  if (r.ranks > 1) {
    // A strategy that changes the arithmetic needs its own multiple of synchronous SGD's samples.
    const Strategy& s = find_strategy(r.strategy);
    const std::string changes = s.changes_training ? s.changes_training(r) : "";
    if (!changes.empty()) {
      const auto it = f.strategies.find(r.strategy);
      if (it == f.strategies.end()) {
        r.no_time_to_target = "it " + changes + ", and the workload's convergence facts give no samples to target for " + r.strategy;
        return;
      }
      int measured_at = 0;
      const Estimate* multiple = it->second.at_workers(r.ranks, &measured_at);
      if (!multiple) {
        r.no_time_to_target = r.strategy + "'s run on " + std::to_string(measured_at) + " workers" +
                              (measured_at != r.ranks ? " (the nearest count the facts give)" : "") + " did not reach " + f.target +
                              " in " + number_text(it->second.not_reached.at(measured_at), 6) + " samples (" + it->second.conditions + ")";
        return;
      }
      c.relative_samples = *multiple;
      c.conditions = it->second.conditions;
      if (measured_at > 0) {
        c.conditions += ", at " + std::to_string(measured_at) + " workers";
        if (measured_at != r.ranks) {
          r.notes.push_back("time to target: " + r.strategy + "'s samples were measured at " + std::to_string(measured_at) +
                            " workers (the nearest count the facts give), this is " + std::to_string(r.ranks) + ": they may not hold");
        }
      }
      for (const auto& [key, value] : it->second.params) {
        const auto here = r.params.find(key);
        if (here != r.params.end() && here->second != value) {
          r.notes.push_back("time to target: " + r.strategy + "'s samples were measured at " + key + "=" + value + ", this is " + key +
                            "=" + here->second + ": they may not hold");
        }
      }
    }
  }
  const double compute = w.compute_s();
  const double iteration = *r.time_per_iteration_s;
  c.samples = samples_to_target(f, c.global_batch) * c.relative_samples;
  c.steps = c.samples * (1 / c.global_batch);
  c.time_s = c.steps * iteration;
  c.one_gpu_time_s = samples_to_target(f, b) * (compute / b);
  // The speed-up per step times what each sample is worth at this batch, over the strategy's
  // multiple: the samples measured at the facts' batch cancel out of it.
  if (iteration > 0) {
    const double per_step = r.ranks * compute / iteration;
    const Estimate e = statistical_efficiency(f, b, c.global_batch);
    const Estimate& m = c.relative_samples;
    c.speedup = {per_step * e.value / m.value, per_step * e.low / m.high, per_step * e.high / m.low};
  }
  r.convergence = c;
}

}  // namespace gradsync::models
