// gradsync validate: predictions and simulations checked against real runs on the
// emulated cluster.
#include <memory>

#include "experiments/cli/commands.h"
#include "runtime/backends/catalogue.h"
#include "runtime/cli_flags.h"
#include "experiments/experiment.h"
#include "experiments/table.h"
#include "experiments/validate.h"
#include "models/topology/placement.h"
#include "models/support/units.h"
#include "models/workload/workload.h"

namespace gradsync::experiments::cli {

namespace {
struct ValidateFlags {
  ValidateOptions o;
  std::string strategies, gpus, sizes, workloads;
  bool overlap = false;
  std::string bucket_cap = "25MiB", first_bucket = "1MiB";
};
}  // namespace

Action add_validate(CLI::App& app) {
  auto f = std::make_shared<ValidateFlags>();
  auto* cmd = app.add_subcommand("validate", "Measure the emulated cluster (root) or, with --here, this machine's own "
                                             "devices; predict, simulate, run for real, and compare");
  cmd->footer(
      "Builds the testbed of the topology (gradsync testbed up), measures it with gradsync-run measure, predicts and\n"
      "simulates every strategy x GPUs x size on the measured topology, runs each for real with --check under mpirun\n"
      "in the testbed's namespaces, prints measured vs predicted with the errors, and removes the testbed.\n"
      "With --here there is no testbed: this machine's own devices are measured and run under a local mpirun (or\n"
      "the hosts of --hostfile): GPUs with --backend nccl or mpi_cuda, host ranks with mpi_host (the default without\n"
      "a GPU); --gpus counts ranks (default 2,4).\n"
      "A synchronous server runs on rank 0's process (server=rank0). With several strategies, the fastest at each\n"
      "GPU count and size is named, measured and by each model.\n"
      "Examples:\n"
      "  gradsync validate --gpus 2,4 --strategies ring,ps --sizes 1MiB,4MiB\n"
      "  gradsync validate --topology source-a-titanx-4gpu --gpus 4 --sizes 4MiB --strategies ring,hierarchical:k=2\n"
      "  gradsync validate --here --gpus 2,4 --strategies ring,ps --sizes 1MiB     # host ranks of this machine\n"
      "  gradsync validate --here --gpus 2,4 --strategies ring,ps --workloads resnet50 --workload-scale 0.1 --overlap\n"
      "  gradsync validate --to-target --topology source-a-titanx-4gpu --gpus 2,4   # real training to digits-mlp's target");
  cmd->add_option("--topology,-t", f->o.topology, "a tree topology to emulate (file or shipped name)")->default_val("pcie-8gpu-2switch");
  cmd->add_option("--scale", f->o.scale, "bandwidth scale of the testbed (two cores cannot move GB/s)")
      ->check(number_in(0, 1e6, true))
      ->default_val(0.002);
  cmd->add_option("--strategies", f->strategies,
                  "strategies, each optionally with parameters: ring,hierarchical:k=2,sampled:inner=ring:rates=auto "
                  "(default: every strategy that needs no workload: " + models::join(default_strategy_items(), ",") + ")");
  cmd->add_option("--gpus,-g", f->gpus, "GPU counts (default: 2,4,8)");
  cmd->add_option("--sizes,-s", f->sizes, "sizes (default: 1MiB,4MiB)");
  auto* workloads = cmd->add_option("--workloads,-w", f->workloads,
                                    "instead of sizes: the training step of these workloads (presets or files), predicted and "
                                    "run for real (gradsync-run --workload); compared: the step's time");
  workloads->excludes(cmd->get_option("--sizes"));
  cmd->add_option("--workload-scale", f->o.workload_scale,
                  "with --workloads: shrink them (the same layers, fewer bytes and less compute; the bucket sizes alike) "
                  "for slow links. On the testbed the compute also runs 1/--scale slower, like the links")
      ->check(number_in(1e-6, 1))
      ->needs(workloads);
  auto* overlap = cmd->add_flag("--overlap", f->overlap, "with --workloads: the gradient's buckets beside the backward pass")->needs(workloads);
  cmd->add_option("--bucket-cap", f->bucket_cap, "with --overlap: a bucket is full at this many bytes (of the full-size workload)")->default_str("25MiB")->needs(overlap);
  cmd->add_option("--first-bucket", f->first_bucket, "with --overlap: the first bucket is full at this many bytes")
      ->default_str("1MiB")
      ->needs(overlap);
  cmd->add_option("--compute-work", f->o.compute_work,
                  "with --workloads: the real step's compute, busy (spinning) or sleep (default: busy for host ranks "
                  "with --here, sleep for the testbed's emulated GPUs)")
      ->check(CLI::IsMember({"busy", "sleep"}))
      ->needs(workloads);
  cmd->add_option("-n,--iters", f->o.iterations, "timed iterations of each real run")->default_val(4)->check(integer_in(1, 1000000));
  cmd->add_option("--measure-size", f->o.measure_size,
                  "probe size of the measurement (default: the runs' typical message, a ring step's size / GPUs, the "
                  "upper median over the points, at least 64 KiB)");
  cmd->add_option("-o,--output", f->o.output_dir, "folder for measured.json and validation.jsonl/.csv")->default_val("out/validate");
  cmd->add_flag("--keep-testbed", f->o.keep_testbed, "leave the testbed up afterwards");
  cmd->add_flag("--reuse-testbed", f->o.reuse_testbed, "measure and run on the testbed that is up (and leave it)");
  cmd->add_flag("--here", f->o.here, "no testbed: measure and run on this machine's own devices (GPUs or host ranks)");
  cmd->add_option("--backend", f->o.backend, "with --here: " + runtime::backends_help() + " (default: nccl when nvidia-smi "
                                             "lists a GPU for each rank, mpi_cuda when fewer, else mpi_host)")
      ->check(runtime::cli::one_of(runtime::backend_names()));
  auto* to_target = cmd->add_flag("--to-target", f->o.to_target,
                                  "train for real to the target of --target-workload's convergence facts (gradsync-train) and "
                                  "compare the time to it with the prediction (default strategies: ring, model_avg:T=8, "
                                  "bmuf:T=8, onebit; GPUs 2,4)");
  to_target->excludes(workloads);
  cmd->add_option("--target-workload", f->o.target_workload,
                  "with --to-target: the workload whose convergence facts predict (gradsync-train's task: digits-mlp, or "
                  "the digits-mlp.json of gradsync reproduce convergence)")
      ->default_val("digits-mlp")
      ->needs(to_target);
  cmd->add_option("--hostfile", f->o.hostfile, "with --here: an mpirun hostfile (several nodes)")->check(CLI::ExistingFile);
  return [f] {
    ValidateOptions o = f->o;
    if (!f->strategies.empty()) {
      o.strategies = models::split_list(f->strategies, "--strategies");
      for (const auto& s : o.strategies) parse_strategy_item(s);
    }
    if (!f->gpus.empty()) {
      o.gpus = parse_gpu_counts(f->gpus);
    } else if (o.here || o.to_target) {
      o.gpus = {2, 4};
    }
    if (o.to_target) (void)models::load_workload(o.target_workload);  // before the testbed is built
    if (!f->sizes.empty()) {
      o.sizes.clear();
      for (const auto& s : models::split_list(f->sizes, "--sizes")) o.sizes.push_back(models::parse_bytes(s, "--sizes"));
    }
    if (!f->workloads.empty()) {
      o.workloads = models::split_list(f->workloads, "--workloads");
      for (const auto& w : o.workloads) (void)models::load_workload(w);  // before the testbed is built
    }
    if (f->overlap) {
      models::OverlapSettings s;
      s.bucket_cap_bytes = models::parse_bytes(f->bucket_cap, "--bucket-cap");
      s.first_bucket_bytes = models::parse_bytes(f->first_bucket, "--first-bucket");
      o.overlap = s;
    }
    if (!o.measure_size.empty()) models::parse_bytes(o.measure_size, "--measure-size");  // before the testbed is built
    run_validation(o);
    return 0;
  };
}

}  // namespace gradsync::experiments::cli
