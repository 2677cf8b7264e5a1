// Runs a program as a user would and captures what it prints — from an argument vector,
// never through a shell (models/support/process.h).
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "models/support/process.h"

struct CommandResult {
  int status = -1;  // exit status; 128 + N when ended by signal N
  std::string out;  // standard output, with standard error unless left out
};

// `with_stderr`: standard error goes into `out` too (in the order written), else it is
// thrown away. `timeout_s` > 0: killed after that long (status 137).
inline CommandResult run_command(const std::vector<std::string>& argv, bool with_stderr = true, double timeout_s = 0,
                                 const std::vector<std::string>& env = {}) {
  gradsync::models::ProcessOptions o;
  o.stderr_mode = with_stderr ? gradsync::models::ProcessOptions::Stderr::merge : gradsync::models::ProcessOptions::Stderr::discard;
  o.timeout_s = timeout_s;
  o.env = env;
  const auto r = gradsync::models::run_process(argv, o);
  return CommandResult{r.status, r.out};
}

// "a b  c" -> {"a", "b", "c"}: for test command lines whose arguments hold no spaces.
inline std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// `program` followed by the words of `args`.
inline std::vector<std::string> command(const std::string& program, const std::string& args) {
  std::vector<std::string> argv = {program};
  for (auto& w : words(args)) argv.push_back(std::move(w));
  return argv;
}
