#include "models/predict.h"

#include <cmath>

#include "models/analytic.h"
#include "models/error.h"
#include "models/formula_executor.h"

namespace gradsync::models {

std::vector<std::string> executor_names() { return {"formula", "analytic"}; }

namespace {

struct Sizes {
  std::uint64_t elements;
  int element_bytes;
};

Sizes sizes_of(const PredictRequest& q) {
  if (q.bytes) return {static_cast<std::uint64_t>(std::ceil(*q.bytes / 4.0)), 4};
  return {static_cast<std::uint64_t>(q.workload->total_params()), q.workload->dtype_bytes};
}

}  // namespace

BuiltSchedule build_schedule(const PredictRequest& q) {
  if (!q.topology || !q.strategy) throw std::logic_error("build_schedule: topology and strategy are required");
  if (!q.workload && !q.bytes) throw std::logic_error("build_schedule: a workload or a size is required");
  StrategyParams params = resolve_params(*q.strategy, q.params);
  const Sizes sz = sizes_of(q);
  const StrategyContext ctx{*q.topology, q.placement, params, sz.elements, sz.element_bytes, q.workload};
  return BuiltSchedule{q.strategy->build(ctx), params};
}

std::vector<LocalCosts> participant_costs(const StrategyContext& ctx, const Schedule& schedule) {
  std::vector<LocalCosts> costs;
  for (const Participant& p : schedule.participants) costs.push_back(ctx.costs_at(p.node));
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

ResultRecord predict(const PredictRequest& q) {
  if (q.executor != "formula" && q.executor != "analytic") {
    throw InputError("--executor " + q.executor + ": unknown executor; valid executors: " + join(executor_names()));
  }
  const Topology& t = *q.topology;
  const Strategy& s = *q.strategy;
  BuiltSchedule built = build_schedule(q);
  const Schedule& schedule = built.schedule;
  const Sizes sz = sizes_of(q);
  const StrategyContext ctx{t, q.placement, built.params, sz.elements, sz.element_bytes, q.workload};

  ResultRecord r;
  r.executor = q.executor;
  r.topology = t.name();
  r.strategy = s.name;
  r.ranks = q.placement.size();
  for (std::size_t node : q.placement.ranks) r.rank_nodes.push_back(t.node(node).id);
  r.bytes = ctx.bytes();
  r.workload = q.workload ? q.workload->name : "";
  r.period_steps = schedule.period_steps;
  r.asynchronous = schedule.asynchronous;
  r.notes = schedule.notes;
  for (const Participant& p : schedule.participants) {
    if (p.role == Role::server) r.server = t.node(p.node).id;
  }

  // The record shows what "auto" turned into.
  StrategyParams shown = built.params;
  if (shown.values().count("k")) {
    // k only matters where groups are formed (directly, or by a wrapped hierarchical scheme).
    const bool grouped = !shown.values().count("inner") || shown.text("inner") == "hierarchical" ||
                         shown.text("inner") == "ps_hra";
    shown.set("k", grouped ? std::to_string(ctx.groups()) : "-");
  }
  if (shown.values().count("server")) shown.set("server", r.server.empty() ? "-" : r.server);
  if (shown.values().count("T")) shown.set("T", std::to_string(schedule.period_steps));
  if (shown.values().count("step")) shown.set("step", std::to_string(schedule.period_steps));
  if (shown.is_auto("reduce_GBps")) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", 1e-9 / ctx.gpu_reduce_s_per_byte());
    shown.set("reduce_GBps", buf);
  }
  r.params = shown.values();

  const double compute = q.workload ? q.workload->compute_s() : 0.0;
  std::optional<double> iteration;
  if (q.executor == "formula") {
    const formulas::Breakdown b = predict_with_formula(s, ctx);
    r.phases = b.phases;
    r.time_per_sync_s = b.total();
  } else {
    const AnalyticResult a = run_analytic(t, schedule, participant_costs(ctx, schedule), compute);
    r.phases = a.phases;
    r.time_per_sync_s = a.sync_s;
    for (std::size_t i = 0; i < std::min<std::size_t>(3, a.bounding_links.size()); ++i) {
      r.bounding_links.emplace_back(describe_link(t, a.bounding_links[i]), a.bounding_links[i].seconds);
    }
    if (schedule.asynchronous) {
      iteration = a.iteration_s;
      r.notes.push_back("steady state bounded by the " + a.bound);
    }
  }
  if (q.workload) add_training_times(r, *q.workload, iteration);
  return r;
}

}  // namespace gradsync::models
