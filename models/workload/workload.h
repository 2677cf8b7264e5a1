// What is being trained: per-layer parameter counts (and FLOPs), the compute time per
// minibatch (measured, or from FLOPs and a device rate), and the dataset size.
//
// JSON: {"name", "description"?, "dtype_bytes", "samples_per_minibatch"?,
//        "layers": [{"name", "params", "flops"?, "rows"?}],
//        "minibatches_per_epoch", "compute_s_per_minibatch" | "device_TFLOPS"}
// `flops` are per minibatch, forward + backward. `rows` is the number of rows of the
// layer's weight matrix (e.g. the vocabulary of an embedding or output layer), used
// by row-sampling strategies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/support/json_input.h"

namespace gradsync::models {

struct Layer {
  std::string name;
  std::int64_t params = 0;
  double flops = 0;  // per minibatch, forward + backward
  std::optional<std::int64_t> rows;
};

struct Workload {
  std::string name;
  std::string description;
  int dtype_bytes = 4;
  std::optional<std::int64_t> samples_per_minibatch;
  std::vector<Layer> layers;
  std::int64_t minibatches_per_epoch = 1;
  std::optional<double> compute_s_per_minibatch;  // measured
  std::optional<double> device_TFLOPS;  // effective rate, used with the layers' FLOPs

  std::int64_t total_params() const;
  double total_flops() const;
  double gradient_bytes() const { return static_cast<double>(total_params()) * dtype_bytes; }
  // Compute (forward, backward, update) time of one minibatch on one GPU.
  double compute_s() const;
};

Workload workload_from_json(const JsonView& doc);
ordered_json workload_to_json(const Workload& w);

// Built-in models of the source documents.
std::vector<std::string> workload_preset_names();
std::optional<Workload> workload_preset(const std::string& name);
// A preset name or a JSON file path; unknown names list the presets.
Workload load_workload(const std::string& name_or_path);

}  // namespace gradsync::models
