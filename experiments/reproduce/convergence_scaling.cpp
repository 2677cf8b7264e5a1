// gradsync reproduce convergence-scaling: the shape of source C's convergence speed-ups with model
// averaging (to the one-GPU baseline's quality: above 3x on 4 GPUs, 5x on 8, 9x on 16), on real
// training. Model averaging at T = 8 and the learning rate x N (the rule source C found it needs)
// on 2 to 16 workers of gradsync-train's digits MLP, each trained to the baseline's target; a count
// that does not reach it at lr x N is run again at half that rate. The speed-up to target each
// count can give is N x the baseline's samples over its own: the ceiling, with every step as fast as
// one worker's (what averaging every 8 steps comes near when the averaging hides).
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "experiments/reproduce/common.h"
#include "experiments/reproduce/training_runs.h"
#include "experiments/table.h"

namespace gradsync::experiments::reproduce {

namespace {

constexpr int kScalingPeriod = 8;

// Source C's convergence speed-ups with model averaging, by GPUs ("above").
struct Claimed {
  int gpus;
  double speedup;
};
constexpr Claimed kSourceC[] = {{4, 3.0}, {8, 5.0}, {16, 9.0}};

struct CountResult {
  int workers = 0;
  double learning_rate = 0;
  TrainingOutcome outcome;
  std::optional<TrainingOutcome> halved;  // at half the rate, when lr x N did not reach the target
  double halved_rate = 0;
};

}  // namespace

void convergence_scaling(const Options& options, std::ostream& out) {
  const int epochs = options.quick ? 10 : 20;
  const std::vector<int> counts = options.quick ? std::vector<int>{2, 8} : std::vector<int>{2, 4, 8, 16};
  const std::string binary = train_binary("reproduce convergence-scaling");
  make_dir(options.out_dir);
  Report report(out);
  report << "== Convergence speed-up with the number of workers (source C: model averaging above 3x on 4 GPUs, 5x on 8, 9x on "
            "16)\n"
         << "task: the digits MLP (gradsync-train's), plain SGD, " << kTaskBatch << " rows a worker, seed 1, up to " << epochs
         << " epochs; target: test loss " << figure(kTaskTargetLoss) << ", tested every " << kTaskTestEverySamples
         << " samples; model averaging at T=" << kScalingPeriod << ", lr " << figure(kTaskLearningRate) << " x N\n\n";
  const std::string period = "T=" + std::to_string(kScalingPeriod);
  const std::size_t total = 1 + counts.size();
  std::fprintf(stderr, "[1/%zu] reproduce convergence-scaling: 1 worker (the baseline)\n", total);
  const TrainingOutcome base =
      train({"baseline", "1 worker, lr " + figure(kTaskLearningRate), 1, kTaskBatch, "", {}, kTaskLearningRate, 0, "scaling", 0}, binary, epochs,
            options.out_dir);
  if (!base.samples_to_target) {
    throw models::InputError("reproduce convergence-scaling: the one-worker baseline did not reach test loss " + figure(kTaskTargetLoss) +
                             " in " + std::to_string(epochs) + " epochs");
  }
  std::vector<CountResult> results;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const int n = counts[i];
    CountResult c;
    c.workers = n;
    c.learning_rate = scaled_learning_rate("model_avg", n);
    std::fprintf(stderr, "[%zu/%zu] reproduce convergence-scaling: model averaging on %d workers, lr %s\n", i + 2, total, n,
                 figure(c.learning_rate).c_str());
    const std::string id = "ma_" + std::to_string(n);
    c.outcome = train({id, "", n, kTaskBatch, "model_avg", {period}, c.learning_rate, 0, "scaling", 0}, binary, epochs, options.out_dir);
    if (!c.outcome.samples_to_target) {
      c.halved_rate = c.learning_rate / 2;
      std::fprintf(stderr, "[%zu/%zu] reproduce convergence-scaling: not reached; again at lr %s\n", i + 2, total,
                   figure(c.halved_rate).c_str());
      c.halved = train({id + "_half_lr", "", n, kTaskBatch, "model_avg", {period}, c.halved_rate, 0, "scaling", 0}, binary, epochs, options.out_dir);
    }
    results.push_back(std::move(c));
  }

