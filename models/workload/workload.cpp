#include "models/workload/workload.h"

#include <cmath>
#include <filesystem>
#include <set>

#include "models/support/error.h"
#include "models/support/units.h"

namespace gradsync::models {

std::int64_t Workload::total_params() const {
  std::int64_t total = 0;
  for (const auto& l : layers) total += l.params;
  return total;
}

double Workload::total_flops() const {
  double total = 0;
  for (const auto& l : layers) total += l.flops;
  return total;
}

double Workload::compute_s() const {
  if (compute_s_per_minibatch) return *compute_s_per_minibatch;
  return total_flops() / (*device_TFLOPS * 1e12);
}

namespace {
// Bounds that keep every derived time finite (epoch = minibatches x iteration).
constexpr double kMaxFlops = 1e24;     // per layer and minibatch
constexpr double kMaxComputeS = 1e6;   // per minibatch (11.6 days)
}  // namespace

Workload workload_from_json(const JsonView& doc) {
  static const std::vector<std::string> keys = {"name", "description", "dtype_bytes", "samples_per_minibatch", "layers",
                                                "minibatches_per_epoch", "compute_s_per_minibatch", "device_TFLOPS"};
  static const std::vector<std::string> layer_keys = {"name", "params", "flops", "rows"};
  doc.expect_object(keys);
  Workload w;
  w.name = doc.at("name").as_string();
  if (w.name.empty()) doc.at("name").fail("a non-empty name");
  if (auto v = doc.get("description")) w.description = v->as_string();
  {
    const auto v = doc.at("dtype_bytes");
    const auto bytes = v.as_integer();
    if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) v.fail("1, 2, 4 or 8 bytes per value");
    w.dtype_bytes = static_cast<int>(bytes);
  }
  if (auto v = doc.get("samples_per_minibatch")) w.samples_per_minibatch = v->as_integer_at_least(1);
  const auto layers = doc.at("layers").items();
  if (layers.empty()) doc.at("layers").fail("at least one layer");
  // The gradient (every layer's params x dtype_bytes) must stay within kMaxBytes: sizes are
  // doubles and element counts 64-bit integers downstream.
  const auto max_params = static_cast<std::int64_t>(kMaxBytes) / w.dtype_bytes;
  std::int64_t total_params = 0;
  std::set<std::string> names;
  for (const auto& lv : layers) {
    lv.expect_object(layer_keys);
    Layer l;
    l.name = lv.at("name").as_string();
    if (l.name.empty()) lv.at("name").fail("a non-empty layer name");
    if (!names.insert(l.name).second) lv.at("name").fail("a layer name not used by another layer");
    l.params = lv.at("params").as_integer_at_least(0);
    if (l.params > max_params) {
      lv.at("params").fail("at most " + std::to_string(max_params) + " params (a gradient of at most 1 PiB)");
    }
    total_params += l.params;
    if (total_params > max_params) {
      lv.at("params").fail("params that keep the gradient within 1 PiB (the layers so far hold " +
                           std::to_string(total_params) + " params of " + std::to_string(w.dtype_bytes) + " bytes)");
    }
    if (auto f = lv.get("flops")) l.flops = f->as_number_in(0, kMaxFlops, "FLOPs per minibatch");
    if (auto r = lv.get("rows")) {
      l.rows = r->as_integer_at_least(1);
      if (l.params % *l.rows != 0) r->fail("a row count that divides the layer's " + std::to_string(l.params) + " params");
    }
    w.layers.push_back(l);
  }
  w.minibatches_per_epoch = doc.at("minibatches_per_epoch").as_integer_at_least(1);
  const bool measured = doc.has("compute_s_per_minibatch");
  const bool rate = doc.has("device_TFLOPS");
  if (measured == rate) {
    doc.fail_message("needs exactly one of \"compute_s_per_minibatch\" (a measured time) and \"device_TFLOPS\" "
                     "(with per-layer \"flops\")");
  }
  if (measured) w.compute_s_per_minibatch = doc.at("compute_s_per_minibatch").as_number_in(0, kMaxComputeS, "seconds");
  if (rate) {
    w.device_TFLOPS = doc.at("device_TFLOPS").as_positive();
    if (*w.device_TFLOPS < 1e-6 || *w.device_TFLOPS > 1e6) doc.at("device_TFLOPS").fail("a rate in TFLOPS between 1e-06 and 1e+06");
    if (w.total_flops() <= 0) doc.at("layers").fail("layers with \"flops\" (device_TFLOPS needs FLOPs to turn into time)");
  }
  return w;
}

