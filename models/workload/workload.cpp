#include "models/workload/workload.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "models/support/error.h"
#include "models/support/format.h"
#include "models/support/units.h"

namespace gradsync::models {

void Layer::set_flops(double total) {
  forward_flops = total / 3.0;
  backward_flops = total - forward_flops;
}

std::int64_t Workload::total_params() const {
  std::int64_t total = 0;
  for (const auto& l : layers) total += l.params;
  return total;
}

double Workload::total_flops() const {
  double total = 0;
  for (const auto& l : layers) total += l.flops();
  return total;
}

double Workload::gradient_bytes() const {
  double total = 0;
  for (const auto& l : layers) total += layer_gradient_bytes(l);
  return total;
}

std::uint64_t Workload::gradient_elements() const {
  return static_cast<std::uint64_t>(std::ceil(gradient_bytes() / dtype_bytes));
}

std::vector<LayerTimes> Workload::layer_times() const {
  std::vector<LayerTimes> out;
  out.reserve(layers.size());
  if (!compute_s_per_minibatch && !device_TFLOPS) {
    for (const auto& l : layers) out.push_back({l.forward_s.value_or(0.0), l.backward_s.value_or(0.0)});
    return out;
  }
  if (device_TFLOPS) {
    const double rate = *device_TFLOPS * 1e12;
    for (const auto& l : layers) out.push_back({l.forward_flops / rate, l.backward_flops / rate});
    return out;
  }
  // A measured total: shared by FLOPs; else by parameters, a third forward; else evenly.
  const double total = *compute_s_per_minibatch;
  const double flops = total_flops();
  const auto params = static_cast<double>(total_params());
  for (const auto& l : layers) {
    if (flops > 0) {
      out.push_back({total * l.forward_flops / flops, total * l.backward_flops / flops});
    } else {
      const double share = params > 0 ? static_cast<double>(l.params) / params : 1.0 / static_cast<double>(layers.size());
      out.push_back({total * share / 3.0, total * share * 2.0 / 3.0});
    }
  }
  return out;
}

double Workload::compute_s() const {
  if (compute_s_per_minibatch) return *compute_s_per_minibatch;
  if (device_TFLOPS) return total_flops() / (*device_TFLOPS * 1e12);
  double total = 0;
  for (const LayerTimes& t : layer_times()) total += t.forward_s + t.backward_s;
  return total;
}

Workload scaled(const Workload& w, double factor) { return scaled(w, factor, factor); }

Workload scaled(const Workload& w, double factor, double compute_factor) {
  Workload s = w;
  if (factor == 1 && compute_factor == 1) return s;
  s.name = w.name + "-x" + number_text(factor, 3);
  for (Layer& l : s.layers) {
    if (l.params > 0) {
      if (l.rows) {
        const std::int64_t width = l.params / *l.rows;
        l.rows = std::max<std::int64_t>(1, std::llround(static_cast<double>(*l.rows) * factor));
        l.params = *l.rows * width;
      } else {
        l.params = std::max<std::int64_t>(1, std::llround(static_cast<double>(l.params) * factor));
      }
    }
    l.forward_flops *= factor;
    l.backward_flops *= factor;
    if (l.forward_s) *l.forward_s *= compute_factor;
    if (l.backward_s) *l.backward_s *= compute_factor;
  }
  if (s.compute_s_per_minibatch) *s.compute_s_per_minibatch *= compute_factor;
  if (s.device_TFLOPS) *s.device_TFLOPS *= factor / compute_factor;
  s.description = w.name + " scaled by " + number_text(factor, 3) + " (the same layers, fewer parameters, less compute)";
  if (compute_factor != factor) {
    s.name += "-t" + number_text(compute_factor / factor, 3);
    s.description += ", its compute " + number_text(compute_factor / factor, 3) + "x slower";
  }
  return s;
}

namespace {
// Bounds that keep every derived time finite (epoch = minibatches x iteration).
constexpr double kMaxFlops = 1e24;     // per layer and minibatch
constexpr double kMaxComputeS = 1e6;   // per minibatch (11.6 days)

int dtype_bytes_of(const JsonView& v) {
  const auto bytes = v.as_integer();
  if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) v.fail("1, 2, 4 or 8 bytes per value");
  return static_cast<int>(bytes);
}

// A layer's FLOPs: `flops` (forward + backward) or its two halves, not both.
void read_flops(const JsonView& lv, Layer& l) {
  const bool total = lv.has("flops");
  const bool split = lv.has("forward_flops") || lv.has("backward_flops");
  if (total && split) lv.fail_message("give \"flops\" (forward + backward) or \"forward_flops\" and \"backward_flops\", not both");
  if (total) l.set_flops(lv.at("flops").as_number_in(0, kMaxFlops, "FLOPs per minibatch"));
  if (split) {
    l.forward_flops = lv.at("forward_flops").as_number_in(0, kMaxFlops, "FLOPs per minibatch");
    l.backward_flops = lv.at("backward_flops").as_number_in(0, kMaxFlops, "FLOPs per minibatch");
  }
}

void read_times(const JsonView& lv, Layer& l) {
  if (lv.has("forward_s") != lv.has("backward_s")) {
    lv.fail_message("a measured layer needs both \"forward_s\" and \"backward_s\" (seconds per minibatch)");
  }
  if (!lv.has("forward_s")) return;
  l.forward_s = lv.at("forward_s").as_number_in(0, kMaxComputeS, "seconds");
  l.backward_s = lv.at("backward_s").as_number_in(0, kMaxComputeS, "seconds");
}
}  // namespace

