#include "models/strategies/periodic.h"

#include <algorithm>

#include "models/support/error.h"
#include "models/strategies/common.h"

namespace gradsync::models::strategies {

namespace {

// T from the "T" parameter ("auto": samples_per_sync / samples per minibatch, at least 1).
int sync_period(const StrategyContext& ctx, long samples_per_sync) {
  // At most a million steps per period: the simulator runs two periods.
  const int T = ctx.params.is_auto("T")
                    ? static_cast<int>(std::max<long>(1, samples_per_sync / std::max<long>(1, ctx.samples_per_minibatch())))
                    : static_cast<int>(ctx.params.integer("T"));
  ctx.resolved_as("T", std::to_string(T));
  return T;
}

}  // namespace

Strategy periodic_strategy(const std::string& name, const std::string& T_help, std::vector<ParamSpec> own) {
  Strategy s;
  s.name = name;
  s.source = "C, D";
  ParamSpec T{"T", "auto", T_help, integer_domain(1, 1000000, 1000, true)};
  T.period = true;
  T.resolved = true;
  T.shown = ParamSpec::Shown::when_resolved;
  s.params = {T};
  s.params.insert(s.params.end(), own.begin(), own.end());
  s.params.push_back(inner_param("ring", "how the models are all-reduced: ring, hierarchical or ps"));
  s.inners = {{"ring"}, {"hierarchical"}, {"ps", false}};
  s.needs_workload = true;
  s.changes_training = changes_by_period;
  s.closed_form = [](const StrategyContext& ctx) { return inner_strategy(ctx).closed_form(ctx); };
  return s;
}

Schedule build_periodic(const StrategyContext& ctx, const std::string& name, long samples_per_sync) {
  const Strategy& inner = inner_strategy(ctx);
  Schedule s = inner.build(ctx);
  s.strategy = name;
  s.period_steps = sync_period(ctx, samples_per_sync);
  s.averages_models = true;
  s.notes.push_back("synchronises every " + std::to_string(s.period_steps) + " steps through " + inner.name);
  return s;
}

}  // namespace gradsync::models::strategies
