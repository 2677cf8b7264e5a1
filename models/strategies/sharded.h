// What the sharded data-parallel strategies (zero1, zero2, fsdp) share: per training step a
// reduce-scatter of the gradients and one or more all-gathers of the parameters, both run by the
// strategy they wrap ("inner": ring or nccl, through its "collective" parameter); what each GPU
// keeps (models/workload/memory.h); and where in the step each collective runs (their step plans).
#pragma once

#include <string>
#include <vector>

#include "models/schedule/schedule.h"
#include "models/strategies/strategy.h"
#include "models/strategies/strategy_context.h"

namespace gradsync::models::strategies {

// A sharded strategy's definition: the inner collectives it takes, its sharding, its bus factor
// ((1 + all_gathers)(N-1)/N: every collective of the step) and its closed form (the inner's
// reduce-scatter, then its all-gathers). The caller sets the name, summary, order and step plan.
Strategy sharded_strategy(Sharding sharding, int all_gathers);

// One synchronisation as the schedule every executor runs: the inner strategy's reduce-scatter of
// the gradient, then `all_gathers` all-gathers of what the owners updated (the parameters, one per
// pass that needs them). Each rank ends with the whole sum: its shard reduced, the rest gathered.
Schedule build_sharded(const StrategyContext& ctx, const std::string& name, int all_gathers);

}  // namespace gradsync::models::strategies