ordered_json workload_to_json(const Workload& w) {
  ordered_json layers = ordered_json::array();
  for (const auto& l : w.layers) {
    ordered_json layer = {{"name", l.name}, {"params", l.params}, {"flops", l.flops}};
    if (l.rows) layer["rows"] = *l.rows;
    layers.push_back(layer);
  }
  ordered_json out = {{"name", w.name}, {"dtype_bytes", w.dtype_bytes}, {"layers", layers},
              {"minibatches_per_epoch", w.minibatches_per_epoch}};
  if (!w.description.empty()) out["description"] = w.description;
  if (w.samples_per_minibatch) out["samples_per_minibatch"] = *w.samples_per_minibatch;
  if (w.compute_s_per_minibatch) out["compute_s_per_minibatch"] = *w.compute_s_per_minibatch;
  if (w.device_TFLOPS) out["device_TFLOPS"] = *w.device_TFLOPS;
  return out;
}

// ----------------------------------------------------------------------------------
// Presets. Source A (multi-GPU neural language models, 4 x TITAN X Pascal):
// vocabulary 49,036; input (embedding) and hidden layers 1,024 units; minibatch 64;
// 40,000 training sentences of the Brown corpus (1,161,169 words in 57,341 sentences).
namespace {

constexpr std::int64_t kVocabulary = 49'036;
constexpr std::int64_t kHidden = 1'024;
constexpr std::int64_t kMinibatch = 64;
constexpr double kBrownWords = 1'161'169;
constexpr double kBrownSentences = 57'341;
constexpr double kTrainSentences = 40'000;
// Table 4, 1 GPU, all-reduce: an epoch without any communication (all-reduce moves nothing on one GPU).
constexpr double kFfnnOneGpuEpochS = 216.07;
// Training FLOPs of a dense layer: forward 2·params per sample, backward twice that.
constexpr double kTrainFlopsPerParamPerSample = 6.0;

std::int64_t source_a_minibatches() {
  // One prediction per word of the training sentences.
  const double words = kTrainSentences * kBrownWords / kBrownSentences;
  return static_cast<std::int64_t>(std::ceil(words / kMinibatch));
}

Layer dense(const std::string& name, std::int64_t in, std::int64_t out, bool bias, std::int64_t samples) {
  Layer l;
  l.name = name;
  l.params = in * out + (bias ? out : 0);
  l.flops = kTrainFlopsPerParamPerSample * static_cast<double>(l.params) * static_cast<double>(samples);
  return l;
}

Layer embedding(const std::string& name, std::int64_t vocabulary, std::int64_t width) {
  // A lookup: no multiply-adds; its gradient touches only the rows of the words seen.
  return Layer{name, vocabulary * width, 0.0, vocabulary};
}

// What source A's two language models share: fp32, minibatch 64 words, the epoch, the
// input embedding.
Workload source_a_model(const std::string& name) {
  Workload w;
  w.name = name;
  w.dtype_bytes = 4;
  w.samples_per_minibatch = kMinibatch;
  w.minibatches_per_epoch = source_a_minibatches();
  w.layers.push_back(embedding("embedding", kVocabulary, kHidden));
  return w;
}

Workload source_a_ffnn() {
  Workload w = source_a_model("source-a-ffnn-lm");
  w.layers.push_back(dense("hidden", 4 * kHidden, kHidden, true, kMinibatch));  // 4 context words
  Layer output = dense("output", kHidden, kVocabulary, true, kMinibatch);
  output.rows = kVocabulary;  // one row (weights + bias) per word
  w.layers.push_back(output);
  w.compute_s_per_minibatch = kFfnnOneGpuEpochS / static_cast<double>(w.minibatches_per_epoch);
  w.description =
      "Source A's feed-forward 5-gram LM: 4 context words x 1,024-unit embeddings -> 1,024 hidden -> 49,036-word "
      "softmax; minibatch 64 words; one epoch = 40,000 Brown-corpus sentences (" +
      std::to_string(w.minibatches_per_epoch) +
      " minibatches). Compute per minibatch from Table 4's 1-GPU all-reduce epoch (216.07 s, no communication).";
  return w;
}

Workload source_a_rnn() {
  Workload w = source_a_model("source-a-rnn-lm");
  w.layers.push_back(dense("input-to-hidden", kHidden, kHidden, true, kMinibatch));
  w.layers.push_back(dense("hidden-to-hidden", kHidden, kHidden, false, kMinibatch));
  Layer output = dense("output", kHidden, kVocabulary, true, kMinibatch);
  output.rows = kVocabulary;
  w.layers.push_back(output);
  // Source A gives no single-GPU time for the RNN: use the effective rate its FFNN achieved.
  const Workload ffnn = source_a_ffnn();
  w.device_TFLOPS = ffnn.total_flops() / *ffnn.compute_s_per_minibatch / 1e12;
  w.description =
      "Source A's RNN LM: 1,024-unit embeddings, a 1,024-unit recurrent layer, 49,036-word softmax; minibatch 64 "
      "words; same epoch as the FFNN LM. Compute from FLOPs at the effective rate of source A's FFNN run.";
  return w;
}

Workload source_c_nmt() {
  // An attention-based GRU encoder-decoder (RNNsearch-like): 30k source and target
  // vocabularies, 620-wide embeddings, 1,000-unit GRUs. Source C trained on 1 M zh-en
  // sentence pairs with 160 pairs per GPU minibatch.
  constexpr std::int64_t V = 30'000, E = 620, H = 1'000, batch = 160, pairs = 1'000'000;
  constexpr std::int64_t tokens = batch * 25;  // ~25 target words per sentence
  Workload w;
  w.name = "source-c-nmt";
  w.dtype_bytes = 4;
  w.samples_per_minibatch = batch;
  w.minibatches_per_epoch = pairs / batch;
  auto gru = [&](const std::string& name, std::int64_t input) {
    return dense(name, input + H, 3 * H, true, tokens);  // three gates over [input, state]
  };
  w.layers.push_back(embedding("source-embedding", V, E));
  w.layers.push_back(gru("encoder-forward-gru", E));
  w.layers.push_back(gru("encoder-backward-gru", E));
  w.layers.push_back(dense("attention", 2 * H + H, H, true, tokens));
  w.layers.push_back(embedding("target-embedding", V, E));
  w.layers.push_back(gru("decoder-gru", E + 2 * H));
  w.layers.push_back(dense("readout", H + E + 2 * H, E, true, tokens));
  Layer output = dense("output", E, V, true, tokens);
  output.rows = V;
  w.layers.push_back(output);
  w.device_TFLOPS = 9.3;  // P100 (PCIe) peak fp32
  w.description =
      "A source-C-like NMT model (RNNsearch: GRU encoder-decoder with attention, 30k vocabularies), 1 M sentence "
      "pairs, 160 pairs per GPU minibatch. Compute from FLOPs at a P100's peak 9.3 TFLOPS: replace with a measured "
      "compute_s_per_minibatch for real predictions.";
  return w;
}

}  // namespace

std::vector<std::string> workload_preset_names() { return {"source-a-ffnn-lm", "source-a-rnn-lm", "source-c-nmt"}; }

std::optional<Workload> workload_preset(const std::string& name) {
  if (name == "source-a-ffnn-lm") return source_a_ffnn();
  if (name == "source-a-rnn-lm") return source_a_rnn();
  if (name == "source-c-nmt") return source_c_nmt();
  return std::nullopt;
}

Workload load_workload(const std::string& name_or_path) {
  if (auto preset = workload_preset(name_or_path)) return *preset;
  std::error_code ec;
  if (std::filesystem::exists(name_or_path, ec)) return workload_from_json(JsonView::load_file(name_or_path));
  throw InputError("workload \"" + name_or_path + "\": neither a preset" + did_you_mean(name_or_path, workload_preset_names()) +
                   " nor an existing file; presets: " + join(workload_preset_names()));
}

}  // namespace gradsync::models
