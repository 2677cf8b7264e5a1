// A rank that dies or hangs must not leave the others waiting forever. Each process keeps
// a Watchdog that knows where the rank is: a context set between timed iterations ("size
// 4194304 B, timed iteration 3/20"), the schedule round being run (set on the hot path:
// a few atomic stores, no formatting), and, once a wait has stalled for a moment, what the
// transport still waits for ("pending: receive of 1048576 B from rank 1"). Every step and
// every completed transfer counts as progress. A thread checks the time since the last
// progress; past the timeout it prints one line naming this rank, where it is and what it
// waits for, runs the abort action (ncclCommAbort where NCCL is in use, then MPI_Abort)
// and, should that not end the process within a few seconds, exits with status 3.
//
// A rank that dies is noticed by mpirun, which terminates the others: SIGTERM makes each
// of them print where it was (from texts and numbers kept ready for it, written
// async-signal-safely) before it dies with the signal's default action.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gradsync::runtime {

class Watchdog {
 public:
  // timeout_s <= 0: no timeout (positions are still kept for the SIGTERM message).
  // On timeout the message line is printed, and after a short grace (for the other stuck
  // ranks' lines) `on_timeout` runs with it; it is expected not to return.
  Watchdog(int rank, double timeout_s, std::function<void(const std::string&)> on_timeout);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // The caller's context ("size 4194304 B, timed iteration 3/20"); clears the step and
  // the round. Formats: call it outside timed code.
  void context(const std::string& text);
  // A step within the context, as a string that outlives it ("barrier before the iteration").
  void step(const char* text);
  // The schedule round being run (index from 0); `phase` must outlive the round. Cheap.
  void round(std::size_t index, std::size_t count, const std::string* phase);
  // A wait that has not completed for a while: what it still waits for. Formats.
  void stalled(const std::string& pending);
  // Something completed.
  void progress();

  // "rank 2: size 4194304 B, timed iteration 3/20, round 5/14 (reduce-scatter); pending: ..."
  std::string where() const;
  double timeout_s() const { return timeout_s_; }
  int rank() const { return rank_; }

  // The watchdog of this process (nullptr when none is installed).
  static Watchdog* current();

 private:
  std::string position() const;
  void watch();

  int rank_;
  double timeout_s_;
  std::function<void(const std::string&)> on_timeout_;
  mutable std::mutex mutex_;
  std::string context_, pending_;  // under mutex_ (step and round: process-wide atomics)
  std::atomic<std::int64_t> last_progress_ns_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

// Sets the process's watchdog for the lifetime of this object and installs the SIGTERM /
// SIGINT handler that reports where the rank was.
class WatchdogScope {
 public:
  explicit WatchdogScope(Watchdog& w);
  ~WatchdogScope();
};

// The same calls on the process's watchdog, when there is one (code without a handle on it).
void watchdog_context(const std::string& text);
void watchdog_step(const char* text);
void watchdog_round(std::size_t index, std::size_t count, const std::string* phase);
void watchdog_stalled(const std::string& pending);
void watchdog_progress();

// How long a wait may spin before it tells the watchdog what it waits for.
constexpr double kStallReportSeconds = 0.05;

}  // namespace gradsync::runtime
