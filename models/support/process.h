// Other processes, without a shell: every program runs from an argument vector (posix_spawnp
// looks it up on PATH), so a path with spaces or `$(...)` in it is one argument and nothing
// else. Four uses share the forking code here:
//   - run_process / start_process: external programs (ip, tc, mpirun, gradsync-run, python);
//   - run_in_child: a function in a forked child whose result comes back as text (SimGrid
//     allows one engine per process, so every simulation runs this way);
//   - run_task_pool: tasks spread over forked worker processes (sweeps' -j N);
//   - start_guardian: a program that runs when its owner ends, however it ends (the testbed).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gradsync::models {

struct ProcessOptions {
  // Standard error: into the same capture as standard output (in the order written),
  // captured apart (ProcessResult::err), thrown away, or left to this process's.
  enum class Stderr { merge, capture, discard, inherit };
  Stderr stderr_mode = Stderr::merge;
  bool capture_stdout = true;  // false: thrown away
  std::vector<std::string> env;  // "NAME=value" set in the child's environment (added or replaced)
  double timeout_s = 0;  // > 0: killed (SIGKILL, its whole process group) after this long
  bool own_process_group = false;  // the child leads a process group of its own
};

struct ProcessResult {
  int status = -1;  // exit status; 128 + N when ended by signal N; 127 when it could not start
  bool timed_out = false;
  std::string out;  // standard output (with standard error when merged)
  std::string err;  // standard error when captured apart
};

// Runs `argv` (argv[0] looked up on PATH) and waits for it. Standard input is /dev/null.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// Every running process's pid and command line (its arguments, NUL-separated, as /proc shows
// them); a process that ends while it is being read is left out.
std::vector<std::pair<long, std::string>> process_command_lines();

// A started program that runs on its own (output to /dev/null, or inherited).
class ChildProcess {
 public:
  ChildProcess() = default;
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  ChildProcess(ChildProcess&& other) noexcept : pid_(other.pid_) { other.pid_ = -1; }
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess();  // kills (SIGKILL) and reaps a child still running
  pid_t pid() const { return pid_; }
  int wait();  // exit status, 128 + N after signal N
  // Waits at most `seconds`; nullopt (still running) when it has not ended by then.
  std::optional<int> wait_for(double seconds);
  void kill(int signal);
  void release() { pid_ = -1; }  // leave it running, unreaped

 private:
  pid_t pid_ = -1;
};

struct StartOptions {
  std::string output_file;  // standard output and error go here (created or truncated); "": /dev/null
  bool inherit_output = false;  // or to this process's own
  std::vector<std::string> env;  // "NAME=value" set in the child's environment
};
// Starts `argv` without waiting for it.
ChildProcess start_process(const std::vector<std::string>& argv, const StartOptions& options = {});

// Runs `body` in a forked child and returns the text it returned. An InputError thrown
// there is thrown here as an InputError; any other exception as std::runtime_error
// ("<what>: <message>"); a child that dies is a runtime_error naming how.
std::string run_in_child(const std::function<std::string()>& body, const std::string& what);

// What one task of a pool gave: its text, or the message of the InputError it threw.
struct TaskOutcome {
  std::string text;
  std::optional<std::string> input_error;
};

// Runs task(i) for every i in `tasks` on `workers` processes: 1 runs them here; more fork
// workers, each handed the next task when it is free. `on_done(i, outcome)` runs in this
// process, in completion order. A task that throws anything but an InputError, or a worker
// that dies, stops the pool (the other workers are ended) with a std::runtime_error naming
// `label(i)`. Texts must not contain a newline.
void run_task_pool(const std::vector<std::size_t>& tasks, int workers, const std::function<std::string(std::size_t)>& task,
                   const std::function<void(std::size_t, const TaskOutcome&)>& on_done,
                   const std::function<std::string(std::size_t)>& label);

// Starts a guardian: a process in a session of its own (a Ctrl-C to the owner's process
// group passes it by) that waits until the returned Guardian is destroyed or dismissed —
// or until this process ends, however it ends, SIGKILL included — and then runs `argv`
// (unless dismissed). The destructor waits for it to finish.
class Guardian {
 public:
  explicit Guardian(const std::vector<std::string>& argv);
  ~Guardian();
  Guardian(const Guardian&) = delete;
  Guardian& operator=(const Guardian&) = delete;
  void dismiss() { keep_ = true; }  // the guardian ends without running argv

 private:
  int pipe_ = -1;  // write end; the guardian reads the other
  pid_t pid_ = -1;
  bool keep_ = false;
};

}  // namespace gradsync::models
