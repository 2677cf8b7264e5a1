// One function per strategy file; registry.cpp lists them (one line each).
#pragma once

#include <string>

#include "models/schedule.h"
#include "models/strategy.h"
#include "models/strategy_context.h"

namespace gradsync::models::strategies {

const Strategy& ps();
const Strategy& ring();
const Strategy& hierarchical();
const Strategy& ps_hra();
const Strategy& sampled();
const Strategy& onebit();
const Strategy& model_avg();
const Strategy& bmuf();
const Strategy& downpour();
const Strategy& asgd();

// The parameter-server exchange (gather, update, send back), shared by ps and downpour/asgd.
Schedule build_ps(const StrategyContext& ctx, const std::string& name);

}  // namespace gradsync::models::strategies
