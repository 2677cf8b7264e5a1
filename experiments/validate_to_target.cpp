// gradsync validate --to-target: each strategy and GPU count trained for real (gradsync-train)
// to the target of a workload's convergence facts, its training time to it against the time the
// facts and the analytic model predict on the topology its ranks measured.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <thread>

#include "experiments/reproduce/training_runs.h"
#include "experiments/table.h"
#include "experiments/validate.h"
#include "models/executors/predict.h"
#include "models/support/error.h"
#include "models/support/format.h"
#include "models/support/process.h"
#include "models/support/progress.h"
#include "models/support/stats.h"
#include "models/topology/topology_io.h"
#include "models/workload/workload.h"

namespace gradsync::experiments {

namespace fs = std::filesystem;
using models::median;

double target_test_loss(const models::Workload& w, const std::string& name) {
  const std::string prefix = "test loss ";
  if (!w.convergence || w.convergence->target.rfind(prefix, 0) != 0) {
    throw models::InputError("validate --to-target --target-workload " + name + ": expected a workload whose convergence facts' "
                             "target is gradsync-train's \"test loss X\" (digits-mlp, or the digits-mlp.json gradsync "
                             "reproduce convergence writes); got " + (w.convergence ? "\"" + w.convergence->target + "\"" : "no convergence facts"));
  }
  try {
    return std::stod(w.convergence->target.substr(prefix.size()));
  } catch (const std::exception&) {
    throw models::InputError("validate --to-target: the target \"" + w.convergence->target + "\" names no test loss");
  }
}

std::vector<ValidationPoint> validate_to_target(const ValidateOptions& o, const std::function<std::string(int)>& measured_for,
                                                const std::string& where, const std::string& spread_line,
                                                const std::function<std::vector<std::string>(int)>& launcher) {
  const models::Workload facts = models::load_workload(o.target_workload);
  const double target = target_test_loss(facts, o.target_workload);
  const std::string train = self_dir() + "/gradsync-train";
  if (!fs::exists(train)) {
    throw models::InputError("validate --to-target: " + train + " was not built (configure found no libtorch: see scripts/setup.sh)");
  }
  const std::vector<std::string> items =
      o.strategies.empty() ? std::vector<std::string>{"ring", "model_avg:T=8", "bmuf:T=8", "onebit"} : o.strategies;
  models::ProcessOptions process;
  process.env = mpirun_environment();
  process.timeout_s = 1200;
  std::vector<ValidationPoint> points;
  std::vector<models::ResultRecord> records;
  Table table({"strategy", ">GPUs", ">lr", ">samples", ">predicted", ">error", ">to target", ">predicted", ">error",
               ">compute/step", ">step", ">predicted"});
  std::vector<double> time_errors, sample_errors;
  models::Progress progress = models::Progress::for_stderr(o.gpus.size() * items.size());
  std::string measured_files;
  for (int n : o.gpus) {
    // Ranks that share cores (the emulated cluster's, or a small host's) wait for each other's
    // turn in every round, and how long depends on how many there are: the runs of n ranks are
    // predicted on what n ranks measured.
    const std::string measured = measured_for(n);
    measured_files += (measured_files.empty() ? "" : ", ") + measured;
    const auto topo = models::load_topology_file(measured);
    const models::Topology& t = topo.topology;
    for (const std::string& text : items) {
      const StrategyItem item = parse_strategy_item(text);
      progress.step(text + " on " + std::to_string(n) + " GPUs, trained to " + facts.convergence->target);
      const double lr = reproduce::scaled_learning_rate(item.name, n);  // the facts' rule
      const std::string file = o.output_dir + "/to-target-" + std::to_string(n) + "-" + std::to_string(points.size()) + ".jsonl";
      std::vector<std::string> command = launcher(n);
      for (const std::string& a : {train, std::string("--strategy"), item.name, std::string("--topology"), measured,
                                   std::string("--batch"), std::to_string(*facts.samples_per_minibatch), std::string("--lr"),
                                   models::number_text(lr, 6), std::string("--momentum"), std::string("0"), std::string("--seed"),
                                   std::string("1"), std::string("--eval-every"), std::string("2"), std::string("--target-loss"),
                                   models::number_text(target, 6), std::string("--stop-at-target"), std::string("--no-noise-scale"), std::string("--epochs"),
                                   std::string("200"), std::string("-o"), file}) {
        command.push_back(a);
      }
      for (const std::string& p : params_for(item)) {
        command.push_back("-p");
        command.push_back(p);
      }
      const auto r = models::run_process(command, process);
      if (r.status != 0) {
        throw models::InputError("validate --to-target: the training run failed (`" + models::join(command, " ") + "`):\n" + r.out);
      }
      // The first row at the target: its samples and the training time to it (tests left out).
      std::optional<models::ordered_json> at;
      double compute = 0;
      {
        std::ifstream in(file);
        for (std::string line; std::getline(in, line);) {
          const auto j = models::ordered_json::parse(line, nullptr, false);
          if (j.is_discarded() || !j.contains("test_loss") || !j.contains("train_seconds")) {
            throw models::InputError(file + ": expected gradsync-train's records (test_loss, train_seconds)");
          }
          // A synchronous step waits for the slowest rank's compute since the last synchronisation
          // (where the run timed every rank's); rank 0's own otherwise (asynchronous workers).
          if (j.contains("compute_s_per_step_slowest")) {
            compute = j.at("compute_s_per_step_slowest").get<double>();
          } else if (j.contains("compute_s_per_step")) {
            compute = j.at("compute_s_per_step").get<double>();
          }
          if (!at && j.at("test_loss").get<double>() <= target) at = j;
        }
      }
      if (!at) throw models::InputError("validate --to-target: " + text + " on " + std::to_string(n) + " GPUs never reached " +
                                        facts.convergence->target + " (" + file + ")");
      // The prediction: the facts' samples at this global batch (and the strategy's multiple), each
      // step the analytic model's iteration on the measured topology with the run's own compute per
      // step (the slowest rank's between synchronisations, as gradsync-train timed each rank's: the
      // ranks share this machine's cores).
      models::Workload w = facts;
      w.compute_s_per_minibatch = compute;
      models::PredictRequest q;
      q.topology = &t;
      q.workload = &w;
      q.strategy = &models::find_strategy(item.name);
      q.params = models::SyncParams::parse(params_for(item));
      q.placement = models::first_gpus(t, n);
      models::ResultRecord rec = models::predict(q);
      ValidationPoint p;
      p.strategy = text;
      p.ranks = n;
      p.workload = w.name;
      p.measured_s = at->at("train_seconds").get<double>();
      const double samples = at->at("samples").get<double>();
      std::vector<std::string> row = {text, std::to_string(n), models::number_text(lr, 3), models::number_text(samples, 6)};
      if (rec.convergence) {
        const double predicted = rec.convergence->time_s.value, predicted_samples = rec.convergence->samples.value;
        p.predicted_s["analytic"] = predicted;
        time_errors.push_back(std::fabs(predicted / p.measured_s - 1));
        sample_errors.push_back(std::fabs(predicted_samples / samples - 1));
        row.insert(row.end(), {models::number_text(predicted_samples, 6), percent(predicted_samples, samples),
                               format_seconds(p.measured_s), format_seconds(predicted), percent(predicted, p.measured_s)});
      } else {
        row.insert(row.end(), {"?", "", format_seconds(p.measured_s), "?", ""});
      }
      // Per step: the measured time over the steps taken, the predicted time over the predicted steps.
      const double global = static_cast<double>(n) * *facts.samples_per_minibatch;
      row.insert(row.end(), {format_seconds(compute), format_seconds(p.measured_s / at->at("steps").get<double>()),
                             rec.convergence ? format_seconds(rec.convergence->time_s.value * global / rec.convergence->samples.value) : "?"});
      table.add_row(row);
      if (!rec.no_time_to_target.empty()) table.add_note_row("^ " + rec.no_time_to_target);
      rec.notes.push_back("validate --to-target: measured " + models::number_text(samples, 6) + " samples and " +
                          models::number_text(p.measured_s, 6) + " s of training to " + facts.convergence->target);
      records.push_back(std::move(rec));
      points.push_back(p);
      std::error_code ignored;
      fs::remove(file, ignored);
    }
  }
  progress.finish();
  std::cout << "gradsync validate --to-target: " << where << ", measured topolog" << (o.gpus.size() > 1 ? "ies " : "y ")
            << measured_files << (o.gpus.size() > 1 ? " (each GPU count's runs on its own ranks' measurement)" : "") << "\n";
  if (!spread_line.empty()) std::cout << spread_line << "\n";
  std::cout << "real training (gradsync-train, plain SGD, " << *facts.samples_per_minibatch << " rows a rank, tested every 2 steps) to "
            << facts.convergence->target << ", against " << o.target_workload << "'s convergence facts (" << facts.convergence->source
            << ") with the analytic model's iteration on the topology its ranks measured and each run's own compute per step\n\n"
            << table.render() << "\n";
  std::cout << "samples: to the first test at the target; to target: training time to it, tests left out; step: per step, "
               "measured over the steps taken, predicted over the predicted steps\n";
  const int most = o.gpus.empty() ? 0 : *std::max_element(o.gpus.begin(), o.gpus.end());
  if (static_cast<unsigned>(most) > std::thread::hardware_concurrency()) {
    std::cout << "note: up to " << most << " ranks train on " << std::thread::hardware_concurrency()
              << " cores: they take turns, and the model gives each emulated GPU the compute a step waited for (the slowest "
                 "rank's between synchronisations, as the run timed each rank's)\n";
  }
  if (!time_errors.empty()) {
    std::cout << "time to target: median |error| " << models::format_percent(median(time_errors), 1) << ", max "
              << models::format_percent(*std::max_element(time_errors.begin(), time_errors.end()), 1) << " over "
              << time_errors.size() << " runs (target: median <= 15 %); samples: median |error| "
              << models::format_percent(median(sample_errors), 1) << "\n";
  }
  std::string lines;
  for (const auto& r : records) lines += models::to_json_line(r);
  models::write_file_atomically(o.output_dir + "/validation-to-target.jsonl", lines);
  std::cout << "wrote " << o.output_dir << "/validation-to-target.jsonl (" << records.size() << " records)\n";
  return points;
}

}  // namespace gradsync::experiments
