// The `gradsync` verbs. Each registers its subcommand and returns the action to run.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace gradsync::experiments::cli {

using Action = std::function<int()>;

Action add_predict(CLI::App& app);
Action add_import(CLI::App& app);
Action add_simulate(CLI::App& app);
Action add_sweep(CLI::App& app);
Action add_reproduce(CLI::App& app);
Action add_testbed(CLI::App& app);
Action add_validate(CLI::App& app);
Action add_recommend(CLI::App& app);

}  // namespace gradsync::experiments::cli
