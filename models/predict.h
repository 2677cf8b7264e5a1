// One prediction: a strategy on a placement of a topology, for a workload (or a bare
// size), through one executor, as a result record with per-iteration and per-epoch
// times (source A, eqs. 5–8) and the speed-up over one GPU training alone.
#pragma once

#include <optional>
#include <string>

#include "models/placement.h"
#include "models/result.h"
#include "models/strategy.h"
#include "models/topology.h"
#include "models/workload.h"

namespace gradsync::models {

struct PredictRequest {
  const Topology* topology = nullptr;
  const Workload* workload = nullptr;  // optional
  std::optional<double> bytes;  // overrides the workload's gradient size
  const Strategy* strategy = nullptr;
  SyncParams params;
  Placement placement;
  std::string executor = "formula";
};

std::vector<std::string> executor_names();

ResultRecord predict(const PredictRequest& request);

// Adds per-iteration, per-epoch and speed-up figures to a record whose time_per_sync_s
// is set (every executor shares this step).
void add_training_times(ResultRecord& record, const Workload& workload);

}  // namespace gradsync::models