Workload workload_from_json(const JsonView& doc) {
  static const std::vector<std::string> keys = {"name", "description", "dtype_bytes", "samples_per_minibatch", "layers",
                                                "minibatches_per_epoch", "compute_s_per_minibatch", "device_TFLOPS",
                                                "convergence"};
  static const std::vector<std::string> layer_keys = {"name",           "params",    "dtype_bytes", "flops", "forward_flops",
                                                      "backward_flops", "forward_s", "backward_s",  "rows"};
  doc.expect_object(keys);
  Workload w;
  w.name = doc.at("name").as_string();
  if (w.name.empty()) doc.at("name").fail("a non-empty name");
  if (auto v = doc.get("description")) w.description = v->as_string();
  w.dtype_bytes = dtype_bytes_of(doc.at("dtype_bytes"));
  if (auto v = doc.get("samples_per_minibatch")) w.samples_per_minibatch = v->as_integer_at_least(1);
  const auto layers = doc.at("layers").items();
  if (layers.empty()) doc.at("layers").fail("at least one layer");
  // The gradient must stay within kMaxBytes: sizes are doubles and element counts 64-bit
  // integers downstream.
  double total_bytes = 0;
  std::set<std::string> names;
  std::size_t measured_layers = 0;
  for (const auto& lv : layers) {
    lv.expect_object(layer_keys);
    Layer l;
    l.name = lv.at("name").as_string();
    if (l.name.empty()) lv.at("name").fail("a non-empty layer name");
    if (!names.insert(l.name).second) lv.at("name").fail("a layer name not used by another layer");
    if (auto v = lv.get("dtype_bytes")) l.dtype_bytes = dtype_bytes_of(*v);
    l.params = lv.at("params").as_integer_at_least(0);
    const int bytes = l.dtype_bytes > 0 ? l.dtype_bytes : w.dtype_bytes;
    const auto max_params = static_cast<std::int64_t>(kMaxBytes) / bytes;
    if (l.params > max_params) {
      lv.at("params").fail("at most " + std::to_string(max_params) + " params (a gradient of at most 1 PiB)");
    }
    total_bytes += static_cast<double>(l.params) * bytes;
    if (total_bytes > kMaxBytes) {
      lv.at("params").fail("params that keep the gradient within 1 PiB (the layers so far hold " +
                           format_bytes(total_bytes) + ")");
    }
    read_flops(lv, l);
    read_times(lv, l);
    if (l.forward_s) ++measured_layers;
    if (auto r = lv.get("rows")) {
      l.rows = r->as_integer_at_least(1);
      if (l.params % *l.rows != 0) r->fail("a row count that divides the layer's " + std::to_string(l.params) + " params");
    }
    w.layers.push_back(l);
  }
  w.minibatches_per_epoch = doc.at("minibatches_per_epoch").as_integer_at_least(1);
  const bool measured = doc.has("compute_s_per_minibatch");
  const bool rate = doc.has("device_TFLOPS");
  const bool per_layer = measured_layers == w.layers.size();
  if (measured_layers > 0 && !per_layer) {
    doc.at("layers").fail_message("gives \"forward_s\" and \"backward_s\" for " + std::to_string(measured_layers) + " of " +
                                  std::to_string(w.layers.size()) + " layers: measured times go on every layer or none");
  }
  if (static_cast<int>(measured) + static_cast<int>(rate) + static_cast<int>(per_layer) != 1) {
    doc.fail_message("needs exactly one of \"compute_s_per_minibatch\" (a measured time), \"device_TFLOPS\" (with "
                     "per-layer \"flops\") and every layer's measured \"forward_s\" and \"backward_s\"");
  }
  if (measured) w.compute_s_per_minibatch = doc.at("compute_s_per_minibatch").as_number_in(0, kMaxComputeS, "seconds");
  if (rate) {
    w.device_TFLOPS = doc.at("device_TFLOPS").as_positive();
    if (*w.device_TFLOPS < 1e-6 || *w.device_TFLOPS > 1e6) doc.at("device_TFLOPS").fail("a rate in TFLOPS between 1e-06 and 1e+06");
    if (w.total_flops() <= 0) doc.at("layers").fail("layers with \"flops\" (device_TFLOPS needs FLOPs to turn into time)");
  }
  if (per_layer && w.compute_s() > kMaxComputeS) {
    doc.at("layers").fail("measured layer times that add up to at most 1e+06 s per minibatch");
  }
  if (auto c = doc.get("convergence")) {
    if (!w.samples_per_minibatch) c->fail_message("needs \"samples_per_minibatch\": the global batch is GPUs x that");
    w.convergence = convergence_from_json(*c);
  }
  return w;
}

