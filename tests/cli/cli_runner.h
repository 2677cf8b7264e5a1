// Runs the gradsync binary as a user would and captures what it prints.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

struct CliResult {
  int status = -1;
  std::string out;  // stdout and stderr, interleaved
};

inline CliResult run_cli(const std::string& args, bool with_stderr = true) {
  const std::string command = std::string(GRADSYNC_BIN) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  CliResult r;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

// Writes `text` to a fresh file under the test's temporary folder and returns its path.
std::string temp_file(const std::string& name, const std::string& text);
