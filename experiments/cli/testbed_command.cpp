// gradsync testbed: build, inspect and remove the emulated cluster (runtime/testbed).
#include <iostream>
#include <memory>

#include "experiments/cli/commands.h"
#include "runtime/cli_flags.h"
#include "experiments/inputs.h"
#include "models/support/error.h"
#include "models/topology/placement.h"
#include "models/support/units.h"
#include "runtime/testbed/testbed.h"

namespace gradsync::experiments::cli {

namespace {
struct TestbedOptions {
  std::string topology;
  double scale = 0.01;
  int np = 0;
  std::string nodes;
};
}  // namespace

Action add_testbed(CLI::App& app) {
  auto o = std::make_shared<TestbedOptions>();
  auto* cmd = app.add_subcommand("testbed", "Emulated cluster: network namespaces, bridges and tc-shaped links (needs root)");
  cmd->require_subcommand(1);
  cmd->footer(
      "Examples:\n"
      "  gradsync testbed up source-a-titanx-4gpu --scale 0.01   # 5.96 GB/s links become 59.6 MB/s\n"
      "  $(gradsync testbed mpirun -n 4) build/bin/gradsync-run --strategy ring --check\n"
      "  gradsync testbed down");
  auto* up = cmd->add_subcommand("up", "Build the testbed of a topology (a tree of switches)");
  up->add_option("topology", o->topology, "topology file or shipped name")->required();
  up->add_option("--scale", o->scale, "multiply every bandwidth by this (two cores cannot move GB/s)")->default_val(0.01);
  auto* down = cmd->add_subcommand("down", "Remove the testbed (everything up made, and leftovers of a crash)");
  auto* status = cmd->add_subcommand("status", "Show the running testbed");
  auto* mpirun = cmd->add_subcommand("mpirun", "Print the mpirun command prefix that runs processes in the testbed's namespaces");
  mpirun->add_option("-n,--np", o->np, "processes (one per endpoint, in topology order)")->check(integer_in(1, 65536));
  mpirun->add_option("--nodes", o->nodes, "endpoints to run on, e.g. gpu0,gpu2 (instead of -np)");
  return [=] {
    if (up->parsed()) {
      const auto loaded = load_topology_arg(o->topology);
      const auto plan = testbed::plan_testbed(loaded.topology, o->scale);
      testbed::testbed_up(plan);
      std::cout << "testbed " << plan.name << " is up: " << plan.endpoints.size() << " endpoints, " << plan.up.size()
                << " commands\n";
      for (const auto& e : plan.endpoints) std::cout << "  " << e.node << "  namespace " << e.netns << "  data " << e.data_ip << "  mgmt " << e.mgmt_ip << "\n";
      for (const auto& n : plan.notes) std::cout << "note: " << n << "\n";
      std::cout << "run in it with: $(gradsync testbed mpirun -n N) PROGRAM ...; remove it with: gradsync testbed down\n";
    } else if (down->parsed()) {
      if (!testbed::running_as_root()) throw models::InputError("testbed down: needs root");
      const auto removed = testbed::testbed_down();
      std::cout << "removed " << removed.size() << " objects" << (removed.empty() ? " (no testbed was up)" : "") << "\n";
    } else if (status->parsed()) {
      const auto state = testbed::testbed_state();
      if (state.empty()) {
        std::cout << "no testbed is up\n";
      } else {
        std::cout << state.dump(2) << "\n";
      }
    } else if (mpirun->parsed()) {
      std::vector<std::string> nodes;
      if (!o->nodes.empty()) nodes = models::split_list(o->nodes, "--nodes");
      if (nodes.empty() && o->np == 0) throw models::InputError("testbed mpirun: give -n N or --nodes");
      std::cout << models::join(testbed::testbed_mpirun(o->np, nodes), " ") << "\n";
    }
    return 0;
  };
}

}  // namespace gradsync::experiments::cli
