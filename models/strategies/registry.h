// One function per strategy file; registry.cpp lists them (one line each).
#pragma once

#include "models/strategy.h"

namespace gradsync::models::strategies {

const Strategy& ps();
const Strategy& ring();
const Strategy& hierarchical();
const Strategy& ps_hra();

}  // namespace gradsync::models::strategies
