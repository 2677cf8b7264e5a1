// What is being trained: its layers in forward order (each layer's parameters and its forward
// and backward cost), the compute time per minibatch (measured, or from FLOPs and a device
// rate), and the dataset size.
//
// JSON: {"name", "description"?, "dtype_bytes", "samples_per_minibatch"?,
//        "layers": [{"name", "params", "dtype_bytes"?,
//                    "flops"? | "forward_flops"? + "backward_flops"?,
//                    "forward_s"? + "backward_s"?, "rows"?}],
//        "minibatches_per_epoch",
//        "compute_s_per_minibatch" | "device_TFLOPS" | every layer's forward_s and backward_s,
//        "convergence"? (models/workload/convergence.h; needs samples_per_minibatch)}
// FLOPs are per minibatch. `flops` is forward + backward, split one third forward, two thirds
// backward (a layer's backward computes the gradients of both its input and its weights, each
// the forward's cost). A layer's `dtype_bytes` is its gradient's element size (default: the
// workload's). `rows` is the number of rows of the layer's weight matrix (e.g. the vocabulary of
// an embedding or output layer), used by row-sampling strategies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/support/json_input.h"
#include "models/workload/convergence.h"

namespace gradsync::models {

struct Layer {
  std::string name;
  std::int64_t params = 0;
  double forward_flops = 0;   // per minibatch
  double backward_flops = 0;  // per minibatch
  std::optional<std::int64_t> rows;
  int dtype_bytes = 0;  // 0: the workload's
  std::optional<double> forward_s;   // measured, per minibatch
  std::optional<double> backward_s;  // measured, per minibatch

  double flops() const { return forward_flops + backward_flops; }
  // Splits forward + backward FLOPs the usual way: a third forward, two thirds backward.
  void set_flops(double total);
};

// A layer's compute per minibatch on one GPU.
struct LayerTimes {
  double forward_s = 0;
  double backward_s = 0;
};

struct Workload {
  std::string name;
  std::string description;
  int dtype_bytes = 4;
  std::optional<std::int64_t> samples_per_minibatch;
  // Each rank's rows of this step's minibatch (the words a language model's minibatch holds), for
  // strategies that sample rows (source A's V_base) where a real run knows them; empty: drawn.
  // Set by gradsync-train each step, never read from JSON.
  std::vector<std::vector<std::int64_t>> minibatch_rows;
  std::vector<Layer> layers;  // in forward order
  std::int64_t minibatches_per_epoch = 1;
  std::optional<double> compute_s_per_minibatch;  // measured
  std::optional<double> device_TFLOPS;  // effective rate, used with the layers' FLOPs
  // Samples to a target at a global batch, the noise scale, each strategy's own cost in samples.
  std::optional<ConvergenceFacts> convergence;

  std::int64_t total_params() const;
  double total_flops() const;
  int layer_dtype_bytes(const Layer& l) const { return l.dtype_bytes > 0 ? l.dtype_bytes : dtype_bytes; }
  double layer_gradient_bytes(const Layer& l) const { return static_cast<double>(l.params) * layer_dtype_bytes(l); }
  double gradient_bytes() const;
  // The gradient as elements of the workload's dtype (total_params() when every layer has it).
  std::uint64_t gradient_elements() const;
  // Each layer's forward and backward compute. A measured total (compute_s_per_minibatch) is
  // shared out by the layers' FLOPs, or by their parameters where no layer has FLOPs.
  std::vector<LayerTimes> layer_times() const;
  // Compute (forward, backward, update) time of one minibatch on one GPU.
  double compute_s() const;
};

// The same model shrunk by `factor` (0 < factor <= 1): each layer's parameters (a row-structured
// layer keeps its row width, with fewer rows), FLOPs and measured times in proportion, a layer
// with parameters keeping at least one; the epoch unchanged. With `compute_factor`, the compute
// times are scaled by that instead (FLOPs still by `factor`, a device rate in step): on links
// slowed k times, compute_factor = factor * k keeps the step's compute : communication.
Workload scaled(const Workload& w, double factor);
Workload scaled(const Workload& w, double factor, double compute_factor);

Workload workload_from_json(const JsonView& doc);
ordered_json workload_to_json(const Workload& w);

// Built-in models: the source documents' and modern ones from their published architectures
// (models/workload/presets.cpp).
std::vector<std::string> workload_preset_names();
std::optional<Workload> workload_preset(const std::string& name);
// A preset name or a JSON file path; unknown names list the presets.
Workload load_workload(const std::string& name_or_path);

}  // namespace gradsync::models
