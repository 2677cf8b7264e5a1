// The common result record every executor emits (formula, analytic, sim, run): one
// JSON object per line, or CSV. Bandwidth figures follow nccl-tests: algbw = bytes /
// time, busbw = algbw x the strategy's bus factor (all-reduce: 2(N-1)/N).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/schedule/schedule.h"
#include "models/strategies/formulas.h"
#include "models/workload/convergence.h"
#include "models/workload/memory.h"
#include "models/support/json_input.h"

namespace gradsync::models {

// The training step with its buckets synchronised beside the backward pass (models/workload/step.h).
struct OverlapFigures {
  int buckets = 0;
  double bucket_cap_bytes = 0;
  double first_bucket_bytes = 0;
  double slowdown = 0;
  double exposed_s = 0;              // the communication the backward pass did not hide
  double bucket_sync_s = 0;          // the buckets' synchronisations added up
  double backward_s = 0;             // as it ran, slowed where communication slows compute
  double iteration_without_s = 0;    // compute, then one synchronisation of the whole gradient (0: not known, a real run)
};

// With a workload that carries convergence facts (models/workload/convergence.h): the time to its
// target, beside the time per step. Ranges span what the facts leave open.
struct ConvergenceFigures {
  std::string target;
  double global_batch = 0;   // samples per step, all ranks together
  Estimate samples;          // to target, the strategy's own multiple included
  Estimate steps;
  Estimate time_s;           // to target
  Estimate one_gpu_time_s;   // one GPU training alone, at its own minibatch
  Estimate speedup;          // one_gpu_time_s / time_s: the convergence speed-up
  Estimate relative_samples = Estimate::exactly(1);  // the strategy's multiple of synchronous SGD's samples
  std::string conditions;    // where that multiple was measured ("" when the strategy is exact)
};

struct ResultRecord {
  std::string executor;  // formula | analytic | sim | run
  std::string topology;
  std::string strategy;
  std::map<std::string, std::string> params;  // as resolved (auto values replaced by what was chosen)
  int ranks = 0;
  std::vector<std::string> rank_nodes;
  std::string server;  // node id, when the strategy has a server
  std::string workload;  // name, or "" when only a size was given
  double bytes = 0;
  double time_per_sync_s = 0;
  std::vector<formulas::Phase> phases;
  std::optional<double> compute_s_per_minibatch;
  std::optional<double> time_per_iteration_s;
  std::optional<double> time_per_epoch_s;
  std::optional<double> one_gpu_epoch_s;  // one GPU training alone, no synchronisation
  std::optional<double> speedup_vs_1gpu;
  double busbw_factor = 0;  // the strategy's: busbw = algbw x this
  int period_steps = 1;  // synchronises once every this many steps
  bool asynchronous = false;
  std::vector<std::string> notes;  // what the strategy decided (ring order, groups, ...)
  // The facts the inputs left open (Schedule::open_facts), each other value's time relative to
  // this record's.
  std::vector<OpenFact> open_facts;
  // Analytic only: the links that bounded the synchronisation and for how long (most first,
  // at most 3), e.g. {"swB -> root (4.46 GB/s)", 0.012}.
  std::vector<std::pair<std::string, double>> bounding_links;
  // Analytic only: the time the transfers' own engines bounded (AnalyticResult::engine_bound_s).
  double engine_bound_s = 0;
  double staged_bound_s = 0;  // and copies staged through host memory (AnalyticResult::staged_bound_s)
  std::optional<OverlapFigures> overlap;
  // With a workload: what each GPU keeps of the training state (models/workload/memory.h).
  std::optional<MemoryPerGpu> memory;
  // With a workload's convergence facts: time to target, or why it is not known for this strategy.
  std::optional<ConvergenceFigures> convergence;
  std::string no_time_to_target;
  // Simulator only.
  std::string network_model;
  std::optional<int> simulated_steps;
  std::optional<double> updates_per_s;  // asynchronous pushes applied per second
  std::optional<double> mean_staleness;
  std::optional<std::uint64_t> max_staleness;
  std::vector<std::uint64_t> staleness_histogram;
  std::optional<double> sim_wall_s;
  // Real runs only: elements that differed from the expected result (checked runs).
  std::optional<std::uint64_t> wrong_elements;

  std::optional<double> algbw_GBps() const;
  std::optional<double> busbw_GBps() const;
  // The bus bandwidth a value of an open fact gives: this record's, scaled by that value's time.
  double busbw_at(const OpenFact& fact, double relative_time) const;
  // The range of bus bandwidth over the open facts' values, each fact's extremes taken together
  // (independent facts can all go one way); the record's own figure where nothing is open.
  std::optional<std::pair<double, double>> busbw_range_GBps() const;
  // Share of an iteration not spent computing (1 - compute / iteration); 1 without a workload.
  double communication_share() const;
};

ordered_json to_json(const ResultRecord& r);
std::string to_json_line(const ResultRecord& r);
// A record back from its JSON form (the inverse of to_json; derived figures such as algbw
// are recomputed). Throws nlohmann's exceptions on a document to_json did not write.
ResultRecord record_from_json(const ordered_json& doc);
// A CSV field: quoted (quotes doubled) when it holds a comma, a quote or a newline.
std::string csv_escape(const std::string& s);
std::string csv_header();
std::string to_csv_row(const ResultRecord& r);

}  // namespace gradsync::models
