// The `gradsync` verbs. Each registers its subcommand and returns the action to run.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "runtime/cli_flags.h"

namespace gradsync::experiments::cli {

using Action = std::function<int()>;
using runtime::cli::integer_in;
using runtime::cli::number_in;
using runtime::cli::unknown_flag_message;

Action add_predict(CLI::App& app);
Action add_import(CLI::App& app);
Action add_simulate(CLI::App& app);
Action add_sweep(CLI::App& app);
Action add_reproduce(CLI::App& app);
Action add_testbed(CLI::App& app);
Action add_validate(CLI::App& app);
Action add_recommend(CLI::App& app);
Action add_compare(CLI::App& app);
Action add_calibrate(CLI::App& app);
Action add_topology(CLI::App& app);
Action add_workload(CLI::App& app);

}  // namespace gradsync::experiments::cli
