// gradsync-run --workload: the training step for real. Each rank emulates its step — the
// forward pass, then the backward pass a layer at a time, as timed work — and synchronises
// the gradient through the schedule executor on the backend: with overlap, each bucket
// (models/workload/step.h) as soon as the backward pass has produced it, on a thread of its
// own beside the rest of the backward pass, one bucket after another; without, the whole
// gradient once the compute is done. The timed work is the backend's (Memory::compute_for): on
// host ranks busy work (a core spinning for the layer's time) or a sleep; on a GPU (mpi_cuda,
// nccl) a kernel of the layer's time on a compute stream beside the transfers'.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/executors/predict.h"
#include "models/workload/step.h"
#include "runtime/backend.h"
#include "runtime/watchdog.h"

namespace gradsync::runtime {

struct StepRunOptions {
  models::Workload workload;  // as run (scaled where it was)
  std::optional<models::OverlapSettings> overlap;
  models::PredictRequest base;  // topology, strategy, params and placement; the workload is replaced per bucket
  bool busy = true;             // busy work; false: sleep
  int warmup = 1;
  int iterations = 5;
  bool check = false;
};

struct StepRunResult {
  int buckets = 0;
  // Means over the timed iterations of the slowest rank's figures.
  double iteration_s = 0;  // the step: forward, backward, and the synchronisations it waited for
  double compute_s = 0;    // the forward and backward work as it ran
  double sync_s = 0;       // the buckets' synchronisations added up
  double exposed_s = 0;    // iteration - compute
  double backward_s = 0;   // from the forward pass's end to the backward pass's, waits for parameters included
  std::uint64_t wrong = 0;  // --check: elements that differ from the exact sum, every bucket, every rank
};

// Every rank calls it (collective); the figures are the same on every rank.
StepRunResult run_training_step(const StepRunOptions& options, MPI_Comm comm, int rank, int size, Backend& backend,
                                Watchdog& watch);

// gradsync-run --workload's flags.
struct StepCommand {
  std::string workload;  // preset or file
  double scale = 1;
  bool overlap = false;
  std::string bucket_cap = "25MiB", first_bucket = "1MiB";
  std::string compute_work = "busy";
  std::string strategy;
  std::vector<std::string> params;
  std::string topology, ranks, backend, output;
  int warmup = 1, iterations = 5;
  bool check = false;
  std::vector<std::string> refused_flags;  // flags of a size sweep given beside it: refused
};

// Runs the step on every rank, prints its figures on rank 0 and writes its record (-o);
// `abort_transport` holds the transport while it runs (what the watchdog aborts). Returns the
// exit status (1 when a checked element is wrong).
int run_step_command(const StepCommand& command, MPI_Comm comm, int rank, int size, Watchdog& watch,
                     std::atomic<Transport*>& abort_transport);

}  // namespace gradsync::runtime
