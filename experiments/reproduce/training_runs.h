// Real training runs for the convergence reproductions (reproduce convergence and
// convergence-scaling): gradsync-train under a local mpirun on its digits MLP, each strategy's own
// schedule and arithmetic, and what a run's records say about reaching the target.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/support/json_input.h"

namespace gradsync::experiments::reproduce {

// The task every run trains: gradsync-train's digits MLP, plain SGD (momentum 0), seed 1.
inline constexpr int kTaskBatch = 16;              // rows a worker takes a step (the one-worker baseline's)
inline constexpr double kTaskLearningRate = 0.1;   // the one-worker baseline's
inline constexpr double kTaskTargetLoss = 0.5;     // test loss (cross-entropy over the 297 held-out digits)
inline constexpr int kTaskTestEverySamples = 256;  // a run is tested every this many samples (at least every step)
inline constexpr int kTaskTrainRows = 1500;        // gradsync-train's: 1,797 digits, the last 297 held out

// The learning rate this repository trains a strategy at on `workers` workers, by the strategy's
// own rule (Strategy::keeps_one_workers_learning_rate): one worker's rate x N, or one worker's.
// Convergence facts measured by reproduce convergence hold at these rates.
double scaled_learning_rate(const std::string& strategy, int workers, double one_worker_rate = kTaskLearningRate);

struct TrainingRun {
  std::string id;
  std::string what;
  int ranks = 1;
  int batch = kTaskBatch;
  std::string strategy;  // empty: one rank, no strategy
  std::vector<std::string> params;
  double learning_rate = kTaskLearningRate;
  int warm_start = 0;
  std::string group;  // the claims it serves (a panel of plots/convergence_curves.py)
  int max_steps = 0;  // > 0: test every step, stop at the target or after this many steps
  // The target is of the loss over every training row (gradsync-train --target-on train), not the
  // test loss: what the optimisation reaches, apart from how it generalises.
  bool target_on_training_loss = false;
  // Tested every 256 samples as the others, but stopped at the target: only its samples to target
  // are wanted.
  bool stop_at_target = false;
  // The model: "" the digits MLP (the task above), "lm" gradsync-train's language model on its
  // installed text, trained `fixed_steps` steps and tested every `test_every_steps` (0: three times).
  std::string model = "";
  int fixed_steps = 0;
  int test_every_steps = 0;
  // The loss whose first row gives the samples to target (the digits' test loss 0.5 by default).
  double target_loss = kTaskTargetLoss;
  // Where gradsync-train writes the model as a workload ("": not written).
  std::string workload_output{};
};

struct TrainingOutcome {
  std::optional<long long> samples_to_target;  // empty: not reached (the run's target loss: test or training)
  long long samples = 0;                        // in all
  double final_loss = 0, peak_accuracy = 0;
  std::vector<models::ordered_json> records;    // gradsync-train's rows, each with "run": the run's id
  std::optional<long long> steps_to_target;
  double compute_s_per_step = 0;  // rank 0's, as gradsync-train timed it (its last row)
  std::optional<double> gradient_sent_share;  // a row-sampling strategy's share of the gradient sent (its last row)
  // The noise scale's two estimators (gradsync-train's rows, each a mean over its steps), summed
  // over the rows up to the target: the first half's and the second's.
  double trace_sum[2] = {0, 0}, norm_sum[2] = {0, 0};
};

// gradsync-train beside this binary; InputError naming `who` when it was not built.
std::string train_binary(const std::string& who);

// Trains `run` for `epochs` (or to the target, with max_steps), records in a scratch file under
// `dir` (removed after). InputError when the run fails or writes no records.
TrainingOutcome train(const TrainingRun& run, const std::string& binary, int epochs, const std::string& dir);

// "4864", or "> 14720" when the target was not reached.
std::string samples_text(const TrainingOutcome& o);

// Samples to target, a run's over another's; a run that did not reach it counts its samples in
// all (a lower bound: "at least").
struct Ratio {
  double value = 0;
  bool at_least = false;
};
Ratio ratio(const TrainingOutcome& a, const TrainingOutcome& b);
std::string ratio_text(const Ratio& r);  // "1.05x", ">= 3.03x"

// Three significant digits (or `digits`), as the reports print figures.
std::string figure(double v, int digits = 3);

}  // namespace gradsync::experiments::reproduce
