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
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/reproduce/common.h"
#include "experiments/validate.h"
#include "models/support/error.h"
#include "models/support/process.h"

namespace gradsync::experiments::reproduce {

namespace {

namespace fs = std::filesystem;

constexpr int kRanks = 4;            // N
constexpr int kBatch = 16;           // rows a worker takes a step (the baseline's batch)
constexpr double kLearningRate = 0.1;  // the baseline's
constexpr double kTargetLoss = 0.5;  // test loss (cross-entropy over the 297 held-out digits)
constexpr int kPeriod = 8;           // model averaging's and BMUF's T
constexpr int kTestEverySamples = 256;

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
};

struct Outcome {
  std::optional<long long> samples_to_target;  // empty: not reached
  long long samples = 0;                        // in all
  double final_loss = 0, peak_accuracy = 0;
  std::vector<models::ordered_json> records;
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
  command.insert(command.end(), {train_binary, "--batch", std::to_string(r.batch), "--epochs", std::to_string(epochs), "--lr",
                                 number(r.learning_rate, 6), "--momentum", "0", "--seed", "1", "--eval-every",
                                 std::to_string(std::max(1, kTestEverySamples / global)), "-o", file});
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
    if (!o.samples_to_target && loss <= kTargetLoss) o.samples_to_target = samples;
    o.samples = samples;
    o.final_loss = loss;
    o.peak_accuracy = std::max(o.peak_accuracy, accuracy);
    j["run"] = r.id;
    o.records.push_back(std::move(j));
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
                                           {"claims", claims}};
  write_text(options.out_dir, "convergence-comparison.json", comparison.dump(1) + "\n");
  report << "wrote " << options.out_dir << "/convergence.jsonl (every run's test points), convergence-comparison.json, convergence.txt\n";
  write_text(options.out_dir, "convergence.txt", report.text());
}

}  // namespace gradsync::experiments::reproduce