ordered_json workload_to_json(const Workload& w) {
  ordered_json layers = ordered_json::array();
  for (const auto& l : w.layers) {
    ordered_json layer = {{"name", l.name}, {"params", l.params}};
    if (l.dtype_bytes > 0) layer["dtype_bytes"] = l.dtype_bytes;
    layer["forward_flops"] = l.forward_flops;
    layer["backward_flops"] = l.backward_flops;
    if (l.forward_s) layer["forward_s"] = *l.forward_s;
    if (l.backward_s) layer["backward_s"] = *l.backward_s;
    if (l.rows) layer["rows"] = *l.rows;
    layers.push_back(layer);
  }
  ordered_json out = {{"name", w.name}, {"dtype_bytes", w.dtype_bytes}, {"layers", layers},
              {"minibatches_per_epoch", w.minibatches_per_epoch}};
  if (!w.description.empty()) out["description"] = w.description;
  if (w.samples_per_minibatch) out["samples_per_minibatch"] = *w.samples_per_minibatch;
  if (w.compute_s_per_minibatch) out["compute_s_per_minibatch"] = *w.compute_s_per_minibatch;
  if (w.device_TFLOPS) out["device_TFLOPS"] = *w.device_TFLOPS;
  if (w.convergence) out["convergence"] = convergence_to_json(*w.convergence);
  return out;
}

Workload load_workload(const std::string& name_or_path) {
  if (auto preset = workload_preset(name_or_path)) return *preset;
  std::error_code ec;
  if (std::filesystem::exists(name_or_path, ec)) return workload_from_json(JsonView::load_file(name_or_path));
  throw InputError("workload \"" + name_or_path + "\": neither a preset" + did_you_mean(name_or_path, workload_preset_names()) +
                   " nor an existing file; presets: " + join(workload_preset_names()));
}

}  // namespace gradsync::models
