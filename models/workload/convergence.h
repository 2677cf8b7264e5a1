// What a workload needs to reach a model, not just to take a step: its statistical efficiency.
//
// Synchronous SGD at a global batch of B samples needs S(B) = S_min (1 + B_noise / B) steps to a
// target loss (McCandlish, Kaplan, Amodei et al. 2018, "An Empirical Model of Large-Batch
// Training", eq. 2.11, each batch at its best learning rate), i.e. E(B) = E_min (1 + B / B_noise)
// samples: below the noise scale B_noise a bigger batch takes proportionally fewer steps, above it
// hardly fewer. From samples to target measured at one global batch B0 and the noise scale,
// E(B) = E(B0) (1 + B / B_noise) / (1 + B0 / B_noise). A strategy that changes the arithmetic of
// training (model averaging, BMUF, 1-bit SGD, asynchronous updates, sampling) needs its own
// multiple of synchronous SGD's samples at the same per-rank batch: a measured fact with the
// conditions it was measured under; strategies that compute the exact sum need exactly S(B).
//
// JSON (a workload's "convergence"; each figure a number, or [low, high] where it is a range):
//   {"target": "test loss 0.5", "source": "where the figures come from",
//    "global_batch": 64, "samples_to_target": 4800 | [lo, hi], "noise_scale": 80 | [lo, hi],
//    "strategies": {"model_avg": {"relative_samples": 1.05 | [lo, hi], "conditions": "lr x N",
//                                 "params"?: {"T": "8"},
//                                 "by_workers"?: {"2": 0.98 | [lo, hi], "4": 1.05 | [lo, hi]},
//                                 "not_reached"?: {"8": 42240}}}}
// A strategy's multiple may differ with the number of workers (BMUF's block momentum 1 - 1/N
// is 0.5 on 2, 0.75 on 4): "by_workers" gives it at each count measured, and a prediction at a
// count not listed takes the nearest one's (and says so); without it, relative_samples holds at
// every count. "not_reached" gives the counts at which a run did not reach the target at all,
// with the samples it trained: a prediction nearest such a count has no time to target.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "models/support/json_input.h"

namespace gradsync::models {

// A figure known to lie in [low, high]; `value` is the one to print and rank by (the number
// given, or the geometric mean of a range).
struct Estimate {
  double value = 0;
  double low = 0;
  double high = 0;
  static Estimate exactly(double v) { return {v, v, v}; }
  static Estimate between(double low, double high);
  bool is_range() const { return high > low; }
  Estimate operator*(const Estimate& o) const;
  Estimate operator*(double k) const;
};

struct StrategyConvergence {
  Estimate relative_samples;  // samples to target / synchronous SGD's at the same per-rank batch
  std::string conditions;     // "T=8, learning rate x N, 4 workers"
  // The strategy's parameters it was measured at ({"T": "8"}): a record at others gets a note.
  std::map<std::string, std::string> params;
  std::map<int, Estimate> by_workers;  // the multiple at each worker count measured (may be empty)
  std::map<int, double> not_reached{};  // worker counts whose run never reached the target: its samples

  // The multiple at `workers`: by_workers' entry at that count, or at the nearest count listed
  // in either map (the larger of two as near), or relative_samples when none is; `measured_at`
  // the count it was measured at (0: relative_samples, no count given). Null where the nearest
  // count is one that did not reach the target.
  const Estimate* at_workers(int workers, int* measured_at = nullptr) const;
};

struct ConvergenceFacts {
  std::string target;  // what "target" means: "test loss 0.5", "BLEU of the one-GPU baseline"
  std::string source;  // where the figures come from (measured, published, assumed)
  double global_batch = 0;  // the global batch (samples) samples_to_target was measured at
  Estimate samples_to_target;
  Estimate noise_scale;  // B_noise, samples
  std::map<std::string, StrategyConvergence> strategies;  // by strategy name
};

// Synchronous SGD's samples to target at a global batch of `batch` samples (the range spans the
// noise scale's and the measured samples' ranges).
Estimate samples_to_target(const ConvergenceFacts& facts, double batch);
// E(b) / E(B): how much less each sample is worth at global batch B than at b, inverted
// ((1 + b / B_noise) / (1 + B / B_noise); 1 at B = b). The range spans the noise scale's.
Estimate statistical_efficiency(const ConvergenceFacts& facts, double small_batch, double batch);

ConvergenceFacts convergence_from_json(const JsonView& v);
ordered_json convergence_to_json(const ConvergenceFacts& facts);
std::string estimate_text(const Estimate& e, int digits = 3);
// "x1.05 (1-1.11)", or by worker count: "x0.737 (0.684-0.79) on 2 workers, x1.05 (1-1.11) on 4".
std::string multiples_text(const StrategyConvergence& c);

}  // namespace gradsync::models
