// gradsync simulate: the strategies' schedules run by SimGrid actors on the topology,
// for one synchronisation and for a training loop (compute, stragglers, asynchronous
// servers), with an optional Chrome-trace timeline.
#include <algorithm>
#include <memory>

#include "experiments/cli/commands.h"
#include "runtime/cli_flags.h"
#include "experiments/cli/selection.h"
#include "models/support/error.h"
#include "models/topology/placement.h"
#include "sim/simulator.h"

namespace gradsync::experiments::cli {

namespace {
struct SimulateOptions {
  SelectionOptions selection;
  int iterations = 0;
  std::string network_model = "CM02";
  double latency_factor = 0, bandwidth_factor = 0;
  std::string speeds;
  double jitter = 0;
  std::uint64_t seed = 1;
  std::vector<std::string> executors;
};

int run_simulate(const SimulateOptions& o) {
  Experiment e;
  if (!o.selection.experiment.empty()) {
    const auto& s = o.selection;
    if (!s.topology.empty() || !s.workload.empty() || !s.size.empty() || !s.strategies.empty() || !s.params.empty() ||
        !s.gpus.empty() || !s.ranks.empty() || s.overlap) {
      throw models::InputError(s.experiment + ": an experiment file says what to run; expected no --topology, --workload, "
                               "--size, --strategy, --param, --gpus, --ranks or --overlap with it");
    }
    e = load_experiment(o.selection.experiment);
    if (e.executors.empty()) e.executors = {sim::executor().name()};
  } else {
    // The simulator, and beside it the executors -x names, in the registry's order.
    std::vector<std::string> executors;
    for (const std::string& name : models::executor_names()) {
      if (name == sim::executor().name() || std::find(o.executors.begin(), o.executors.end(), name) != o.executors.end()) {
        executors.push_back(name);
      }
    }
    e = experiment_from_flags(o.selection, executors);
    e.sim.network_model = o.network_model;
    if (o.iterations > 0) e.sim.iterations = o.iterations;
    if (o.latency_factor > 0) e.sim.latency_factor = o.latency_factor;
    if (o.bandwidth_factor > 0) e.sim.bandwidth_factor = o.bandwidth_factor;
    if (!o.speeds.empty()) {
      for (const auto& item : models::split_list(o.speeds, "--speeds")) {
        char* end = nullptr;
        const double v = std::strtod(item.c_str(), &end);
        if (*end != '\0' || !(v > 0)) throw models::InputError("--speeds \"" + o.speeds + "\": \"" + item + "\" is not a positive speed");
        if (!(v >= 1e-3 && v <= 1e3)) {
          throw models::InputError("--speeds \"" + o.speeds + "\": \"" + item + "\" is out of range; expected relative speeds between 0.001 and 1000");
        }
        e.sim.speeds.push_back(v);
      }
    }
    e.sim.jitter_cv = o.jitter;
    e.sim.seed = o.seed;
  }
  return run_plan(make_plan(e), o.selection, "simulate");
}
}  // namespace

Action add_simulate(CLI::App& app) {
  auto o = std::make_shared<SimulateOptions>();
  auto* cmd = app.add_subcommand("simulate", "Simulate strategies with SimGrid: one synchronisation and a training loop");
  cmd->footer(
      "The network model CM02 takes bandwidths and latencies as given (a lone transfer costs latency + size /\n"
      "bandwidth, as in the analytic model); LV08 is SimGrid's default TCP model (latency x 13.01, bandwidth x 0.97);\n"
      "--latency-factor / --bandwidth-factor override either (e.g. factors calibrated from a measured run).\n"
      "Examples:\n"
      "  gradsync simulate                                  # source-A machine, FFNN LM, every strategy\n"
      "  gradsync simulate --strategy ring,hierarchical --gpus 4 --trace ring.json\n"
      "  gradsync simulate --strategy downpour --speeds 1,1,1,0.5 --jitter 0.1 --seed 7\n"
      "  gradsync simulate experiments/specs/source-a-simulate.json");
  cmd->add_option("experiment", o->selection.experiment, "an experiment JSON file (instead of the flags below)")
      ->check(CLI::ExistingFile);
  add_selection_options(cmd, o->selection);
  add_overlap_options(cmd, o->selection);
  cmd->add_option("--iterations,-n", o->iterations, "training steps to simulate (default: two synchronisations, at least 10)")
      ->check(integer_in(1, 1000000));
  cmd->add_option("--network-model", o->network_model, "CM02 or LV08")->check(CLI::IsMember({"CM02", "LV08"}))->default_val("CM02");
  cmd->add_option("--latency-factor", o->latency_factor, "multiply every latency by this")->check(number_in(1e-6, 1e6));
  cmd->add_option("--bandwidth-factor", o->bandwidth_factor, "multiply every bandwidth by this")->check(number_in(1e-6, 1e6));
  cmd->add_option("--speeds", o->speeds, "relative compute speed per rank, e.g. 1,1,0.5,1 (a straggler at half speed)");
  cmd->add_option("--jitter", o->jitter, "coefficient of variation of log-normal noise on every compute step")
      ->check(number_in(0, 10));
  cmd->add_option("--seed", o->seed, "seed of the jitter")->check(integer_in(0, 9223372036854775807LL));
  cmd->add_option("--executor,-x", o->executors,
                  "also run other executors beside the simulator, comma-separated or repeated: " +
                      models::join(models::executor_names()))
      ->delimiter(',')
      ->check(runtime::cli::one_of(models::executor_names()));
  add_output_options(cmd, o->selection, true);
  return [o] { return run_simulate(*o); };
}

}  // namespace gradsync::experiments::cli
