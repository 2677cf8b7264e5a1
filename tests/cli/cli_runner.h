// Runs the gradsync binary as a user would and captures what it prints.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "support/run_command.h"

using CliResult = CommandResult;

// `gradsync` with the words of `args` (arguments without spaces), or with `args` as given.
inline CliResult run_cli(const std::string& args, bool with_stderr = true) {
  return run_command(command(GRADSYNC_BIN, args), with_stderr);
}
inline CliResult run_cli(std::vector<std::string> args, bool with_stderr = true) {
  args.insert(args.begin(), GRADSYNC_BIN);
  return run_command(args, with_stderr);
}

// Writes `text` to a fresh file under the test's temporary folder and returns its path.
std::string temp_file(const std::string& name, const std::string& text);

// A file's whole text ("" when it cannot be read).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
