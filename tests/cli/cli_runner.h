// Runs the gradsync binary as a user would and captures what it prints.
#pragma once

#include <string>

#include "support/run_command.h"

using CliResult = CommandResult;

inline CliResult run_cli(const std::string& args, bool with_stderr = true) {
  return run_command(std::string(GRADSYNC_BIN) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

// Writes `text` to a fresh file under the test's temporary folder and returns its path.
std::string temp_file(const std::string& name, const std::string& text);
