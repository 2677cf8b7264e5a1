// gradsync validate: the loop this tool exists for, on the emulated cluster — or, with
// --here, on this machine's own devices (GPUs or host ranks) with no testbed. Build the
// testbed of a topology (not --here), measure it (gradsync-run measure), build the topology
// from the measurement, predict every point with every predicting executor (models/executors/executor.h), run the same
// strategies for real (gradsync-run under mpirun in the testbed's namespaces), and report
// predicted vs measured with the error of each executor.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/executors/result.h"
#include "models/topology/topology.h"
#include "models/workload/step.h"

namespace gradsync::experiments {

// A --strategies item: a strategy name, optionally with parameters, "hierarchical:k=2:grouping=order".
struct StrategyItem {
  std::string name;
  std::vector<std::string> params;  // key=value
};
// Checks the name and each parameter against the strategy (InputError naming the item).
StrategyItem parse_strategy_item(const std::string& item);

// The probe size validate measures with when none is given: the runs' typical message, a
// ring step's size / GPUs, the upper median over the points (at least 64 KiB), in bytes.
// Links over TCP keep a share of their bandwidth both ways at once that moves with the
// message size (on the emulated source-A machine 0.76-1.02 between 256 KiB and 4 MiB).
std::uint64_t default_measure_size(const std::vector<double>& sizes, const std::vector<int>& gpus);

// The folder of the running executable (gradsync's companions, gradsync-run and gradsync-train, sit
// beside it); "." when it cannot be read.
std::string self_dir();
// mpirun on this machine (or the hosts of a hostfile): n ranks; many ranks on few cores
// must yield while they wait and not be bound to one core.
std::vector<std::string> local_mpirun(int n, const std::string& hostfile = "");
// What mpirun's environment needs here (Open MPI refuses root without it).
std::vector<std::string> mpirun_environment();

struct ValidateOptions {
  std::string topology = "pcie-8gpu-2switch";
  double scale = 0.002;
  std::vector<std::string> strategies;  // items; empty: every strategy that needs no workload (default_strategy_items())
  std::vector<int> gpus = {2, 4, 8};
  std::vector<double> sizes = {1 << 20, 4 << 20};
  // Instead of sizes: training steps of these workloads (presets or files), scaled by
  // workload_scale (on the testbed their compute also slowed by 1/scale, like its links), their
  // buckets (overlap's sizes scaled by workload_scale too) beside the backward pass with overlap;
  // the times compared are the steps' (iterations).
  std::vector<std::string> workloads;
  double workload_scale = 1;
  std::optional<models::OverlapSettings> overlap;
  std::string compute_work;  // busy or sleep; empty: busy for host ranks (--here, mpi_host), else sleep
  int iterations = 4;
  std::string measure_size;  // probe size; empty: default_measure_size's
  int measure_iterations = 3;
  std::string output_dir = "out/validate";
  bool keep_testbed = false;
  bool reuse_testbed = false;  // measure and run on the testbed that is up
  std::string run_binary;  // gradsync-run (default: next to gradsync)
  // --here: no testbed; this machine's own devices (GPUs, or host ranks) under a local
  // mpirun, or the hosts of an mpirun hostfile.
  bool here = false;
  std::string backend;   // --here: mpi_host, mpi_cuda or nccl; empty: nccl when nvidia-smi lists a GPU, else mpi_host
  std::string hostfile;  // --here: mpirun --hostfile
  // --to-target: real training (gradsync-train) to the target of this workload's convergence facts
  // (gradsync-train's task: target "test loss X"), each run's time to it against the time the facts
  // and the analytic model predict on the measured topology; strategies and GPU counts as above.
  bool to_target = false;
  std::string target_workload = "digits-mlp";
};

struct ValidationPoint {
  std::string strategy;  // the item as given
  int ranks = 0;
  double bytes = 0;
  std::string workload;  // a training step's (its iteration is what is compared); empty: a size
  double measured_s = 0;  // the measuring executor's (the real run)
  std::uint64_t wrong = 0;  // elements the real run got wrong (its own check)
  std::map<std::string, double> predicted_s;  // executor -> time; absent: that executor cannot time the strategy
};

// predicted / measured - 1 as "+12.3 %" ("-" where either is not a time).
std::string percent(double predicted, double measured);

// Parameters that place the schedule as gradsync-run does: a synchronous server runs on
// rank 0's process, so the models put it on rank 0's endpoint too.
std::vector<std::string> params_for(const StrategyItem& item);

// Every strategy that needs no workload (validate runs sizes), in listing order.
std::vector<std::string> default_strategy_items();

// Runs everything, prints progress and the table, writes OUTPUT_DIR/{measured.json,
// validation.jsonl, validation.csv}; returns the points. With to_target, validate_to_target's.
std::vector<ValidationPoint> run_validation(const ValidateOptions& options);

// The target of gradsync-train's task as a workload's convergence facts state it ("test loss X"):
// X; InputError naming the workload where they state no such target.
double target_test_loss(const models::Workload& w, const std::string& name);

// --to-target after the measurement: each strategy and GPU count trained for real to the target
// (launcher(n): the mpirun of n ranks), its training time to it against the prediction on the
// topology that n ranks measured (measured_for(n): its file, measuring it where not yet done);
// writes OUTPUT_DIR/validation-to-target.jsonl. A point's measured_s and predicted_s["analytic"]
// are times to target.
std::vector<ValidationPoint> validate_to_target(const ValidateOptions& options, const std::function<std::string(int)>& measured_for,
                                                const std::string& where, const std::string& spread_line,
                                                const std::function<std::vector<std::string>(int)>& launcher);

}  // namespace gradsync::experiments
