#include "models/predict.h"

#include "models/error.h"
#include "models/formula_executor.h"

namespace gradsync::models {

std::vector<std::string> executor_names() { return {"formula"}; }

void add_training_times(ResultRecord& r, const Workload& w) {
  const double compute = w.compute_s();
  const double bn = static_cast<double>(w.minibatches_per_epoch);
  r.compute_s_per_minibatch = compute;
  r.time_per_iteration_s = formulas::minibatch_time(compute, r.time_per_sync_s);
  r.time_per_epoch_s = formulas::epoch_time(bn, r.ranks, *r.time_per_iteration_s);
  r.one_gpu_epoch_s = formulas::epoch_time(bn, 1, compute);
  if (*r.time_per_epoch_s > 0) r.speedup_vs_1gpu = *r.one_gpu_epoch_s / *r.time_per_epoch_s;
}

ResultRecord predict(const PredictRequest& q) {
  if (!q.topology || !q.strategy) throw std::logic_error("predict: topology and strategy are required");
  if (!q.workload && !q.bytes) throw std::logic_error("predict: a workload or a size is required");
  const Topology& t = *q.topology;
  const Strategy& s = *q.strategy;
  StrategyParams params = resolve_params(s, q.params);

  ResultRecord r;
  r.executor = q.executor;
  r.topology = t.name();
  r.strategy = s.name;
  r.ranks = q.placement.size();
  for (std::size_t node : q.placement.ranks) r.rank_nodes.push_back(t.node(node).id);
  r.bytes = q.bytes ? *q.bytes : q.workload->gradient_bytes();
  r.workload = q.workload ? q.workload->name : "";

  const FormulaContext ctx{t, q.placement, params, r.bytes};
  // The record shows what "auto" turned into.
  StrategyParams shown = params;
  if (shown.values().count("k")) shown.set("k", std::to_string(ctx.groups()));
  if (s.uses_server) r.server = t.node(ctx.server_node()).id;
  if (shown.values().count("server")) shown.set("server", r.server);
  if (shown.is_auto("reduce_GBps")) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", 1e-9 / ctx.gpu_reduce_s_per_byte());
    shown.set("reduce_GBps", buf);
  }
  r.params = shown.values();

  if (q.executor == "formula") {
    const formulas::Breakdown b = predict_with_formula(s, ctx);
    r.phases = b.phases;
    r.time_per_sync_s = b.total();
  } else {
    throw InputError("--executor " + q.executor + ": unknown executor; valid executors: " + join(executor_names()));
  }
  if (q.workload) add_training_times(r, *q.workload);
  return r;
}

}  // namespace gradsync::models
