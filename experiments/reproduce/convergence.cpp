// gradsync reproduce convergence: sources C and D's claims about what a strategy does to
// convergence, checked on real training (gradsync-train under a local mpirun: the digits MLP,
// each strategy's own schedule and arithmetic). Every run is the same task, seed and plain SGD
// (momentum 0: the claims are about the learning rate of SGD's step, which momentum would
// compound), tested every 256 samples; a strategy's effect is the samples it takes to reach the
// target test loss, against the one-worker baseline or synchronous SGD.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/reproduce/common.h"
#include "experiments/validate.h"
#include "models/support/error.h"
#include "models/support/format.h"
#include "models/support/process.h"
#include "models/workload/workload.h"

namespace gradsync::experiments::reproduce {

namespace {

namespace fs = std::filesystem;

constexpr int kRanks = 4;            // N
constexpr int kBatch = 16;           // rows a worker takes a step (the baseline's batch)
constexpr double kLearningRate = 0.1;  // the baseline's
constexpr double kTargetLoss = 0.5;  // test loss (cross-entropy over the 297 held-out digits)
constexpr int kPeriod = 8;           // model averaging's and BMUF's T
constexpr int kTestEverySamples = 256;
constexpr int kNoiseMaxSteps = 300;  // the noise scale's runs stop at the target, or here
constexpr int kTrainRows = 1500;     // gradsync-train's: 1,797 digits, the last 297 held out

struct Run {
  std::string id;
  std::string what;
  int ranks = kRanks;
  int batch = kBatch;
  std::string strategy;  // empty: one rank, no strategy
  std::vector<std::string> params;
  double learning_rate = kLearningRate;
  int warm_start = 0;
  std::string group;  // the claims it serves (a panel of plots/convergence_curves.py)
  int max_steps = 0;  // > 0: test every step, stop at the target or after this many steps
};

struct Outcome {
  std::optional<long long> samples_to_target;  // empty: not reached
  long long samples = 0;                        // in all
  double final_loss = 0, peak_accuracy = 0;
  std::vector<models::ordered_json> records;
  std::optional<long long> steps_to_target;
  double compute_s_per_step = 0;  // rank 0's, as gradsync-train timed it (its last row)
  // The noise scale's two estimators (gradsync-train's rows, each a mean over its steps), summed
  // over the rows up to the target: the first half's and the second's.
  double trace_sum[2] = {0, 0}, norm_sum[2] = {0, 0};
};

std::vector<Run> runs() {
  const std::string n = std::to_string(kRanks), t = "T=" + std::to_string(kPeriod);
  const double scaled = kLearningRate * kRanks;
  const std::string rates = "learning rate and averaging", onebit = "1-bit SGD and the batch";
  return {
      {"baseline", "1 worker, batch 16, lr 0.1", 1, kBatch, "", {}, kLearningRate, 0, rates},
      {"ma", "model averaging, " + t + ", lr 0.1", kRanks, kBatch, "model_avg", {t}, kLearningRate, 0, rates},
      {"ma_scaled", "model averaging, " + t + ", lr 0.1 x " + n, kRanks, kBatch, "model_avg", {t}, scaled, 0, rates},
      {"bmuf", "BMUF, " + t + ", lr 0.1 (block momentum 1 - 1/N, Nesterov)", kRanks, kBatch, "bmuf", {t}, kLearningRate, 0, rates},
      {"sync", "synchronous SGD (ring), lr 0.1 x " + n, kRanks, kBatch, "ring", {}, scaled, 0, onebit},
      {"onebit", "1-bit SGD, error feedback, lr 0.1 x " + n, kRanks, kBatch, "onebit", {}, scaled, 0, onebit},
      {"onebit_no_feedback", "1-bit SGD without error feedback, lr 0.1 x " + n, kRanks, kBatch, "onebit", {"feedback=off"}, scaled, 0,
       onebit},
      {"onebit_warm", "1-bit SGD, error feedback, 1 warm epoch on 1 worker, lr 0.1 x " + n, kRanks, kBatch, "onebit", {}, scaled, 1,
       onebit},
      {"sync_8x", "synchronous SGD, 8x the baseline's batch (" + n + " x 32), lr 0.1 x 8", kRanks, 2 * kBatch, "ring", {},
       kLearningRate * 8, 0, onebit},
  };
}

std::string number(double v, int digits = 3) {
  std::ostringstream s;
  s << std::setprecision(digits) << v;
  return s.str();
}

Outcome train(const Run& r, const std::string& train_binary, int epochs, const std::string& dir) {
  const std::string file = (fs::path(dir) / ("convergence-" + r.id + ".jsonl")).string();
  std::vector<std::string> command = local_mpirun(r.ranks);
  const int global = r.ranks * r.batch;
  command.insert(command.end(), {train_binary, "--batch", std::to_string(r.batch), "--lr", number(r.learning_rate, 6), "--momentum",
                                 "0", "--seed", "1", "-o", file});
  if (r.max_steps > 0) {
    command.insert(command.end(), {"--steps", std::to_string(r.max_steps), "--eval-every", "1", "--target-loss",
                                   number(kTargetLoss, 6), "--stop-at-target"});
  } else {
    command.insert(command.end(), {"--epochs", std::to_string(epochs), "--eval-every", std::to_string(std::max(1, kTestEverySamples / global))});
  }
  if (!r.strategy.empty()) {
    command.insert(command.end(), {"--strategy", r.strategy});
    for (const auto& p : r.params) command.insert(command.end(), {"-p", p});
  }
  if (r.warm_start > 0) command.insert(command.end(), {"--warm-start", std::to_string(r.warm_start)});
  models::ProcessOptions process;
  process.env = mpirun_environment();
  process.timeout_s = 600;
  const auto result = models::run_process(command, process);
  if (result.status != 0) {
    std::string shown;
    for (const auto& w : command) shown += (shown.empty() ? "" : " ") + w;
    throw models::InputError("reproduce convergence: run " + r.id + " failed (status " + std::to_string(result.status) +
                             (result.timed_out ? ", timed out" : "") + "): " + shown + "\n" + result.out);
  }
  Outcome o;
  std::vector<std::pair<double, double>> rows_to_target;  // (trace, |G|^2) of each row up to the target
  std::ifstream in(file);
  int number_of_line = 0;
  for (std::string line; std::getline(in, line);) {
    ++number_of_line;
    models::ordered_json j;
    long long samples = 0;
    double loss = 0, accuracy = 0;
    try {
      j = models::ordered_json::parse(line);
      samples = j.at("samples").get<long long>();
      loss = j.at("test_loss").get<double>();
      accuracy = j.at("test_accuracy").get<double>();
    } catch (const models::ordered_json::exception& e) {
      throw models::InputError(file + ":" + std::to_string(number_of_line) + ": " + e.what() +
                               "; expected gradsync-train's records (samples, test_loss, test_accuracy)");
    }
    if (!o.samples_to_target && loss <= kTargetLoss) {
      o.samples_to_target = samples;
      o.steps_to_target = j.value("steps", 0LL);
    }
    if (j.contains("compute_s_per_step")) o.compute_s_per_step = j.at("compute_s_per_step").get<double>();
    if (!o.samples_to_target && j.contains("noise_scale")) {
      rows_to_target.push_back({j.at("gradient_noise_trace").get<double>(), j.at("gradient_norm_sq").get<double>()});
    }
    o.samples = samples;
    o.final_loss = loss;
    o.peak_accuracy = std::max(o.peak_accuracy, accuracy);
    j["run"] = r.id;
    o.records.push_back(std::move(j));
  }
  if (o.samples_to_target && !rows_to_target.empty()) {
    for (std::size_t i = 0; i < rows_to_target.size(); ++i) {
      const int half = 2 * i < rows_to_target.size() ? 0 : 1;
      o.trace_sum[half] += rows_to_target[i].first;
      o.norm_sum[half] += rows_to_target[i].second;
    }
  }
  std::error_code ec;
  fs::remove(file, ec);
  if (o.records.empty()) throw models::InputError("reproduce convergence: run " + r.id + " wrote no records");
  return o;
}

std::string samples_text(const Outcome& o) {
  return o.samples_to_target ? std::to_string(*o.samples_to_target) : "> " + std::to_string(o.samples);
}

// Samples to target, a run's over another's; a run that did not reach it counts its samples in
// all (a lower bound: "at least").
struct Ratio {
  double value = 0;
  bool at_least = false;
};
Ratio ratio(const Outcome& a, const Outcome& b) {
  const double num = static_cast<double>(a.samples_to_target.value_or(a.samples));
  const double den = static_cast<double>(b.samples_to_target.value_or(b.samples));
  return {num / den, !a.samples_to_target};
}
std::string ratio_text(const Ratio& r) { return (r.at_least ? ">= " : "") + number(r.value) + "x"; }

// "Like" a reference: within a quarter more samples; "slower": a fifth more or more.
constexpr double kLike = 1.25, kSlower = 1.2;

}  // namespace

void convergence(const Options& options, std::ostream& out) {
  const int epochs = options.quick ? 6 : 10;
  const std::string train_binary = (fs::path(self_dir()) / "gradsync-train").string();
  if (!fs::exists(train_binary)) {
    throw models::InputError("reproduce convergence: " + train_binary +
                             " was not built (configure found no libtorch: install libtorch-dev, see scripts/setup.sh); it "
                             "trains the runs this reproduction measures");
  }
  make_dir(options.out_dir);
  Report report(out);
  report << "== Convergence (sources C and D): real training with gradsync-train, each strategy's own schedule\n"
         << "task: the digits MLP (gradsync-train's), plain SGD (momentum 0), " << kRanks << " workers x " << kBatch
         << " rows unless said, seed 1, " << epochs << " epochs; target: test loss " << kTargetLoss << ", tested every "
         << kTestEverySamples << " samples\n\n";
  const std::vector<Run> all = runs();
  std::vector<Outcome> got;
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::fprintf(stderr, "[%zu/%zu] reproduce convergence: %s\n", i + 1, all.size(), all[i].what.c_str());
    got.push_back(train(all[i], train_binary, epochs, options.out_dir));
  }
  const auto at = [&](const std::string& id) -> const Outcome& {
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i].id == id) return got[i];
    }
    throw std::logic_error("no convergence run " + id);
  };
  const Outcome& base = at("baseline");
  // One row of the table (Report takes whole strings: a manipulator would not reach the next item).
  const auto row = [&](const std::string& what, const std::string& samples, const std::string& vs, const std::string& loss,
                       const std::string& peak) {
    std::ostringstream s;
    s << "  " << std::left << std::setw(70) << what << std::right << std::setw(18) << samples << std::setw(13) << vs
      << std::setw(12) << loss << std::setw(15) << peak << "\n";
    report << s.str();
  };
  row("run", "samples to target", "vs baseline", "final loss", "peak accuracy");
  models::ordered_json runs_json = models::ordered_json::array();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Outcome& o = got[i];
    row(all[i].what, samples_text(o), ratio_text(ratio(o, base)), number(o.final_loss, 4), number(100 * o.peak_accuracy, 3) + " %");
    runs_json.push_back({{"run", all[i].id},
                         {"what", all[i].what},
                         {"group", all[i].group},
                         {"samples_to_target", o.samples_to_target ? models::ordered_json(*o.samples_to_target) : models::ordered_json()},
                         {"samples", o.samples},
                         {"final_test_loss", o.final_loss},
                         {"peak_test_accuracy", o.peak_accuracy}});
  }

  // Each claim: what the source says, what was measured, and whether it holds here.
  models::ordered_json claims = models::ordered_json::array();
  report << "\nclaims:\n";
  const auto claim = [&](const std::string& source, const std::string& says, bool holds, const std::string& measured) {
    report << "  [" << source << "] " << says << "\n      " << (holds ? "holds" : "does not hold here") << ": " << measured << "\n";
    claims.push_back({{"source", source}, {"claim", says}, {"holds", holds}, {"measured", measured}});
  };
  const Ratio ma = ratio(at("ma"), base), ma_scaled = ratio(at("ma_scaled"), base), bmuf = ratio(at("bmuf"), base);
  claim("C, D", "model averaging at the baseline's learning rate converges slower: each sample's step is divided by N",
        ma.value >= kSlower, "it needs " + ratio_text(ma) + " the baseline's samples");
  claim("C, D", "model averaging needs the learning rate x N", ma_scaled.value < ma.value && ma_scaled.value <= kLike,
        "at lr x " + std::to_string(kRanks) + " it needs " + ratio_text(ma_scaled) + " the baseline's samples, at lr " +
            number(kLearningRate) + " " + ratio_text(ma));
  claim("C", "BMUF keeps the baseline's learning rate (block momentum 1 - 1/N, block learning rate 1)",
        bmuf.value <= kLike && bmuf.value < ma.value,
        "at lr 0.1 it needs " + ratio_text(bmuf) + " the baseline's samples (model averaging " + ratio_text(ma) + ")");
  const Outcome& sync = at("sync");
  const Ratio onebit = ratio(at("onebit"), sync), off = ratio(at("onebit_no_feedback"), sync);
  claim("D", "1-bit SGD with error feedback loses no or very little: it converges like full precision", onebit.value <= kLike,
        "it needs " + ratio_text(onebit) + " the samples of synchronous SGD; final test loss " + number(at("onebit").final_loss, 4) +
            " against " + number(sync.final_loss, 4));
  claim("D", "without error feedback 1-bit SGD loses accuracy", off.value >= kSlower,
        "it needs " + ratio_text(off) + " the samples of synchronous SGD; final test loss " +
            number(at("onebit_no_feedback").final_loss, 4));
  const Outcome& warm = at("onebit_warm");
  claim("D", "1-bit SGD needs a warm start", onebit.value > kLike,
        onebit.value > kLike ? "without one it needs " + ratio_text(onebit) + " the samples of synchronous SGD"
                             : "without one it already needs only " + ratio_text(onebit) +
                                   " the samples of synchronous SGD (with 1 warm epoch: " + samples_text(warm) +
                                   " samples to target, final test loss " + number(warm.final_loss, 4) +
                                   "; the warm epoch is one worker's at lr x N)");
  const Outcome& big = at("sync_8x");
  claim("C", "synchronous SGD at 8x the batch converges to a lower peak", big.peak_accuracy < base.peak_accuracy,
        "peak test accuracy " + number(100 * big.peak_accuracy, 3) + " % against the baseline's " +
            number(100 * base.peak_accuracy, 3) + " % in " + std::to_string(epochs) + " epochs; " + ratio_text(ratio(big, base)) +
            " the samples to target");

  // The noise scale's prediction (McCandlish et al. 2018): synchronous SGD at 1x, 4x and 16x the
  // global batch, each at the best of a grid of learning rates (S(B) assumes each batch at its
  // best), tested every step; from the 1x run's steps to target and the noise scale measured on
  // it, the steps at 4x and 16x.
  const std::vector<double> grid = options.quick ? std::vector<double>{0.8} : std::vector<double>{0.2, 0.4, 0.8, 1.6};
  struct BatchPoint {
    int batch = 0;  // per rank
    double learning_rate = 0;
    Outcome outcome;
  };
  std::vector<BatchPoint> points;
  for (int factor : {1, 4, 16}) {
    std::optional<BatchPoint> best;
    for (double lr : grid) {
      Run r{"noise_x" + std::to_string(factor) + "_lr" + number(lr), "synchronous SGD, " + std::to_string(factor) + "x the batch, lr " + number(lr),
            kRanks, factor * kBatch, "ring", {}, lr, 0, "", kNoiseMaxSteps};
      std::fprintf(stderr, "[noise scale] reproduce convergence: %s\n", r.what.c_str());
      Outcome o = train(r, train_binary, epochs, options.out_dir);
      if (!o.steps_to_target) continue;
      if (!best || *o.steps_to_target < *best->outcome.steps_to_target) best = BatchPoint{factor * kBatch, lr, std::move(o)};
    }
    if (best) points.push_back(std::move(*best));
  }
  models::ordered_json noise_json = models::ordered_json::object();
  std::optional<models::Estimate> noise_measured;  // B_simple: pooled, and each half's
  if (!points.empty() && points.front().batch == kBatch) {
    const Outcome& o = points.front().outcome;
    const double pooled = (o.trace_sum[0] + o.trace_sum[1]) / (o.norm_sum[0] + o.norm_sum[1]);
    double lo = pooled, hi = pooled;
    for (int h : {0, 1}) {
      if (o.norm_sum[h] > 0) {
        lo = std::min(lo, o.trace_sum[h] / o.norm_sum[h]);
        hi = std::max(hi, o.trace_sum[h] / o.norm_sum[h]);
      }
    }
    if (pooled > 0 && std::isfinite(pooled)) noise_measured = models::Estimate{pooled, lo, hi};
  }
  report << "\nnoise scale (McCandlish et al. 2018): synchronous SGD (ring, " << kRanks << " ranks) at 1x, 4x and 16x the global batch of "
         << kRanks * kBatch << ", each at the best learning rate of " << [&] {
              std::string t;
              for (double lr : grid) t += (t.empty() ? "" : ", ") + number(lr);
              return t;
            }() << ", tested every step\n";
  if (!noise_measured || points.size() < 3) {
    report << "  not every batch reached the target within " << kNoiseMaxSteps << " steps at any learning rate tried\n";
  } else {
    const models::Estimate& bn = *noise_measured;
    const double s0 = static_cast<double>(*points.front().outcome.steps_to_target), b0 = kRanks * kBatch;
    auto predict = [&](double noise, double batch) { return s0 * (1 + noise / batch) / (1 + noise / b0); };
    // The critical batch the three points give: S = S_min + S_min B_crit / B, linear in 1 / B.
    double mx = 0, my = 0;
    for (const auto& p : points) {
      mx += 1.0 / (kRanks * p.batch);
      my += static_cast<double>(*p.outcome.steps_to_target);
    }
    mx /= 3;
    my /= 3;
    double sxy = 0, sxx = 0;
    for (const auto& p : points) {
      const double dx = 1.0 / (kRanks * p.batch) - mx;
      sxy += dx * (static_cast<double>(*p.outcome.steps_to_target) - my);
      sxx += dx * dx;
    }
    const double slope = sxy / sxx, s_min = my - slope * mx;
    // Positive when steps fall as the batch grows (GCC saw a conditional optional as maybe unset).
    std::optional<double> critical;
    if (slope > 0 && s_min > 0) critical.emplace(slope / s_min);
    std::ostringstream t;
    t << "  " << std::setw(12) << "global batch" << std::setw(9) << "best lr" << std::setw(17) << "steps to target" << std::setw(30)
      << "predicted from B_simple" << std::setw(9) << "error" << "\n";
    models::ordered_json rows = models::ordered_json::array();
    bool within = true;
    for (const auto& p : points) {
      const double batch = kRanks * p.batch, steps = static_cast<double>(*p.outcome.steps_to_target);
      std::string predicted = "(measured)", error;
      models::ordered_json row = {{"global_batch", batch}, {"learning_rate", p.learning_rate}, {"steps_to_target", steps}};
      if (p.batch != kBatch) {
        const double v = predict(bn.value, batch), a = predict(bn.low, batch), c = predict(bn.high, batch);
        predicted = number(v) + " (" + number(std::min(a, c)) + "-" + number(std::max(a, c)) + ")";
        error = models::format_percent(v / steps - 1, 0, true);
        within = within && std::fabs(v / steps - 1) <= 0.2;
        row["predicted_steps"] = v;
        row["predicted_steps_range"] = {std::min(a, c), std::max(a, c)};
      }
      rows.push_back(row);
      t << "  " << std::setw(12) << static_cast<long long>(batch) << std::setw(9) << number(p.learning_rate) << std::setw(17)
        << static_cast<long long>(steps) << std::setw(30) << predicted << std::setw(9) << error << "\n";
    }
    report << t.str();
    report << "B_simple = " << number(bn.value) << " samples (tr(S) / |G|^2 over the " << static_cast<long long>(b0)
           << "-sample run's steps to target; " << number(bn.low) << "-" << number(bn.high) << " over its first and second half)\n";
    report << "fit of S(B) = S_min (1 + B_crit / B) to the three: "
           << (critical ? "S_min = " + number(s_min) + " steps, B_crit = " + number(*critical) + " samples"
                        : std::string("steps do not fall as the batch grows: no critical batch above the smallest"))
           << "\n";
    claim("McCandlish", "steps to target at 4x and 16x the batch follow S(B) = S_min (1 + B_noise / B) from the noise scale measured at 1x (within 20 %)",
          within,
          "B_simple " + number(bn.value) + " samples; the fit of the three batches gives " +
              (critical ? "B_crit " + number(*critical) + " samples" : std::string("no critical batch (steps do not fall with the batch)")) +
              "; the test loss at a batch near the 1,500 training rows also meets the limits of generalisation, not only of steps");
    noise_json = {{"b_simple", bn.value}, {"b_simple_halves", {bn.low, bn.high}}, {"batches", rows}};
    if (critical) noise_json["fitted_b_crit"] = *critical;
    // The range the facts carry: B_simple's halves, widened to the fitted critical batch.
    models::Estimate carried = bn;
    if (critical) {
      carried.low = std::min(carried.low, *critical);
      carried.high = std::max(carried.high, *critical);
    }
    noise_measured = carried;
  }

  // The task as a workload whose convergence facts are these measurements: the digits MLP.
  const Outcome& sync_run = at("sync");
  if (noise_measured && sync_run.samples_to_target && base.compute_s_per_step > 0) {
    models::Workload w;
    w.name = "digits-mlp";
    w.description = "gradsync-train's task: a 64-64-10 perceptron on the UCI digits (1,500 training rows), 16 rows a GPU, its "
                    "compute as gradsync-train timed it on one rank; convergence facts measured by gradsync reproduce convergence";
    w.dtype_bytes = 4;
    w.samples_per_minibatch = kBatch;
    w.minibatches_per_epoch = kTrainRows / kBatch;
    models::Layer hidden, output;
    hidden.name = "hidden";
    hidden.params = 64 * 64 + 64;
    output.name = "output";
    output.params = 64 * 10 + 10;
    w.layers = {hidden, output};
    w.compute_s_per_minibatch = base.compute_s_per_step;
    models::ConvergenceFacts f;
    f.target = "test loss " + number(kTargetLoss);
    f.source = "gradsync reproduce convergence: ring, " + std::to_string(kRanks) + " x " + std::to_string(kBatch) + " rows, lr " +
               number(kLearningRate * kRanks) + ", momentum 0, tested every " + std::to_string(kTestEverySamples) +
               " samples; noise scale B_simple over steps to target, widened to the critical batch fitted at 1x, 4x, 16x";
    f.global_batch = kRanks * kBatch;
    const auto reached = static_cast<double>(*sync_run.samples_to_target);
    f.samples_to_target = models::Estimate::between(std::max(1.0, reached - kTestEverySamples), reached);
    f.noise_scale = *noise_measured;
    // Each strategy's samples over synchronous SGD's, within what testing every 256 samples can tell.
    auto multiple = [&](const std::string& id, const std::string& strategy, const std::string& conditions,
                        const std::map<std::string, std::string>& params) {
      const Outcome& o = at(id);
      if (!o.samples_to_target) return;
      const auto a = static_cast<double>(*o.samples_to_target);
      f.strategies[strategy] = {models::Estimate::between(std::max(1.0, a - kTestEverySamples) / reached, a / std::max(1.0, reached - kTestEverySamples)),
                                conditions + ", " + std::to_string(kRanks) + " workers, measured", params};
    };
    const std::map<std::string, std::string> period = {{"T", std::to_string(kPeriod)}};
    multiple("ma_scaled", "model_avg", "T=" + std::to_string(kPeriod) + ", lr x N", period);
    multiple("bmuf", "bmuf", "T=" + std::to_string(kPeriod) + ", block momentum 1 - 1/N, lr as one worker's", period);
    multiple("onebit", "onebit", "error feedback, lr x N", {});
    w.convergence = f;
    write_text(options.out_dir, "digits-mlp.json", models::workload_to_json(w).dump(1) + "\n");
    report << "wrote " << options.out_dir << "/digits-mlp.json: the task as a workload with these convergence facts (gradsync predict --workload)\n";
  }

  // Files: every run's records, the table and claims, and the report.
  std::string lines;
  for (const Outcome& o : got) {
    for (const auto& r : o.records) lines += r.dump() + "\n";
  }
  write_text(options.out_dir, "convergence.jsonl", lines);
  const models::ordered_json comparison = {{"task",
                                            {{"ranks", kRanks},
                                             {"batch_per_worker", kBatch},
                                             {"learning_rate", kLearningRate},
                                             {"momentum", 0},
                                             {"period_steps", kPeriod},
                                             {"epochs", epochs},
                                             {"target_test_loss", kTargetLoss},
                                             {"tested_every_samples", kTestEverySamples}}},
                                           {"runs", runs_json},
                                           {"noise_scale", noise_json},
                                           {"claims", claims}};
  write_text(options.out_dir, "convergence-comparison.json", comparison.dump(1) + "\n");
  report << "wrote " << options.out_dir << "/convergence.jsonl (every run's test points), convergence-comparison.json, convergence.txt\n";
  write_text(options.out_dir, "convergence.txt", report.text());
}

}  // namespace gradsync::experiments::reproduce
