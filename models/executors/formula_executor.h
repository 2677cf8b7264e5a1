// The "formula" executor: the papers' closed forms evaluated on a topology, with B the
// slowest path a strategy uses and a its largest latency (see strategy_context.h).
#pragma once

#include "models/strategies/formulas.h"
#include "models/strategies/strategy.h"
#include "models/strategies/strategy_context.h"

namespace gradsync::models {

// Evaluates the strategy's closed form; InputError when the documents give none.
formulas::Breakdown predict_with_formula(const Strategy& strategy, const StrategyContext& context);

}  // namespace gradsync::models
