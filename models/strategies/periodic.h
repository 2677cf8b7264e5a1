// What model averaging and BMUF share: an inner all-reduce of the model every T steps.
#pragma once

#include <string>
#include <vector>

#include "models/schedule/schedule.h"
#include "models/strategies/strategy.h"
#include "models/strategies/strategy_context.h"

namespace gradsync::models::strategies {

// A periodic strategy's definition: T, then `own` parameters, the inner all-reduces it
// takes; it needs a workload, changes the training when T > 1, and has the inner's closed
// form (per synchronisation).
Strategy periodic_strategy(const std::string& name, const std::string& T_help, std::vector<ParamSpec> own);
// The inner strategy's schedule, renamed, with period_steps = T (auto: `samples_per_sync`,
// CNTK's syncPeriod, over the samples of a minibatch).
Schedule build_periodic(const StrategyContext& ctx, const std::string& name, long samples_per_sync);

}  // namespace gradsync::models::strategies
