// Sweeps: every point of an experiment through its executors, spread over local worker
// processes (fork; results come back through pipes and are kept in point order), with
// progress on stderr, resumable result files and per-rank parts under mpirun.
//
// Result files written by a sweep are the ordinary records (models/executors/result.h) plus the
// point's identity, so that a sweep can be resumed and rank parts merged:
//   JSON lines: two more members, "point_index" (position in the experiment's point order)
//               and "point" (the identity: topology, executor, strategy, given parameters,
//               ranks, bytes or workload — what --resume compares);
//   CSV:        two more columns at the end, point_index and point.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "experiments/experiment.h"
#include "models/executors/executor.h"
#include "models/executors/predict.h"
#include "models/support/progress.h"
#include "models/executors/result.h"

namespace gradsync::experiments {

// One point of a plan, in the order predict and simulate print them:
// size, then strategy, then placement, then executor.
struct Point {
  std::size_t index = 0;
  std::optional<double> size;  // nullopt: the workload's gradient
  const StrategyChoice* choice = nullptr;
  const models::Placement* placement = nullptr;
  const models::Executor* executor = nullptr;
};

std::vector<Point> plan_points(const Plan& plan);
models::PredictRequest point_request(const Plan& plan, const Point& point);
// "analytic ring ranks=gpu0,gpu2 workload=source-a-ffnn-lm topology=..." (given params only).
std::string point_key(const Plan& plan, const Point& point);
// "[sim] ring N=4 k=2": for progress lines.
std::string point_label(const Point& point);

// A unit of work for the parallel evaluator: one request through one executor.
struct Job {
  models::PredictRequest request;
  const models::Executor* executor = nullptr;
  models::ExecutorSettings settings;
  std::string label;  // shown in progress lines
};

struct Outcome {
  std::optional<models::ResultRecord> record;
  std::string error;  // why the point could not be evaluated (an InputError's message)
};

// Evaluates jobs[i] for every i in `indices` on `workers` processes (1: in this process;
// more: forked children, each taking every workers-th index, sending its records back
// through a pipe). `on_result` runs in this process, in completion order. Errors that
// are not InputErrors stop the sweep (the children are ended) and are rethrown.
using OnResult = std::function<void(std::size_t index, const Outcome& outcome)>;
void evaluate_jobs(const std::vector<Job>& jobs, const std::vector<std::size_t>& indices, int workers,
                   const OnResult& on_result);

// Convenience: every job, results in job order.
std::vector<Outcome> evaluate_all(const std::vector<Job>& jobs, int workers, bool progress);

using models::Progress;  // models/support/progress.h

using models::record_from_json;  // models/executors/result.h

// Sweep result-file lines (see the top of this file).
std::string sweep_csv_header();
std::string sweep_line(const models::ResultRecord& r, std::size_t index, const std::string& key, const std::string& format);

// One record read back from a sweep result file.
struct StoredRecord {
  std::size_t index = 0;
  std::string key;
  std::string text;  // the line (CSV: the row), without the trailing newline
  int line = 0;
};
// Reads a sweep result file ("json" or "csv"); InputError naming the file and line on
// anything a sweep did not write.
std::vector<StoredRecord> read_sweep_file(const std::string& path, const std::string& format);
// The same record with another point_index.
std::string with_index(const StoredRecord& r, std::size_t index, const std::string& format);

// OMPI_COMM_WORLD_SIZE / OMPI_COMM_WORLD_RANK from the environment (1 / 0 when absent).
struct MpiRank {
  int size = 1;
  int rank = 0;
};
MpiRank mpi_rank_from_environment();
// Which of `size` ranks computes point `index`: points are dealt in rounds of `size`, every
// other round in reverse (ranks 0,1,2, 2,1,0, 0,1,2, ...), so that points that alternate in
// cost (an analytic point, then its simulated twin) split evenly between the ranks.
int rank_of_point(std::size_t index, int size);
// The point of round `round` that rank `rank` computes.
std::size_t point_of_rank(std::size_t round, int rank, int size);

// gradsync sweep --merge OUT: OUT.rank0 .. OUT.rank<n-1> -> OUT in point order; the rank
// files are deleted. Returns the number of records.
std::size_t merge_rank_files(const std::string& output, const std::string& format, std::ostream& log);

}  // namespace gradsync::experiments
