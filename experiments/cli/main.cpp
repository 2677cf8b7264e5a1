// gradsync: how long does each gradient-synchronisation strategy take on this machine
// or cluster, which is fastest, how does it scale?
#include <cstdio>
#include <iostream>
#include <map>

#include "experiments/cli/commands.h"
#include "runtime/cli_flags.h"
#include "gradsync/config.h"
#include "models/support/error.h"

namespace {

std::string version_text() {
  std::string text = std::string("gradsync ") + GRADSYNC_VERSION + " (" + GRADSYNC_BUILD_TYPE + ")\n" +
                     "  SimGrid " + GRADSYNC_SIMGRID_VERSION + ", MPI " + GRADSYNC_MPI_VERSION + "\n" +
                     "  CUDA backend: " + (GRADSYNC_HAVE_CUDA ? std::string("built (CUDA ") + GRADSYNC_CUDA_VERSION + ")" : "not built") +
                     "\n  NCCL backend: " + (GRADSYNC_HAVE_NCCL ? "built" : "not built");
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "gradsync: predict, simulate and measure gradient synchronisation strategies (parameter server, ring, "
      "hierarchical, PS-HRA, ...) on multi-GPU topologies.\n"
      "With no flags a verb uses the source-A machine (4 x TITAN X behind two PCIe switches) and its feed-forward LM.",
      "gradsync"};
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  app.get_formatter()->column_width(34);

  std::map<std::string, gradsync::experiments::cli::Action> actions;
  using namespace gradsync::experiments::cli;
  actions["predict"] = add_predict(app);
  actions["recommend"] = add_recommend(app);
  actions["simulate"] = add_simulate(app);
  actions["import"] = add_import(app);
  actions["compare"] = add_compare(app);
  actions["calibrate"] = add_calibrate(app);
  actions["sweep"] = add_sweep(app);
  actions["reproduce"] = add_reproduce(app);
  actions["testbed"] = add_testbed(app);
  actions["validate"] = add_validate(app);
  actions["topology"] = add_topology(app);
  actions["workload"] = add_workload(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    const std::string unknown = gradsync::experiments::cli::unknown_flag_message(app);
    if (unknown.empty()) {
      app.exit(e);
    } else {
      std::cerr << "gradsync: error: " << unknown << "\n";
    }
    return 2;
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message
    return 2;
  }
  try {
    for (auto* sub : app.get_subcommands()) return actions.at(sub->get_name())();
  } catch (const gradsync::models::InputError& e) {
    std::cerr << "gradsync: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "gradsync: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