  // The speed-up to target a count can give: N x the baseline's samples over its own.
  const auto ceiling = [&](int n, const TrainingOutcome& o) -> std::optional<double> {
    if (!o.samples_to_target) return std::nullopt;
    return n * static_cast<double>(*base.samples_to_target) / static_cast<double>(*o.samples_to_target);
  };
  const auto claimed = [](int n) -> std::optional<double> {
    for (const Claimed& c : kSourceC) {
      if (c.gpus == n) return c.speedup;
    }
    return std::nullopt;
  };
  Table table({"workers", ">global batch", ">lr", ">samples to target", ">x baseline", ">period (epochs)", ">speed-up ceiling",
               ">source C"});
  table.add_row({"1 (baseline)", std::to_string(kTaskBatch), figure(kTaskLearningRate), samples_text(base), "1x", "-", "1x", "-"});
  models::ordered_json rows = models::ordered_json::array();
  // What the speed-up to target is at each count: the rate that reached it (lr x N, else half).
  std::vector<std::pair<int, double>> best;
  for (const CountResult& c : results) {
    const int global = c.workers * kTaskBatch;
    const double period_epochs = static_cast<double>(kScalingPeriod) * global / kTaskTrainRows;
    const auto add = [&](double lr, const TrainingOutcome& o) {
      const std::optional<double> x = ceiling(c.workers, o);
      const std::optional<double> said = claimed(c.workers);
      table.add_row({std::to_string(c.workers), std::to_string(global), figure(lr), samples_text(o), ratio_text(ratio(o, base)),
                     figure(period_epochs, 2), x ? figure(*x) + "x" : "-", said ? "> " + figure(*said) + "x" : "-"});
      models::ordered_json row = {{"workers", c.workers},
                                  {"global_batch", global},
                                  {"learning_rate", lr},
                                  {"samples_to_target", o.samples_to_target ? models::ordered_json(*o.samples_to_target) : models::ordered_json()},
                                  {"samples", o.samples},
                                  {"final_test_loss", o.final_loss},
                                  {"relative_samples", ratio(o, base).value},
                                  {"period_epochs", period_epochs}};
      if (x) row["speedup_ceiling"] = *x;
      if (said) row["source_c_speedup"] = *said;
      rows.push_back(row);
      if (x) best.emplace_back(c.workers, *x);
    };
    add(c.learning_rate, c.outcome);
    if (c.halved) add(c.halved_rate, *c.halved);
  }
  report << table.render() << "\n"
         << "x baseline: samples to target over the one worker's; period: the rows one averaging period of " << kScalingPeriod
         << " steps takes, in epochs of " << kTaskTrainRows << " rows; speed-up ceiling: workers x the baseline's samples / the run's "
         << "(each step as fast as one worker's)\n";

  models::ordered_json claims = models::ordered_json::array();
  report << "\nclaims:\n";
  const auto claim = [&](const std::string& says, bool holds, const std::string& measured) {
    report << "  [C] " << says << "\n      " << (holds ? "holds" : "does not hold here") << ": " << measured << "\n";
    claims.push_back({{"source", "C"}, {"claim", says}, {"holds", holds}, {"measured", measured}});
  };
  // The shape: the speed-up to target grows with the workers, below linear.
  bool grows = best.size() == results.size() && best.size() >= 2;
  std::string measured;
  for (std::size_t i = 0; i < best.size(); ++i) {
    if (i > 0 && best[i].second <= best[i - 1].second) grows = false;
    measured += (measured.empty() ? "" : ", ") + figure(best[i].second) + "x on " + std::to_string(best[i].first);
  }
  claim("model averaging's speed-up to the baseline's quality grows with the workers", grows,
        "the ceiling " + (measured.empty() ? std::string("(no count reached the target)") : measured));
  // The figures: at each count source C names, the ceiling at least the speed-up it measured.
  for (const CountResult& c : results) {
    const std::optional<double> said = claimed(c.workers);
    if (!said) continue;
    const std::optional<double> x = ceiling(c.workers, c.outcome);
    const std::optional<double> half = c.halved ? ceiling(c.workers, *c.halved) : std::nullopt;
    const std::optional<double> got = x ? x : half;
    std::string why = got ? "the ceiling is " + figure(*got) + "x" : "not reached at lr x N nor at half of it";
    why += ": model averaging needs " + ratio_text(ratio(x ? c.outcome : (c.halved ? *c.halved : c.outcome), base)) +
           " the baseline's samples at a global batch of " + std::to_string(c.workers * kTaskBatch) + " rows, an averaging period of " +
           figure(static_cast<double>(kScalingPeriod) * c.workers * kTaskBatch / kTaskTrainRows, 2) + " epochs";
    if (!x) {
      why += "; at lr x N (" + figure(c.learning_rate) + ") it did not reach the target (final test loss " +
             figure(c.outcome.final_loss, 4) + ")" + (half ? ", at " + figure(c.halved_rate) + " it did" : "");
    }
    claim("above " + figure(*said) + "x on " + std::to_string(c.workers) + " GPUs", got && *got >= *said, why);
  }

  std::string lines;
  for (const auto& r : base.records) lines += r.dump() + "\n";
  for (const CountResult& c : results) {
    for (const auto& r : c.outcome.records) lines += r.dump() + "\n";
    if (c.halved) {
      for (const auto& r : c.halved->records) lines += r.dump() + "\n";
    }
  }
  write_text(options.out_dir, "convergence-scaling.jsonl", lines);
  models::ordered_json source_c = models::ordered_json::array();
  for (const Claimed& said : kSourceC) source_c.push_back({{"gpus", said.gpus}, {"speedup_above", said.speedup}});
  const models::ordered_json comparison = {
      {"task",
       {{"batch_per_worker", kTaskBatch},
        {"one_worker_learning_rate", kTaskLearningRate},
        {"period_steps", kScalingPeriod},
        {"epochs", epochs},
        {"target_test_loss", kTaskTargetLoss},
        {"tested_every_samples", kTaskTestEverySamples}}},
      {"baseline", {{"samples_to_target", *base.samples_to_target}}},
      {"counts", rows},
      {"source_c", source_c},
      {"claims", claims}};
  write_text(options.out_dir, "convergence-scaling-comparison.json", comparison.dump(1) + "\n");
  report << "wrote " << options.out_dir << "/convergence-scaling.jsonl (every run's test points), convergence-scaling-comparison.json, "
         << "convergence-scaling.txt\n";
  write_text(options.out_dir, "convergence-scaling.txt", report.text());
}

}  // namespace gradsync::experiments::reproduce
