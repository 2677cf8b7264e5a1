// One point of an experiment through one executor: formula and analytic come from the
// models library; sim runs the schedule in SimGrid (one synchronisation alone for its
// time and phases, then a training loop for iteration time, stragglers and, for
// asynchronous strategies, update throughput and staleness).
#pragma once

#include <optional>
#include <string>

#include "experiments/experiment.h"
#include "models/predict.h"
#include "models/result.h"
#include "models/trace.h"

namespace gradsync::experiments {

// `trace` (optional) receives the simulated training loop's timeline.
models::ResultRecord evaluate(const models::PredictRequest& request, const std::string& executor,
                              const SimSettings& sim, models::Trace* trace = nullptr);

}  // namespace gradsync::experiments
