// Source A (multi-GPU neural language models, 4 x TITAN X Pascal): Table 4's epoch
// times predicted from a fit to its two 1-GPU rows, the RNN LM's savings, the GPU-pair
// effect and the vocabulary trend. Every model figure comes from experiments::evaluate;
// the paper's figures are only the comparison column.
#include <algorithm>
#include <cmath>
#include <deque>
#include <iostream>

#include "experiments/inputs.h"
#include "experiments/reproduce/common.h"
#include "models/support/format.h"
#include "experiments/table.h"
#include "models/support/error.h"
#include "models/topology/topology_io.h"

namespace gradsync::experiments::reproduce {

namespace {

using models::ordered_json;

// Table 4 of source A (feed-forward LM, seconds per epoch): baseline = parameter server
// in host memory, all-reduce = ring.
struct PaperRow {
  int gpus;
  double ps_s, ring_s;
};
constexpr PaperRow kTable4[] = {{1, 317.22, 216.07}, {2, 1280.4, 1245.4}, {3, 1242.6, 1095.4}, {4, 1228.82, 903.58}};
// RNN LM on 4 GPUs: share of the baseline's epoch time saved.
constexpr double kRnnRingSavedPct = 25, kRnnSampledSavedPct = 41;

std::string placement_text(const models::Topology& t, const models::Placement& p) {
  std::vector<std::string> ids;
  for (auto n : p.ranks) ids.push_back(t.node(n).id);
  return models::join(ids, ",");
}

// Source A's feed-forward LM with another vocabulary: the row-structured layers (input
// embedding, output softmax) scaled to `vocabulary` rows, FLOPs in proportion, and the
// compute time in proportion to the FLOPs (the measured rate of the full model).
models::Workload with_vocabulary(const models::Workload& base, std::int64_t vocabulary) {
  models::Workload w = base;
  w.name = base.name + "-v" + std::to_string(vocabulary);
  for (auto& l : w.layers) {
    if (!l.rows) continue;
    const std::int64_t per_row = l.params / *l.rows;
    const double ratio = static_cast<double>(vocabulary) / static_cast<double>(*l.rows);
    l.params = per_row * vocabulary;
    l.forward_flops *= ratio;
    l.backward_flops *= ratio;
    l.rows = vocabulary;
  }
  w.compute_s_per_minibatch = base.compute_s() * w.total_flops() / base.total_flops();
  w.device_TFLOPS.reset();
  w.description = "source A's FFNN LM with a vocabulary of " + std::to_string(vocabulary) + " words";
  return w;
}

models::Workload fitted_workload(const std::string& name, double compute_s, double bytes, std::int64_t minibatches) {
  models::Workload w;
  w.name = name;
  w.dtype_bytes = 4;
  w.samples_per_minibatch = 64;
  w.minibatches_per_epoch = minibatches;
  models::Layer gradient;
  gradient.name = "gradient";
  gradient.params = static_cast<std::int64_t>(std::llround(bytes / 4.0));
  w.layers.push_back(gradient);
  w.compute_s_per_minibatch = compute_s;
  w.description = "fitted to Table 4's 1-GPU rows: compute per minibatch and effective bytes per synchronisation";
  return w;
}

std::string mb(double bytes) { return models::format_fixed(bytes / 1e6, 1) + " MB"; }

}  // namespace

void source_a(const Options& o, std::ostream& out) {
  Report rep(out);
  make_dir(o.out_dir);
  const models::LoadedTopology loaded = load_topology_arg("source-a-titanx-4gpu");
  const models::Topology& t = loaded.topology;
  const models::Workload ffnn = models::load_workload("source-a-ffnn-lm");
  const models::Workload rnn = models::load_workload("source-a-rnn-lm");
  const double bn = static_cast<double>(ffnn.minibatches_per_epoch);
  const std::map<std::string, std::string> host = {{"server", "host"}};
  const std::map<std::string, std::string> none;
  std::deque<models::Workload> workloads;  // stable addresses for the batch
  Batch batch;
  ordered_json comparison = ordered_json::object();

  rep << "gradsync reproduce source-a: source A (multi-GPU neural LMs), topology " << t.name()
      << " (4 x TITAN X: GPUs 0-1 and 2-3 behind two PCIe switches, 5.96 GB/s within, 4.46 GB/s across)\n\n";

  // --- 1. The fit ------------------------------------------------------------------
  const double compute = kTable4[0].ring_s / bn;
  const double ps_one_gpu = (kTable4[0].ps_s - kTable4[0].ring_s) / bn;
  const models::Placement one = paper_placement(t, 1);
  const double S1 = 100e6, S2 = 400e6;
  const std::size_t f1 = batch.add(t, nullptr, S1, "ps", host, one, "analytic", {{"part", "fit"}, {"bytes", S1}});
  const std::size_t f2 = batch.add(t, nullptr, S2, "ps", host, one, "analytic", {{"part", "fit"}, {"bytes", S2}});
  // The model's time per synchronisation is affine in the bytes (latency + bytes / bandwidth
  // + bytes x reduction cost): two sizes per strategy and GPU count give its coefficients.
  std::map<std::pair<std::string, int>, std::pair<std::size_t, std::size_t>> coefficient_points;
  for (const auto& row : kTable4) {
    const models::Placement p = paper_placement(t, row.gpus);
    for (const std::string s : {"ps", "ring"}) {
      const auto& params = s == "ps" ? host : none;
      coefficient_points[{s, row.gpus}] = {
          batch.add(t, nullptr, S1, s, params, p, "analytic", {{"part", "coefficients"}, {"bytes", S1}}),
          batch.add(t, nullptr, S2, s, params, p, "analytic", {{"part", "coefficients"}, {"bytes", S2}})};
    }
  }
  batch.run(o.jobs);
  auto affine = [&](std::size_t a, std::size_t b) {
    const double ta = batch.record(a).time_per_sync_s, tb = batch.record(b).time_per_sync_s;
    const double beta = (tb - ta) / (S2 - S1);
    return std::pair<double, double>{ta - beta * S1, beta};  // alpha, beta
  };
  const auto [alpha1, beta1] = affine(f1, f2);
  const double S = (ps_one_gpu - alpha1) / beta1;
  if (!(S > 0)) throw std::runtime_error("source A fit: no positive byte count explains the 1-GPU PS row");

  rep << "1. Fit: two numbers from the two 1-GPU rows of Table 4 (no other row is used)\n"
      << "   minibatches per epoch bn = " << ffnn.minibatches_per_epoch << " (40,000 Brown sentences, 64 words per minibatch)\n"
      << "   compute per minibatch c = 216.07 s / bn = " << ms(compute) << "   (ring on 1 GPU moves nothing)\n"
      << "   PS on 1 GPU, per minibatch: (317.22 s - 216.07 s) / bn = " << ms(ps_one_gpu)
      << "   (gather & send back through host memory)\n"
      << "   the model's PS on 1 GPU (gpu0, server in host memory, analytic) is affine in the bytes S:\n"
      << "     t(" << mb(S1) << ") = " << ms(batch.record(f1).time_per_sync_s) << ", t(" << mb(S2)
      << ") = " << ms(batch.record(f2).time_per_sync_s) << "  ->  t(S) = " << ms(alpha1) << " + S x "
      << models::format_fixed(beta1 * 1e9, 4) << " ns/B  (1/beta = " << models::format_fixed(1e-9 / beta1, 3) << " GB/s)\n"
      << "   S = (" << ms(ps_one_gpu) << " - " << ms(alpha1) << ") / beta = " << mb(S) << "  ("
      << models::format_fixed(100 * S / ffnn.gradient_bytes(), 1) << " % of the dense FFNN gradient, " << mb(ffnn.gradient_bytes())
      << ")\n\n";

  workloads.push_back(fitted_workload("source-a-ffnn-lm-fitted", compute, S, ffnn.minibatches_per_epoch));
  const models::Workload& fit = workloads.back();

  // --- 2. Table 4 from the fit, and everything else --------------------------------
  std::map<std::tuple<std::string, int, std::string>, std::size_t> t4;  // (strategy, N, executor)
  for (const auto& row : kTable4) {
    const models::Placement p = paper_placement(t, row.gpus);
    for (const std::string s : {"ps", "ring"}) {
      for (const std::string x : {"analytic", "formula", "sim"}) {
        t4[{s, row.gpus, x}] = batch.add(t, &fit, std::nullopt, s, s == "ps" ? host : none, p, x,
                                          {{"part", "table4-fit"}, {"gpus", row.gpus}});
      }
    }
  }
  // Dense gradients: the presets as they are.
  std::map<std::tuple<std::string, std::string, int, std::string>, std::size_t> dense;  // (workload, strategy, N, executor)
  const std::vector<std::string> dense_executors =
      o.quick ? std::vector<std::string>{"analytic"} : std::vector<std::string>{"analytic", "formula", "sim"};
  for (const models::Workload* w : {&ffnn, &rnn}) {
    for (int n = 1; n <= 4; ++n) {
      const models::Placement p = paper_placement(t, n);
      for (const std::string s : {"ps", "ring", "sampled"}) {
        for (const auto& x : dense_executors) {
          if (x == "formula" && s == "sampled") continue;  // source A gives no closed form for sampling
          dense[{w->name, s, n, x}] = batch.add(t, w, std::nullopt, s, s == "ring" ? none : host, p, x,
                                                {{"part", "dense"}, {"gpus", n}});
        }
      }
    }
  }
  // GPU pairs.
  std::map<std::tuple<std::string, std::string, std::string>, std::size_t> pairs;  // (workload, pair, executor)
  for (const models::Workload* w : {&ffnn, &fit}) {
    for (const std::string pair : {"gpu0,gpu1", "gpu0,gpu2"}) {
      for (const std::string x : {"analytic", "sim"}) {
        pairs[{w->name, pair, x}] = batch.add(t, w, std::nullopt, "ring", none,
                                              models::named_gpus(t, models::split_list(pair, "pair")), x,
                                              {{"part", "pair"}, {"pair", pair}});
      }
    }
  }
  // Vocabulary.
  const std::vector<std::int64_t> vocabularies =
      o.quick ? std::vector<std::int64_t>{10'000, 49'036} : std::vector<std::int64_t>{10'000, 20'000, 30'000, 40'000, 49'036};
  std::map<std::tuple<std::int64_t, std::string>, std::size_t> vocab;  // (V, column)
  const int vocab_gpus = 4;
  const models::Placement four = paper_placement(t, vocab_gpus);
  for (std::int64_t v : vocabularies) {
    workloads.push_back(with_vocabulary(ffnn, v));
    const models::Workload& wv = workloads.back();
    for (const std::string s : {"ps", "ring", "sampled"}) {
      vocab[{v, s}] = batch.add(t, &wv, std::nullopt, s, s == "ring" ? none : host, four, "analytic",
                                {{"part", "vocabulary"}, {"vocabulary", v}});
    }
    // The fitted workload scaled the same way: effective bytes and compute in proportion.
    workloads.push_back(fitted_workload("source-a-ffnn-lm-fitted-v" + std::to_string(v), wv.compute_s(),
                                        S * wv.gradient_bytes() / ffnn.gradient_bytes(), ffnn.minibatches_per_epoch));
    const models::Workload& fv = workloads.back();
    vocab[{v, "ring-fit"}] = batch.add(t, &fv, std::nullopt, "ring", none, four, "analytic",
                                       {{"part", "vocabulary-fit"}, {"vocabulary", v}});
    vocab[{v, "ps-fit"}] = batch.add(t, &fv, std::nullopt, "ps", host, four, "analytic",
                                     {{"part", "vocabulary-fit"}, {"vocabulary", v}});
  }
  batch.run(o.jobs);

  auto epoch = [&](std::size_t id) { return *batch.record(id).time_per_epoch_s; };
  const double check = epoch(t4[{"ps", 1, "analytic"}]);
  rep << "   check: the model's 1-GPU PS epoch with this S = " << models::format_fixed(check, 2) << " s (paper 317.22 s); 1-GPU ring = "
      << models::format_fixed(epoch(t4[{"ring", 1, "analytic"}]), 2) << " s (paper 216.07 s)\n\n";

  rep << "2. Table 4 (feed-forward LM, seconds per epoch) predicted with the fit; analytic model; 2 GPUs on gpu0,gpu2\n"
      << "   as in the paper (every multi-GPU run crosses the switches), 3 GPUs on gpu0-gpu2, PS server in host memory\n\n";
  Table table({">GPUs", "ranks", ">PS paper", ">PS model", ">error", ">ring paper", ">ring model", ">error",
               ">saved paper", ">saved model"});
  ordered_json rows = ordered_json::array();
  double abs_err_s = 0, abs_err_pct = 0;
  int predicted = 0;
  double max_exec_diff = 0;
  for (const auto& row : kTable4) {
    const double ps = epoch(t4[{"ps", row.gpus, "analytic"}]);
    const double ring = epoch(t4[{"ring", row.gpus, "analytic"}]);
    for (const std::string x : {"formula", "sim"}) {
      max_exec_diff = std::max({max_exec_diff, std::fabs(epoch(t4[{"ps", row.gpus, x}]) / ps - 1),
                                std::fabs(epoch(t4[{"ring", row.gpus, x}]) / ring - 1)});
    }
    const bool fitted = row.gpus == 1;
    if (!fitted) {
      abs_err_s += std::fabs(ps - row.ps_s) + std::fabs(ring - row.ring_s);
      abs_err_pct += std::fabs(percent_error(ps, row.ps_s)) + std::fabs(percent_error(ring, row.ring_s));
      predicted += 2;
    }
    const std::string ranks = placement_text(t, paper_placement(t, row.gpus));
    table.add_row({std::to_string(row.gpus), ranks, models::format_fixed(row.ps_s, 2), models::format_fixed(ps, 2),
                   fitted ? "(fitted)" : models::format_percent((percent_error(ps, row.ps_s)) / 100, 1, true), models::format_fixed(row.ring_s, 2), models::format_fixed(ring, 2),
                   fitted ? "(fitted)" : models::format_percent((percent_error(ring, row.ring_s)) / 100, 1, true),
                   models::format_fixed(100 * (1 - row.ring_s / row.ps_s), 1) + " %", models::format_fixed(100 * (1 - ring / ps), 1) + " %"});
    rows.push_back({{"gpus", row.gpus}, {"ranks", ranks}, {"fitted", fitted}, {"paper_ps_s", row.ps_s},
                    {"model_ps_s", ps}, {"paper_ring_s", row.ring_s}, {"model_ring_s", ring}});
  }
  rep << table.render();
  const double mae_s = abs_err_s / predicted, mae_pct = abs_err_pct / predicted;
  rep << "   mean absolute error over the " << predicted << " predicted values (2-4 GPUs): " << models::format_fixed(mae_s, 1) << " s ("
      << models::format_fixed(mae_pct, 1) << " %)\n"
      << "   formula and sim executors give the same rows within " << models::format_fixed(100 * max_exec_diff, 2)
      << " % (records in source-a.jsonl)\n\n";

  // --- 3. Why rows miss -------------------------------------------------------------
  rep << "3. Why the multi-GPU rows miss\n"
      << "   Per minibatch the paper's rows imply t_sync = epoch x N / bn - c. With the model's t(S) = alpha_N + beta_N x S\n"
      << "   for each row, the bytes that would reproduce it are S_row = (t_sync - alpha_N) / beta_N:\n\n";
  Table why({">GPUs", "strategy", ">paper t_sync", ">model t_sync", ">alpha_N", ">beta_N ns/B", ">S_row"});
  ordered_json implied = ordered_json::array();
  for (const auto& row : kTable4) {
    for (const std::string s : {"ps", "ring"}) {
      const auto [a, b] = affine(coefficient_points[{s, row.gpus}].first, coefficient_points[{s, row.gpus}].second);
      const double paper_epoch = s == "ps" ? row.ps_s : row.ring_s;
      const double t_sync = paper_epoch * row.gpus / bn - compute;
      const double model_sync = batch.record(t4[{s, row.gpus, "analytic"}]).time_per_sync_s;
      const bool solvable = b > 0;
      const double s_row = solvable ? (t_sync - a) / b : 0;
      why.add_row({std::to_string(row.gpus), s, ms(t_sync), ms(model_sync), ms(a), models::format_fixed(b * 1e9, 4),
                   solvable ? mb(s_row) : "- (moves nothing)"});
      implied.push_back({{"gpus", row.gpus}, {"strategy", s}, {"paper_t_sync_s", t_sync}, {"alpha_s", a}, {"beta_s_per_B", b},
                         {"implied_bytes", solvable ? ordered_json(s_row) : ordered_json(nullptr)}});
    }
  }
  rep << why.render();
  // Per column: the spread of S_row over the multi-GPU rows, and one S per column by
  // least squares (t_sync - alpha = S x beta, through the origin: S = sum(beta (t - alpha)) / sum(beta^2)).
  std::map<std::string, double> column_S;
  ordered_json column_json = ordered_json::object();
  rep << "\n";
  for (const std::string s : {"ps", "ring"}) {
    double lo = INFINITY, hi = 0, num = 0, den = 0;
    for (std::size_t i = 0; i < implied.size(); ++i) {
      const auto& row = implied[i];
      if (row["strategy"] != s || row["gpus"].get<int>() == 1) continue;
      const double b = row["beta_s_per_B"].get<double>(), y = row["paper_t_sync_s"].get<double>() - row["alpha_s"].get<double>();
      lo = std::min(lo, y / b);
      hi = std::max(hi, y / b);
      num += b * y;
      den += b * b;
    }
    column_S[s] = num / den;
    rep << "   " << (s == "ps" ? "PS  " : "ring") << " rows, 2-4 GPUs: S_row from " << mb(lo) << " to " << mb(hi) << " (spread "
        << models::format_fixed(100 * (hi - lo) / lo, 1) << " %); least squares over them: S = " << mb(column_S[s]) << " = "
        << models::format_fixed(column_S[s] / S, 1) << "x the 1-GPU fit, " << models::format_fixed(column_S[s] / ffnn.gradient_bytes(), 2)
        << "x the dense gradient\n";
    column_json[s] = {{"bytes_min", lo}, {"bytes_max", hi}, {"bytes_fit", column_S[s]}};
  }
  rep << "   So the model's shape in N (PS: gather and send back grow with N through host memory; ring: 2(N-1)/N x S over the\n"
      << "   slowest link) matches each column's multi-GPU rows when S is taken from them, but the bytes that explain the\n"
      << "   multi-GPU rows are not the bytes of the 1-GPU PS row: the paper's 2-GPU ring epoch is "
      << models::format_fixed(kTable4[1].ring_s / kTable4[0].ring_s, 1) << "x its 1-GPU epoch although\n"
      << "   the compute per GPU halves. What the 1-GPU rows cannot reveal (how much the paper's multi-GPU implementation\n"
      << "   moved or waited per step, e.g. staging through host memory or per-step synchronisation) is what the rows miss.\n";
  // Diagnostic rows with each column's own S (fitted to the rows it is compared with).
  std::map<std::pair<std::string, int>, std::size_t> col_ids;
  for (const std::string s : {"ps", "ring"}) {
    workloads.push_back(fitted_workload("source-a-ffnn-lm-" + s + "-rows", compute, column_S[s], ffnn.minibatches_per_epoch));
    const models::Workload& w = workloads.back();
    for (const auto& row : kTable4) {
      col_ids[{s, row.gpus}] = batch.add(t, &w, std::nullopt, s, s == "ps" ? host : none, paper_placement(t, row.gpus), "analytic",
                                         {{"part", "table4-column-fit"}, {"gpus", row.gpus}});
    }
  }
  batch.run(o.jobs);
  rep << "   Diagnostic, not a prediction (each column's S fitted to the rows it is compared with), analytic:\n\n";
  Table cf({">GPUs", ">PS paper", ">PS model", ">error", ">ring paper", ">ring model", ">error"});
  ordered_json cf_rows = ordered_json::array();
  for (const auto& row : kTable4) {
    const double ps = epoch(col_ids[{"ps", row.gpus}]), ring = epoch(col_ids[{"ring", row.gpus}]);
    cf.add_row({std::to_string(row.gpus), models::format_fixed(row.ps_s, 2), models::format_fixed(ps, 2), models::format_percent((percent_error(ps, row.ps_s)) / 100, 1, true),
                models::format_fixed(row.ring_s, 2), models::format_fixed(ring, 2), models::format_percent((percent_error(ring, row.ring_s)) / 100, 1, true)});
    cf_rows.push_back({{"gpus", row.gpus}, {"model_ps_s", ps}, {"model_ring_s", ring}});
  }
  column_json["rows"] = cf_rows;
  rep << cf.render() << "\n";
  comparison["table4"] = {{"fit",
                           {{"minibatches_per_epoch", ffnn.minibatches_per_epoch},
                            {"compute_s_per_minibatch", compute},
                            {"ps_one_gpu_sync_s", ps_one_gpu},
                            {"model_alpha_s", alpha1},
                            {"model_beta_s_per_B", beta1},
                            {"fitted_bytes", S}}},
                          {"rows", rows},
                          {"mae_s", mae_s},
                          {"mae_pct", mae_pct},
                          {"implied", implied},
                          {"column_fit", column_json}};

  // --- 4. Dense gradients, FFNN and RNN -----------------------------------------------
  rep << "4. The presets with their dense gradients (no fit): epoch seconds, analytic model\n\n";
  ordered_json dense_json = ordered_json::array();
  for (const models::Workload* w : {&ffnn, &rnn}) {
    const bool is_ffnn = w == &ffnn;
    Table d({">GPUs", ">PS", ">ring", ">sampled", ">ring saved", ">sampled saved", is_ffnn ? ">paper PS / ring" : ">paper saved"});
    for (int n = 1; n <= 4; ++n) {
      const double ps = epoch(dense[{w->name, "ps", n, "analytic"}]);
      const double ring = epoch(dense[{w->name, "ring", n, "analytic"}]);
      const double sampled = epoch(dense[{w->name, "sampled", n, "analytic"}]);
      std::string paper = "";
      if (is_ffnn) paper = models::format_fixed(kTable4[n - 1].ps_s, 1) + " / " + models::format_fixed(kTable4[n - 1].ring_s, 1);
      if (!is_ffnn && n == 4) paper = "ring " + models::format_fixed(kRnnRingSavedPct, 0) + " %, sampled " + models::format_fixed(kRnnSampledSavedPct, 0) + " %";
      d.add_row({std::to_string(n), models::format_fixed(ps, 1), models::format_fixed(ring, 1), models::format_fixed(sampled, 1), models::format_fixed(100 * (1 - ring / ps), 1) + " %",
                 models::format_fixed(100 * (1 - sampled / ps), 1) + " %", paper});
      dense_json.push_back({{"workload", w->name}, {"gpus", n}, {"ps_s", ps}, {"ring_s", ring}, {"sampled_s", sampled}});
    }
    rep << "   " << w->name << " (" << mb(w->gradient_bytes()) << " per sync, " << ms(w->compute_s())
        << " compute per minibatch)\n" << d.render() << "\n";
  }
  const double rnn_ps = epoch(dense[{rnn.name, "ps", 4, "analytic"}]);
  const double rnn_ring_saved = 100 * (1 - epoch(dense[{rnn.name, "ring", 4, "analytic"}]) / rnn_ps);
  const double rnn_sampled_saved = 100 * (1 - epoch(dense[{rnn.name, "sampled", 4, "analytic"}]) / rnn_ps);
  rep << "   RNN LM on 4 GPUs, share of the baseline epoch saved: ring " << models::format_fixed(rnn_ring_saved, 1) << " % (paper "
      << models::format_fixed(kRnnRingSavedPct, 0) << " %), sampled " << models::format_fixed(rnn_sampled_saved, 1) << " % (paper "
      << models::format_fixed(kRnnSampledSavedPct, 0) << " %).\n";
  const bool order_agrees = rnn_sampled_saved > rnn_ring_saved && rnn_ring_saved > 0;
  rep << "   The order " << (order_agrees ? "agrees" : "does not agree") << " with the paper (sampled saves more than ring, both save);"
      << " the model saves " << (rnn_ring_saved > kRnnRingSavedPct ? "more" : "less") << " than the paper\n"
      << "   because its PS sends the whole dense gradient of every GPU through host memory each step"
      << " (" << ms(batch.record(dense[{rnn.name, "ps", 4, "analytic"}]).time_per_sync_s) << " per step on 4 GPUs vs "
      << ms(batch.record(dense[{rnn.name, "ring", 4, "analytic"}]).time_per_sync_s) << " for the ring).\n\n";
  comparison["dense"] = dense_json;
  comparison["rnn_saved_pct"] = {{"ring_model", rnn_ring_saved}, {"ring_paper", kRnnRingSavedPct},
                                 {"sampled_model", rnn_sampled_saved}, {"sampled_paper", kRnnSampledSavedPct}};

  // --- 5. GPU pairs ----------------------------------------------------------------------
  rep << "5. Two GPUs behind one switch (gpu0,gpu1) or across switches (gpu0,gpu2): ring, analytic and sim\n\n";
  Table pt({"workload", "pair", ">sync analytic", ">sync sim", ">epoch", ">speed-up"});
  ordered_json pair_json = ordered_json::array();
  for (const models::Workload* w : {&ffnn, &fit}) {
    for (const std::string pair : {"gpu0,gpu1", "gpu0,gpu2"}) {
      const auto& r = batch.record(pairs[{w->name, pair, "analytic"}]);
      const auto& rs = batch.record(pairs[{w->name, pair, "sim"}]);
      pt.add_row({w->name, pair, ms(r.time_per_sync_s), ms(rs.time_per_sync_s), models::format_fixed(*r.time_per_epoch_s, 1) + " s",
                  models::format_fixed(*r.speedup_vs_1gpu, 2) + "x"});
      pair_json.push_back({{"workload", w->name}, {"pair", pair}, {"sync_s", r.time_per_sync_s}, {"sim_sync_s", rs.time_per_sync_s},
                           {"epoch_s", *r.time_per_epoch_s}});
    }
  }
  const double pair_ratio = batch.record(pairs[{ffnn.name, "gpu0,gpu2", "analytic"}]).time_per_sync_s /
                            batch.record(pairs[{ffnn.name, "gpu0,gpu1", "analytic"}]).time_per_sync_s;
  const auto gpu = [&](const char* id) { return t.require(id, "pair"); };
  const double link_ratio = t.bottleneck_Bps(gpu("gpu0"), gpu("gpu1")) / t.bottleneck_Bps(gpu("gpu0"), gpu("gpu2"));
  rep << pt.render() << "   Crossing the switches makes the ring's synchronisation " << models::format_fixed(pair_ratio, 3)
      << "x slower (the pairs' bandwidths differ " << models::format_fixed(link_ratio, 3) << "x: a ring runs at its slowest link),\n"
      << "   which is why the paper placed its 2-GPU runs on GPUs 0 and 2 (every multi-GPU run then crosses the switches).\n\n";
  comparison["pairs"] = pair_json;

  // --- 6. Vocabulary ---------------------------------------------------------------------
  rep << "6. Vocabulary size vs the " << vocab_gpus << "-GPU speed-up over one GPU (FFNN LM: embedding and output layers scaled,\n"
      << "   compute in proportion to the FLOPs), analytic model\n\n";
  Table vt({">vocabulary", ">gradient", ">compute", ">FLOP/B", ">ps", ">ring", ">sampled", ">ring (fit S)", ">ps (fit S)"});
  ordered_json vocab_json = ordered_json::array();
  for (std::size_t i = 0; i < vocabularies.size(); ++i) {
    const std::int64_t v = vocabularies[i];
    const models::Workload& wv = workloads[1 + 2 * i];
    auto sp = [&](const std::string& c) { return *batch.record(vocab[{v, c}]).speedup_vs_1gpu; };
    vt.add_row({std::to_string(v), mb(wv.gradient_bytes()), ms(wv.compute_s()), models::format_fixed(wv.total_flops() / wv.gradient_bytes(), 1),
                models::format_fixed(sp("ps"), 3) + "x", models::format_fixed(sp("ring"), 3) + "x", models::format_fixed(sp("sampled"), 3) + "x",
                models::format_fixed(sp("ring-fit"), 3) + "x", models::format_fixed(sp("ps-fit"), 3) + "x"});
    vocab_json.push_back({{"vocabulary", v}, {"gradient_bytes", wv.gradient_bytes()}, {"compute_s", wv.compute_s()},
                          {"speedup_ps", sp("ps")}, {"speedup_ring", sp("ring")}, {"speedup_sampled", sp("sampled")},
                          {"speedup_ring_fit", sp("ring-fit")}, {"speedup_ps_fit", sp("ps-fit")}});
  }
  rep << vt.render();
  const std::int64_t vmin = vocabularies.front(), vmax = vocabularies.back();
  auto trend = [&](const std::string& c) {
    const double small = *batch.record(vocab[{vmin, c}]).speedup_vs_1gpu, big = *batch.record(vocab[{vmax, c}]).speedup_vs_1gpu;
    return std::pair<double, double>{small, big};
  };
  std::vector<std::string> agree, disagree;
  for (const std::string c : {"ps", "ring", "sampled", "ring-fit", "ps-fit"}) {
    const auto [small, big] = trend(c);
    (small < big ? agree : disagree).push_back(c + " " + models::format_fixed(big, 3) + "x -> " + models::format_fixed(small, 3) + "x");
  }
  rep << "   Source A: smaller vocabularies shrink the multi-GPU advantage. From " << vmax << " to " << vmin << " words the model gives\n"
      << "   agreeing (advantage shrinks): " << (agree.empty() ? "none" : models::join(agree, "; ")) << "\n"
      << "   disagreeing (advantage grows): " << (disagree.empty() ? "none" : models::join(disagree, "; ")) << "\n"
      ;
  const double fpb_small = workloads[1].total_flops() / workloads[1].gradient_bytes();
  const double fpb_big = workloads[1 + 2 * (vocabularies.size() - 1)].total_flops() /
                         workloads[1 + 2 * (vocabularies.size() - 1)].gradient_bytes();
  rep << "   Compute per byte of dense gradient " << (fpb_small > fpb_big ? "rises" : "falls") << " from " << models::format_fixed(fpb_big, 1)
      << " to " << models::format_fixed(fpb_small, 1) << " FLOP/B as the vocabulary shrinks\n"
      << "   (the embedding is a lookup: a full-size gradient but no FLOPs; the hidden layer stays the same). Sampling sends\n"
      << "   a minibatch's rows, fixed fractions of the vocabulary and the dense hidden layer, so its bytes shrink more\n"
      << "   slowly than the compute. The claim's reason (\"less compute per byte moved\") holds only where the bytes moved\n"
      << "   per step shrink more slowly than the compute.\n\n";
  comparison["vocabulary"] = vocab_json;

  // --- 7. Table 4's ring column with NCCL's transports -------------------------------
  // Source A ran its all-reduce with NCCL. The nccl strategy on the paper's machine, the
  // dense gradient and c from the 1-GPU ring row only: P2P within a switch, and across the
  // switches either P2P through the CPU's root complex (NCCL_P2P_LEVEL=SYS, AMD's default)
  // or SHM through host memory (PXB, NCCL's default on Intel CPUs since 2.23); the paper
  // says only that transfers across switches pass through the CPU side, so both are shown.
  workloads.push_back(fitted_workload("source-a-ffnn-lm-dense-c", compute, ffnn.gradient_bytes(), ffnn.minibatches_per_epoch));
  const models::Workload& dense_c = workloads.back();
  const std::vector<std::string> levels = {"SYS", "PXB"};
  std::map<std::tuple<std::string, int, std::string>, std::size_t> nccl_ids;  // (p2p level, N, executor)
  for (const auto& row : kTable4) {
    for (const auto& level : levels) {
      for (const std::string x : {"analytic", "sim"}) {
        nccl_ids[{level, row.gpus, x}] = batch.add(t, &dense_c, std::nullopt, "nccl", {{"p2p_level", level}},
                                                   paper_placement(t, row.gpus), x,
                                                   {{"part", "table4-nccl"}, {"gpus", row.gpus}, {"p2p_level", level}});
      }
    }
  }
  batch.run(o.jobs);
  rep << "7. Table 4's ring column with NCCL's transports: the nccl strategy (NCCL's ring all-reduce, protocol, channels,\n"
      << "   P2P or SHM per hop), the dense gradient (" << mb(ffnn.gradient_bytes()) << "), c from the 1-GPU ring row only;\n"
      << "   no fit to the 2-4 GPU rows. Across the switches: P2P through the CPU (p2p_level=SYS) or SHM through host\n"
      << "   memory (p2p_level=PXB); SHM's rate from the topology's host<->device figure (4.46 GB/s)\n\n";
  Table nt({">GPUs", "ranks", ">ring paper", ">P2P across", ">error", ">SHM across", ">error", ">paper / model t_sync"});
  ordered_json nccl_rows = ordered_json::array();
  double nccl_abs[2] = {0, 0};
  std::vector<double> ratios[2];  // paper / model synchronisation time, 2-4 GPUs, per level
  double max_sim_diff = 0;
  for (const auto& row : kTable4) {
    std::vector<std::string> cells = {std::to_string(row.gpus), placement_text(t, paper_placement(t, row.gpus)),
                                      models::format_fixed(row.ring_s, 2)};
    ordered_json j = {{"gpus", row.gpus}, {"paper_ring_s", row.ring_s}};
    std::string ratio;
    for (std::size_t l = 0; l < levels.size(); ++l) {
      const double e = epoch(nccl_ids[{levels[l], row.gpus, "analytic"}]);
      max_sim_diff = std::max(max_sim_diff, std::fabs(epoch(nccl_ids[{levels[l], row.gpus, "sim"}]) / e - 1));
      cells.push_back(models::format_fixed(e, 2));
      cells.push_back(row.gpus == 1 ? "(fitted)" : models::format_percent((percent_error(e, row.ring_s)) / 100, 1, true));
      j["model_ring_s_p2p_level_" + levels[l]] = e;
      if (row.gpus == 1) continue;
      nccl_abs[l] += std::fabs(percent_error(e, row.ring_s));
      // How much longer the paper's synchronisation took than the model's, per minibatch.
      const double model_sync = batch.record(nccl_ids[{levels[l], row.gpus, "analytic"}]).time_per_sync_s;
      const double paper_sync = row.ring_s * row.gpus / bn - compute;
      ratios[l].push_back(paper_sync / model_sync);
      ratio += (ratio.empty() ? "" : " / ") + models::format_fixed(ratios[l].back(), 2) + "x";
    }
    cells.push_back(row.gpus == 1 ? "-" : ratio);
    nt.add_row(std::move(cells));
    nccl_rows.push_back(j);
  }
  rep << nt.render();
  auto range_of = [](const std::vector<double>& v) {
    return std::pair<double, double>{*std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
  };
  const auto [p2p_lo, p2p_hi] = range_of(ratios[0]);
  const auto [shm_lo, shm_hi] = range_of(ratios[1]);
  const bool p2p_shape = p2p_hi / p2p_lo < shm_hi / shm_lo;
  const std::string hops4 = models::join(batch.record(nccl_ids[{"PXB", 4, "analytic"}]).notes, "; ");
  rep << "   mean |error| over the 2-4 GPU rows: " << models::format_fixed(nccl_abs[0] / 3, 1) << " % (P2P across), " << models::format_fixed(nccl_abs[1] / 3, 1)
      << " % (SHM across); sim within " << models::format_fixed(100 * max_sim_diff, 2) << " % of analytic\n"
      << "   4 GPUs, SHM across: " << hops4 << "\n"
      << "   What remains. Per minibatch the paper's synchronisation took " << models::format_fixed(p2p_lo, 2) << "-" << models::format_fixed(p2p_hi, 2)
      << "x the model's with P2P across the switches,\n"
      << "   " << models::format_fixed(shm_lo, 2) << "-" << models::format_fixed(shm_hi, 2) << "x with SHM across (last column). "
      << (p2p_shape ? "With P2P across, the shape in N is NCCL's ring's (the ratio hardly moves\n"
                      "   from 2 to 4 GPUs) and only the level is off; with SHM across, the switches' shared uplinks make 3 and 4 GPUs\n"
                      "   slower than 2, which the paper's column (1245 -> 1095 -> 904 s) does not show: across the switches its NCCL\n"
                      "   used P2P through the CPU, not host memory. "
                    : "Neither variant follows the paper's shape in N. ")
      << "A constant factor near 2 is what moving the gradient twice per step\n"
      << "   would give (gradients all-reduced, then parameters sent back out; or a second copy per step through the CPU\n"
      << "   side), as would P2P through the root complex reaching half the 4.46 GB/s the paper measured with copies; Table 4\n"
      << "   alone cannot tell these apart.\n\n";
  comparison["table4_nccl"] = {{"rows", nccl_rows},
                               {"paper_over_model_sync_p2p_across", ratios[0]},
                               {"paper_over_model_sync_shm_across", ratios[1]},
                               {"mean_abs_error_pct_p2p_across", nccl_abs[0] / 3},
                               {"mean_abs_error_pct_shm_across", nccl_abs[1] / 3}};

  // --- 8. The same with the backward pass overlapped ----------------------------------
  const models::OverlapSettings ddp;  // PyTorch DDP's buckets; communication does not slow compute
  struct Column {
    std::string label, strategy;
    std::map<std::string, std::string> params;
  };
  const std::vector<Column> columns = {{"NCCL, P2P across", "nccl", {{"p2p_level", "SYS"}}},
                                       {"NCCL, SHM across", "nccl", {{"p2p_level", "PXB"}}},
                                       {"ring", "ring", {}}};
  const std::vector<std::string> over_executors =
      o.quick ? std::vector<std::string>{"analytic"} : std::vector<std::string>{"analytic", "sim"};
  std::map<std::tuple<std::size_t, int, std::string>, std::size_t> over;  // (column, N, executor)
  for (const auto& row : kTable4) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      for (const auto& x : over_executors) {
        over[{c, row.gpus, x}] = batch.add(t, &ffnn, std::nullopt, columns[c].strategy, columns[c].params,
                                           paper_placement(t, row.gpus), x,
                                           {{"part", "table4-overlap"}, {"gpus", row.gpus}, {"column", columns[c].label}}, ddp);
      }
    }
  }
  batch.run(o.jobs);
  rep << "8. Table 4's all-reduce column with the backward pass overlapped (the preset's layers in PyTorch DDP's buckets,\n"
      << "   " << models::format_fixed(ddp.bucket_cap_bytes / 1048576, 0) << " MiB, the first "
      << models::format_fixed(ddp.first_bucket_bytes / 1048576, 0)
      << " MiB; c from the 1-GPU row only), analytic; no fit to the 2-4 GPU rows\n\n";
  std::vector<std::string> over_headers = {">GPUs", ">paper"};
  for (const auto& col : columns) {
    over_headers.push_back(">" + col.label);
    over_headers.push_back(">error");
  }
  over_headers.push_back(">exposed / sync (P2P)");
  Table ov(over_headers);
  ordered_json over_rows = ordered_json::array(), series = ordered_json::array(), paper_points = ordered_json::array();
  std::vector<ordered_json> points(columns.size(), ordered_json::array());
  double over_max_sim = 0;
  for (const auto& row : kTable4) {
    std::vector<std::string> cells = {std::to_string(row.gpus), models::format_fixed(row.ring_s, 2)};
    ordered_json j = {{"gpus", row.gpus}, {"paper_ring_s", row.ring_s}};
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const auto& r = batch.record(over[{c, row.gpus, "analytic"}]);
      const double e = *r.time_per_epoch_s;
      if (!o.quick) over_max_sim = std::max(over_max_sim, std::fabs(epoch(over[{c, row.gpus, "sim"}]) / e - 1));
      cells.push_back(models::format_fixed(e, 2));
      cells.push_back(row.gpus == 1 ? "(fitted)" : models::format_percent(percent_error(e, row.ring_s) / 100, 1, true));
      j[columns[c].label] = {{"epoch_s", e}, {"exposed_s", r.overlap ? r.overlap->exposed_s : 0.0}, {"sync_s", r.time_per_sync_s}};
      points[c].push_back({{"gpus", row.gpus}, {"overlap", *r.speedup_vs_1gpu}, {"no_overlap", speedup_without_overlap(r)}});
    }
    const auto& p2p = batch.record(over[{0, row.gpus, "analytic"}]);
    cells.push_back(row.gpus == 1 ? "-" : ms(p2p.overlap ? p2p.overlap->exposed_s : 0.0) + " / " + ms(p2p.time_per_sync_s));
    ov.add_row(std::move(cells));
    over_rows.push_back(j);
    paper_points.push_back({{"gpus", row.gpus}, {"speedup", kTable4[0].ring_s / row.ring_s}});
  }
  for (std::size_t c = 0; c < columns.size(); ++c) series.push_back({{"name", columns[c].label}, {"points", points[c]}});
  rep << ov.render();
  const auto& on4 = batch.record(over[{0, 4, "analytic"}]);
  const double hidden4 = on4.time_per_sync_s - on4.overlap->exposed_s;
  rep << "   " << (o.quick ? std::string("") : "sim within " + models::format_fixed(100 * over_max_sim, 2) + " % of analytic. ")
      << "The FFNN's gradient makes " << on4.overlap->buckets << " buckets: the output layer ("
      << mb(static_cast<double>(ffnn.layers.back().params) * ffnn.dtype_bytes) << ", ready first) and\n"
      << "   the hidden layer with the embedding, ready only when the backward pass ends; on 4 GPUs (P2P across) the\n"
      << "   backward pass hides " << ms(hidden4) << " of " << ms(on4.time_per_sync_s) << ".\n"
      << "   Overlap can only shorten the model's epochs, and the model is already below the paper: the paper's own time\n"
      << "   model (its eqs. 5-6) is compute, then synchronisation, and its 2-4 GPU rows took "
      << models::format_fixed(p2p_lo, 2) << "-" << models::format_fixed(p2p_hi, 2) << "x the model's\n"
      << "   synchronisation per minibatch (section 7), a factor that stays put from 2 to 4 GPUs. That measured factor, not\n"
      << "   the overlap, is what the ring rows miss by.\n\n";
  comparison["table4_overlap"] = {{"bucket_cap_bytes", ddp.bucket_cap_bytes}, {"first_bucket_bytes", ddp.first_bucket_bytes},
                                  {"rows", over_rows}};
  comparison["paper_speedups"] = {
      {"title", "Source A FFNN LM, Table 4's all-reduce column: speed-up over one GPU (216.07 s), paper vs predicted "
                "(analytic, c from the 1-GPU row)"},
      {"paper", {{{"name", "Table 4, all-reduce"}, {"points", paper_points}}}},
      {"predicted", series}};

  write_outputs(o.out_dir, "source-a", batch, comparison, rep);
}

}  // namespace gradsync::experiments::reproduce
