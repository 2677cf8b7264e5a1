// Downpour SGD (source C) and data-parallel ASGD (source D): asynchronous workers push
// their accumulated gradients to a parameter server and pull the weights every `step`
// local steps; the server applies each push as it arrives. The schedule describes one
// worker's exchange; executors compute the steady state (workers do not wait for each
// other, but they share the server's links).
#include "models/strategies/common.h"
#include "models/strategies/registry.h"

namespace gradsync::models::strategies {

namespace {

Schedule build_async(const StrategyContext& ctx, const std::string& name, long default_samples) {
  Schedule s = build_ps(ctx, name);
  s.asynchronous = true;
  s.rounds[0].phase = "push";
  s.rounds[0].compute_phase = "apply";
  s.rounds[1].phase = "pull";
  if (ctx.params.is_auto("step")) {
    s.period_steps = static_cast<int>(std::max<long>(1, default_samples / std::max<long>(1, ctx.samples_per_minibatch())));
  } else {
    s.period_steps = static_cast<int>(ctx.params.integer("step", 1, 1000000));  // the simulator runs two periods
  }
  s.notes.push_back("push and pull every " + std::to_string(s.period_steps) + " local steps");
  return s;
}

formulas::Breakdown exchange_formula(const StrategyContext& ctx) { return formulas::parameter_server(ctx.server_inputs()); }

}  // namespace

const Strategy& downpour() {
  static const Strategy s{
      "downpour",
      "Downpour SGD: asynchronous push of accumulated gradients and pull of weights every `step` steps (source C)",
      "C",
      {{"step", "20", "local steps between push/pull (source C: about 20 worked best)"}, server_param()},
      true,
      exchange_formula,
      [](const StrategyContext& ctx) { return build_async(ctx, "downpour", 0); },
  };
  return s;
}

const Strategy& asgd() {
  static const Strategy s{
      "asgd",
      "data-parallel ASGD on a parameter server (source D's CNTK): push/pull every syncPeriodPerWorker samples",
      "D",
      {{"step", "auto", "local steps between push/pull; auto: 256 samples (CNTK's syncPeriodPerWorker) / minibatch"},
       server_param()},
      true,
      exchange_formula,
      [](const StrategyContext& ctx) { return build_async(ctx, "asgd", 256); },
  };
  return s;
}

}  // namespace gradsync::models::strategies
