// A rank's compute in real training (forward, backward, the optimizer's update), timed apart from
// the synchronisation: its own per step (the workload's compute per minibatch), and, over every
// rank, the slowest rank's between synchronisations, which a synchronous step waits for (ranks
// that share cores, or whose data differ, take turns and differ from step to step).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <vector>

namespace gradsync::training {

class ComputeClock {
 public:
  // Runs `work`, its time counted as compute.
  template <class Work>
  void time(Work&& work) {
    const auto start = std::chrono::steady_clock::now();
    work();
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    total_s_ += took;
    interval_s_ += took;
  }
  // One gradient computed (what the per-step figure divides by).
  void computed() { ++computed_; }
  // A step whose compute no rank waits for (one worker's warm start, alike on every rank).
  void alone() {
    interval_s_ = 0;
    interval_steps_ = 0;
  }
  // One step more before the next synchronisation.
  void step() { ++interval_steps_; }
  // The ranks synchronise now: the compute since the last synchronisation is one interval.
  void synchronising() {
    intervals_.push_back(interval_s_);
    covered_steps_ += interval_steps_;
    alone();
  }
  // Collective over `comm`: the slowest rank's intervals so far, added up on `root`. Every rank
  // has as many (their synchronisations are the same); a rank without any (asynchronous
  // workers) calls nothing.
  void reduce(MPI_Comm comm, int rank, int root) {
    if (intervals_.empty()) return;
    MPI_Reduce(rank == root ? MPI_IN_PLACE : intervals_.data(), intervals_.data(), static_cast<int>(intervals_.size()), MPI_DOUBLE,
               MPI_MAX, root, comm);
    for (double v : intervals_) slowest_s_ += v;
    intervals_.clear();
  }
  // This rank's compute per step; none before the first gradient.
  std::optional<double> per_step() const {
    if (computed_ == 0) return std::nullopt;
    return total_s_ / static_cast<double>(computed_);
  }
  std::size_t steps() const { return computed_; }
  // On the root of reduce(): the slowest rank's compute between synchronisations, per step;
  // none where nothing synchronised.
  std::optional<double> slowest_per_step() const {
    if (covered_steps_ == 0) return std::nullopt;
    return slowest_s_ / static_cast<double>(covered_steps_);
  }

 private:
  double total_s_ = 0;
  std::size_t computed_ = 0;
  double interval_s_ = 0;           // since the last synchronisation
  std::size_t interval_steps_ = 0;  // the steps that covers
  std::vector<double> intervals_;   // at each synchronisation not yet reduced
  std::size_t covered_steps_ = 0;   // the steps of the intervals so far
  double slowest_s_ = 0;            // the root's sum of the slowest rank's intervals
};

}  // namespace gradsync::training
