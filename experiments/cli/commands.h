// The `gradsync` verbs. Each registers its subcommand and returns the action to run.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "models/cli/flag_checks.h"

namespace gradsync::experiments::cli {

using Action = std::function<int()>;
using models::cli::integer_in;
using models::cli::number_in;
using models::cli::unknown_flag_message;

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

}  // namespace gradsync::experiments::cli
