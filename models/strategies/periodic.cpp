#include "models/strategies/periodic.h"

#include <algorithm>

#include "models/error.h"
#include "models/strategies/common.h"

namespace gradsync::models::strategies {

namespace {
const std::vector<std::string> kInner = {"ring", "hierarchical", "ps"};
}

std::vector<ParamSpec> periodic_params(std::vector<ParamSpec> own) {
  own.push_back({"inner", "ring", "how the models are all-reduced: ring, hierarchical or ps"});
  for (ParamSpec p : {k_param(), grouping_param(), speeds_param(), ring_order_param(), server_param()}) own.push_back(p);
  return own;
}

int sync_period(const StrategyContext& ctx, long samples_per_sync) {
  // At most a million steps per period: the simulator runs two periods.
  if (!ctx.params.is_auto("T")) return static_cast<int>(ctx.params.integer("T", 1, 1000000));
  return static_cast<int>(std::max<long>(1, samples_per_sync / std::max<long>(1, ctx.samples_per_minibatch())));
}

Schedule build_periodic(const StrategyContext& ctx, const std::string& name, long samples_per_sync) {
  const Strategy& inner = inner_strategy(ctx, name, kInner);
  Schedule s = inner.build(ctx);
  s.strategy = name;
  s.period_steps = sync_period(ctx, samples_per_sync);
  s.notes.push_back("synchronises every " + std::to_string(s.period_steps) + " steps through " + inner.name);
  return s;
}

formulas::Breakdown periodic_closed_form(const StrategyContext& ctx, const std::string& name) {
  const Strategy& inner = inner_strategy(ctx, name, kInner);
  return inner.closed_form(ctx);
}

}  // namespace gradsync::models::strategies
