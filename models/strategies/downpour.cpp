// Downpour SGD (source C) and data-parallel ASGD (source D): asynchronous workers push
// their accumulated gradients to a parameter server and pull the weights every `step`
// local steps; the server applies each push as it arrives. The schedule describes one
// worker's exchange; executors compute the steady state (workers do not wait for each
// other, but they share the server's links).
#include "models/executors/result.h"
#include "models/strategies/common.h"

namespace gradsync::models::strategies {

namespace downpour_strategy {

Schedule build_async(const StrategyContext& ctx, const std::string& name, long default_samples) {
  Schedule s = build_ps(ctx, name);
  s.asynchronous = true;
  s.rounds[0].phase = "push";
  s.rounds[0].compute_phase = "apply";
  s.rounds[1].phase = "pull";
  if (ctx.params.is_auto("step")) {
    s.period_steps = static_cast<int>(std::max<long>(1, default_samples / std::max<long>(1, ctx.samples_per_minibatch())));
  } else {
    s.period_steps = static_cast<int>(ctx.params.integer("step"));  // at most 10^6: the simulator runs two periods
  }
  ctx.resolved_as("step", std::to_string(s.period_steps));
  s.notes.push_back("push and pull every " + std::to_string(s.period_steps) + " local steps");
  return s;
}

ParamSpec step_param(const std::string& default_value, const std::string& help) {
  ParamSpec p{"step", default_value, help, integer_domain(1, 1000000, 100, true)};
  p.resolved = true;
  p.shown = ParamSpec::Shown::when_resolved;
  return p;
}

// What both share; `samples` per push/pull when step is auto.
Strategy asynchronous(const std::string& name, long samples) {
  Strategy s;
  s.name = name;
  s.uses_server = true;
  s.needs_workload = true;
  s.changes_training = [](const ResultRecord&) { return std::string("updates asynchronously (stale gradients)"); };
  s.closed_form = [](const StrategyContext& ctx) { return formulas::parameter_server(ctx.server_inputs()); };
  s.build = [name, samples](const StrategyContext& ctx) { return build_async(ctx, name, samples); };
  return s;
}

Strategy downpour() {
  Strategy s = asynchronous("downpour", 0);
  s.summary = "Downpour SGD: asynchronous push of accumulated gradients and pull of weights every `step` steps (source C)";
  s.source = "C";
  s.order = 90;
  s.params = {step_param("20", "local steps between push/pull (source C: about 20 worked best)"), server_param()};
  s.test_variants = {{{"step=3"}}};
  return s;
}

Strategy asgd() {
  Strategy s = asynchronous("asgd", 256);
  s.summary = "data-parallel ASGD on a parameter server (source D's CNTK): push/pull every syncPeriodPerWorker samples";
  s.source = "D";
  s.order = 100;
  s.params = {step_param("auto", "local steps between push/pull; auto: 256 samples (CNTK's syncPeriodPerWorker) / minibatch"),
              server_param()};
  return s;
}

const Registration registered_downpour(downpour());
const Registration registered_asgd(asgd());

}  // namespace downpour_strategy

}  // namespace gradsync::models::strategies
