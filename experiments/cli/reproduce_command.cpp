// gradsync reproduce: the source papers' figures next to what the models predict.
#include <iostream>
#include <memory>

#include "experiments/cli/commands.h"
#include "experiments/reproduce/common.h"

namespace gradsync::experiments::cli {

namespace {
struct ReproduceOptions {
  std::string which;
  reproduce::Options options;
};

int run_reproduce(const ReproduceOptions& o) {
  const bool all = o.which == "all";
  if (all || o.which == "source-a") reproduce::source_a(o.options, std::cout);
  if (all) std::cout << "\n";
  if (all || o.which == "source-b") reproduce::source_b(o.options, std::cout);
  if (all) std::cout << "\n";
  if (all || o.which == "source-c") reproduce::source_c(o.options, std::cout);
  if (o.which == "convergence") reproduce::convergence(o.options, std::cout);
  if (o.which == "convergence-scaling") reproduce::convergence_scaling(o.options, std::cout);
  return 0;
}
}  // namespace

Action add_reproduce(CLI::App& app) {
  auto o = std::make_shared<ReproduceOptions>();
  auto* cmd = app.add_subcommand("reproduce", "Reproduce the source papers' figures and compare them with the models");
  cmd->footer(
      "source-a  Table 4 epoch times (fit: compute and effective bytes from the two 1-GPU rows, 2-4 GPUs predicted),\n"
      "          RNN LM savings, GPU pairs 0-1 vs 0-2, vocabulary trend\n"
      "source-b  PS, ring, hierarchical, PS-HRA vs link latency and number of workers (formula, analytic, sim),\n"
      "          growth rates and the paper's claims checked\n"
      "source-c  sync SGD speed-up on 8 GPUs over InfiniBand and 10 GbE vs 4x / 2.56x; MA and BMUF period T\n"
      "convergence  sources C and D's convergence claims (model averaging's learning rate, BMUF, 1-bit SGD with and\n"
      "          without error feedback and warm start, 8x the batch) and source A's sampling on the language model, on\n"
      "          real training: gradsync-train under a local mpirun, 4 ranks, samples to a target test loss; writes\n"
      "          DIR/digits-mlp.json and DIR/text-lm.json, the two models as workloads carrying what was measured\n"
      "          (about six minutes; not part of all, which only predicts)\n"
      "convergence-scaling  source C's 3x / 5x / 9x shape: model averaging (T=8, lr x N) on 2, 4, 8 and 16 workers\n"
      "          trained to the one worker's target, the speed-up to target each can give (about a minute)\n"
      "Each writes DIR/<source>.jsonl and .csv (records with a \"reproduce\" tag), DIR/<source>-comparison.json\n"
      "(paper vs model, fit inputs) and DIR/<source>.txt (the printed report). Plot them with scripts/plots.sh.\n"
      "Examples:\n"
      "  gradsync reproduce all -j 2\n"
      "  gradsync reproduce source-a -o out/a --quick\n"
      "  gradsync reproduce convergence\n"
      "  gradsync reproduce convergence-scaling -o out/convergence");
  cmd->add_option("which", o->which, "source-a, source-b, source-c, all (the three), convergence or convergence-scaling")
      ->required()
      ->check(CLI::IsMember({"source-a", "source-b", "source-c", "all", "convergence", "convergence-scaling"}));
  cmd->add_option("--output,-o", o->options.out_dir, "folder for the result files")->default_str("out/reproduce");
  cmd->add_option("-j,--jobs", o->options.jobs, "local worker processes (default 1)")->check(CLI::Range(1, 256));
  cmd->add_flag("--quick", o->options.quick,
                "fewer points (for tests): fewer latencies, workers, vocabularies, periods; convergence: 6 epochs, not 10; convergence-scaling: 2 and 8 workers");
  return [o] { return run_reproduce(*o); };
}

}  // namespace gradsync::experiments::cli
