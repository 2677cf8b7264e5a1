// What model averaging and BMUF share: an inner all-reduce of the model every T steps.
#pragma once

#include <string>
#include <vector>

#include "models/schedule.h"
#include "models/strategy.h"
#include "models/strategy_context.h"

namespace gradsync::models::strategies {

// `own` followed by "inner" and the parameters of the strategies that may be inner.
std::vector<ParamSpec> periodic_params(std::vector<ParamSpec> own);
// T from the "T" parameter ("auto": samples_per_sync / samples per minibatch, at least 1).
int sync_period(const StrategyContext& ctx, long samples_per_sync);
// The inner strategy's schedule, renamed, with period_steps = T.
Schedule build_periodic(const StrategyContext& ctx, const std::string& name, long samples_per_sync);
// The inner strategy's closed form (per synchronisation).
formulas::Breakdown periodic_closed_form(const StrategyContext& ctx, const std::string& name);

}  // namespace gradsync::models::strategies
