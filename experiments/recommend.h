// gradsync recommend: which synchronisation to use on a topology for a workload. Searches
// GPU counts and placements, every strategy and its parameters (server placement, ring
// order, k and grouping, inner all-reduce, sampling over ps / ring / hierarchical at one
// rate or per-link rates, the sync period of model averaging and BMUF), predicts each
// candidate with the analytic executor, ranks them, and confirms the best ones with the
// simulator. Training alone on one GPU is a candidate when a workload is given.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "experiments/experiment.h"
#include "models/executors/result.h"

namespace gradsync::experiments {

struct RecommendOptions {
  std::vector<std::string> strategies;  // empty: every strategy
  models::SyncParams fixed;  // parameters the user set: not searched
  bool exact_only = false;  // leave out strategies that change the training (sampling, 1-bit, periodic, async)
  int confirm = 3;  // how many of the best multi-GPU choices the simulator confirms
  double max_sync_share = 0.10;  // model averaging / BMUF: the smallest period T keeping sync under this share
  std::size_t max_placements = 8;  // per GPU count: every subset of GPUs up to this many, else heuristics
  // Memory of one GPU: choices whose memory per GPU (models/workload/memory.h) exceeds it are left
  // out, and the sharded strategies (zero1, zero2, fsdp: they save memory, never time) searched.
  std::optional<double> gpu_memory_bytes;
  // Threads pricing the candidates (they are independent; the ranking is the same however many):
  // 0, one per core.
  int threads = 0;
  // The best choices (in rank order, as many as this) whose strategy states the facts the
  // inputs leave open (Strategy::states_open_facts) are predicted again with them, so that
  // their records carry the busbw range and name the facts that set it (the candidates are
  // weighed without: the central figures are the same).
  std::size_t restated = 12;
};

struct Choice {
  int gpus = 1;
  std::vector<std::string> rank_nodes;  // GPU ids in rank order
  const models::Strategy* strategy = nullptr;  // nullptr: one GPU training alone
  std::map<std::string, std::string> searched;  // parameters the search chose (the rest: defaults / user's)
  models::SyncParams params;  // everything passed to the strategy
  std::string changes_training;  // "" when the result is the exact synchronous sum
  models::ResultRecord analytic;
  std::optional<models::ResultRecord> sim;
  std::optional<double> bucket_cap_bytes;  // --overlap: the bucket size the search chose (else the plan's)
  std::optional<double> plan_bucket_iteration_s;  // --overlap, a size chosen: the iteration with the plan's
  // What the ranking compares: time to the workload's target where it carries convergence facts,
  // else epoch time, else synchronisation time per step.
  double score = 0;
  bool unknown_target = false;  // convergence facts, but none for how this choice changes training: ranked after
  bool alone() const { return strategy == nullptr; }
  std::string name() const;  // "ring", "sampled inner=ring", "one GPU alone"
  std::string params_text() const;  // "server=gpu0 rates=auto"
  // What bounded its synchronisation longest (the analytic walk): a link ("n0-gpu0 -> n0-nvswitch
  // (450 GB/s)"), or its transfers' own rate where no link did (NCCL's channels as its cost model
  // prices them); "" for none.
  struct Bound {
    std::string what;
    double seconds = 0;
    bool own_rate = false;
  };
  Bound bound() const;
};

struct Recommendation {
  bool with_workload = false;
  std::vector<Choice> ranked;  // best first (ties: the simpler choice first)
  std::size_t evaluated = 0;  // candidates predicted
  std::vector<std::string> skipped;  // candidates that could not be built, with why
  std::vector<std::string> left_out;  // strategies not searched (periodic and asynchronous ones without a workload)
  std::vector<std::string> sharded_left_out;  // sharded strategies, not searched without --gpu-memory
  std::vector<int> past_noise_scale;  // GPU counts not searched: their global batch passes the noise scale
  std::size_t not_fitting = 0;  // choices left out: more memory per GPU than --gpu-memory
  std::optional<Choice> smallest_not_fitting;  // of those, the one needing the least memory per GPU
};

// False for the searched values that change nothing worth showing: a default that does not
// resolve to anything (ring_order=auto, grouping=switch, rates=1), and inner (shown with the
// strategy's name).
bool worth_showing(const models::Strategy& s, const std::string& key, const std::string& value);

// `progress(done, total)` is called while searching (for a progress line).
Recommendation recommend(const Plan& plan, const RecommendOptions& options,
                         const std::function<void(std::size_t, std::size_t)>& progress = {});

// Why the winner wins: the link (or its own transfer rate) bounding it, and for workloads what a multi-GPU choice
// would need to beat one GPU. Lines of text.
std::vector<std::string> explain(const Plan& plan, const Recommendation& r);

}  // namespace gradsync::experiments
