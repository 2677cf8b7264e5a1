// Workloads the tests of several executors share.
#pragma once

#include "models/support/json_input.h"
#include "models/workload/workload.h"

namespace test_workloads {

// Three layers of 1.6 MB (400,000 fp32 parameters: blocks of equal size for a ring of 4), each
// 1 ms forward and 2 ms backward, measured.
inline gradsync::models::Workload three_layers() {
  return gradsync::models::workload_from_json(gradsync::models::JsonView::parse(
      R"({"name": "w", "dtype_bytes": 4, "minibatches_per_epoch": 1, "layers": [
            {"name": "a", "params": 400000, "forward_s": 0.001, "backward_s": 0.002},
            {"name": "b", "params": 400000, "forward_s": 0.001, "backward_s": 0.002},
            {"name": "c", "params": 400000, "forward_s": 0.001, "backward_s": 0.002}]})",
      "three-layers.json"));
}

}  // namespace test_workloads
