#include "experiments/reproduce/training_runs.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "experiments/validate.h"
#include "models/strategies/strategy.h"
#include "models/support/error.h"
#include "models/support/process.h"

namespace gradsync::experiments::reproduce {

namespace fs = std::filesystem;

double scaled_learning_rate(const std::string& strategy, int workers, double one_worker_rate) {
  return models::find_strategy(strategy).keeps_one_workers_learning_rate ? one_worker_rate : one_worker_rate * workers;
}

std::string figure(double v, int digits) {
  std::ostringstream s;
  s << std::setprecision(digits) << v;
  return s.str();
}

std::string train_binary(const std::string& who) {
  const std::string binary = (fs::path(self_dir()) / "gradsync-train").string();
  if (!fs::exists(binary)) {
    throw models::InputError(who + ": " + binary +
                             " was not built (configure found no libtorch: install libtorch-dev, see scripts/setup.sh); it "
                             "trains the runs this reproduction measures");
  }
  return binary;
}

TrainingOutcome train(const TrainingRun& r, const std::string& binary, int epochs, const std::string& dir) {
  const std::string file = (fs::path(dir) / ("training-" + r.id + ".jsonl")).string();
  std::vector<std::string> command = local_mpirun(r.ranks);
  const int global = r.ranks * r.batch;
  command.insert(command.end(), {binary, "--batch", std::to_string(r.batch), "--lr", figure(r.learning_rate, 6), "--momentum", "0",
                                 "--seed", "1", "-o", file});
  if (!r.model.empty()) command.insert(command.end(), {"--model", r.model});
  if (r.fixed_steps > 0) {
    const int every = r.test_every_steps > 0 ? r.test_every_steps : std::max(1, r.fixed_steps / 3);
    command.insert(command.end(), {"--steps", std::to_string(r.fixed_steps), "--eval-every", std::to_string(every)});
  } else if (r.max_steps > 0) {
    command.insert(command.end(), {"--steps", std::to_string(r.max_steps), "--eval-every", "1", "--target-loss",
                                   figure(r.target_loss, 6), "--stop-at-target"});
    if (r.target_on_training_loss) command.insert(command.end(), {"--target-on", "train"});
  } else {
    command.insert(command.end(),
                   {"--epochs", std::to_string(epochs), "--eval-every", std::to_string(std::max(1, kTaskTestEverySamples / global))});
    if (r.stop_at_target) command.insert(command.end(), {"--target-loss", figure(r.target_loss, 6), "--stop-at-target"});
  }
  if (!r.strategy.empty()) {
    command.insert(command.end(), {"--strategy", r.strategy});
    for (const auto& p : r.params) command.insert(command.end(), {"-p", p});
  }
  if (r.warm_start > 0) command.insert(command.end(), {"--warm-start", std::to_string(r.warm_start)});
  if (!r.workload_output.empty()) command.insert(command.end(), {"--workload-out", r.workload_output});
  models::ProcessOptions process;
  process.env = mpirun_environment();
  process.timeout_s = 600;
  const auto result = models::run_process(command, process);
  if (result.status != 0) {
    std::string shown;
    for (const auto& w : command) shown += (shown.empty() ? "" : " ") + w;
    throw models::InputError("training run " + r.id + " failed (status " + std::to_string(result.status) +
                             (result.timed_out ? ", timed out" : "") + "): " + shown + "\n" + result.out);
  }
  TrainingOutcome o;
  std::vector<std::pair<double, double>> rows_to_target;  // (trace, |G|^2) of each row up to the target
  std::ifstream in(file);
  int number_of_line = 0;
  for (std::string line; std::getline(in, line);) {
    ++number_of_line;
    models::ordered_json j;
    long long samples = 0;
    double loss = 0, accuracy = 0, target_loss = 0;
    try {
      j = models::ordered_json::parse(line);
      samples = j.at("samples").get<long long>();
      loss = j.at("test_loss").get<double>();
      accuracy = j.at("test_accuracy").get<double>();
      target_loss = r.target_on_training_loss ? j.at("train_set_loss").get<double>() : loss;
    } catch (const models::ordered_json::exception& e) {
      throw models::InputError(file + ":" + std::to_string(number_of_line) + ": " + e.what() +
                               "; expected gradsync-train's records (samples, test_loss, test_accuracy, train_set_loss)");
    }
    if (!o.samples_to_target && target_loss <= r.target_loss) {
      o.samples_to_target = samples;
      o.steps_to_target = j.value("steps", 0LL);
    }
    if (j.contains("compute_s_per_step")) o.compute_s_per_step = j.at("compute_s_per_step").get<double>();
    if (j.contains("gradient_sent_share")) o.gradient_sent_share = j.at("gradient_sent_share").get<double>();
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
  if (o.records.empty()) throw models::InputError("training run " + r.id + " wrote no records (" + file + ")");
  return o;
}

std::string samples_text(const TrainingOutcome& o) {
  return o.samples_to_target ? std::to_string(*o.samples_to_target) : "> " + std::to_string(o.samples);
}

Ratio ratio(const TrainingOutcome& a, const TrainingOutcome& b) {
  const double num = static_cast<double>(a.samples_to_target.value_or(a.samples));
  const double den = static_cast<double>(b.samples_to_target.value_or(b.samples));
  return {num / den, !a.samples_to_target};
}

std::string ratio_text(const Ratio& r) { return (r.at_least ? ">= " : "") + figure(r.value) + "x"; }

}  // namespace gradsync::experiments::reproduce
