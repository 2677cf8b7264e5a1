// gradsync predict: time per synchronisation, per iteration and per epoch, speed-up over
// one GPU, algbw/busbw — per strategy and GPU count, from the analytic model of each
// strategy's schedule on the topology, or from the papers' closed forms.
#include <memory>

#include "experiments/cli/commands.h"
#include "experiments/cli/selection.h"
#include "models/executors/executor.h"
#include "models/workload/workload.h"

namespace gradsync::experiments::cli {

namespace {
struct PredictOptions {
  SelectionOptions selection;
  std::string executor;
};
}  // namespace

Action add_predict(CLI::App& app) {
  auto o = std::make_shared<PredictOptions>();
  auto* cmd = app.add_subcommand("predict", "Predict the time of synchronisation strategies on a topology");
  cmd->footer(
      "Examples:\n"
      "  gradsync predict                                   # source-A machine, FFNN LM, every strategy\n"
      "  gradsync predict --gpus 1,2,3,4 --strategy ring,ps\n"
      "  gradsync predict --topology dgx1-v100-hybrid-cube-mesh --strategy hierarchical --param k=4\n"
      "  gradsync predict --topology my-cluster.json --size 256MiB --format csv -o out.csv\n"
      "  gradsync predict --strategy ring --ring-order 0,2,1,3 --executor formula\n"
      "  gradsync predict --workload resnet50 --overlap --strategy nccl -t dgx1-v100-hybrid-cube-mesh\n"
      "Strategies: " + models::join(models::strategy_names()) + ".\n"
      "Workload presets: " + models::join(models::workload_preset_names()) + ".\n"
      "Executors:\n" + executor_help());
  add_selection_options(cmd, o->selection);
  add_overlap_options(cmd, o->selection);
  cmd->add_option("--executor,-x", o->executor,
                  "how to get the time: " + models::join(models::executor_names()) +
                      " (see below; `gradsync simulate` for the simulator's settings)")
      ->check(CLI::IsMember(models::executor_names()))
      ->default_val(models::default_executor().name());
  add_output_options(cmd, o->selection, false);
  return [o] { return run_plan(make_plan(experiment_from_flags(o->selection, {o->executor})), o->selection, "predict"); };
}

}  // namespace gradsync::experiments::cli
