// Running a shell command from the front end (mpirun under the testbed) and capturing it.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace gradsync::experiments {

struct ShellResult {
  int status = -1;
  std::string out;
};

inline ShellResult run_shell(const std::string& command) {
  ShellResult r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  const int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

}  // namespace gradsync::experiments
