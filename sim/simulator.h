// The discrete-event executor: a schedule run by SimGrid S4U actors on the platform built
// from the topology (sim/platform.h). One actor per participant executes its rounds: it
// posts the round's sends and receives (one mailbox per ordered pair, so messages match
// in FIFO order), waits for them, then does the round's local work (reductions,
// encoding, copies, kernels) as an execution. No strategy logic lives here: the schedule
// says everything.
//
// Training loops: every worker computes a step (compute time / its speed, with optional
// log-normal jitter), and synchronises after every `period_steps` steps.
//
// Asynchronous rounds (Downpour/ASGD, PS-HRA's server exchange) are served by one
// handler actor per (server, peer): the server applies each peer's push as soon as it
// arrives (one update at a time), without waiting for the others. The simulator counts
// updates and the staleness of each push (how many other updates the server applied
// since that worker last pulled).
//
// SimGrid allows one engine per process: simulate() runs each simulation in a forked
// child (models::run_in_child) and hands the result back through a pipe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "models/strategies/formulas.h"
#include "models/support/json_input.h"
#include "models/schedule/schedule.h"
#include "models/topology/topology.h"
#include "models/executors/trace.h"

namespace gradsync::models {
class Executor;
}

namespace gradsync::sim {

// The "sim" executor (models/executors/executor.h) this library registers.
const models::Executor& executor();

struct NetworkModel {
  std::string name = "CM02";  // CM02 (figures as given) or LV08 (SimGrid's default TCP model)
  std::optional<double> latency_factor;  // override the model's factor (e.g. calibrated from a run)
  std::optional<double> bandwidth_factor;
};

struct SimOptions {
  NetworkModel network;
  int steps = 1;  // training steps each worker runs
  bool sync_every_step = false;  // ignore the schedule's period: synchronise after every step
  double compute_s = 0;  // compute per step on a GPU of speed 1
  std::vector<double> speeds;  // per worker (compute time = compute_s / speed); empty: all 1
  double jitter_cv = 0;  // coefficient of variation of log-normal noise on each compute step
  std::uint64_t seed = 1;
  std::vector<models::LocalCosts> costs;  // per participant
  bool trace = false;
  // Rounds declared equal in cost (Round::same_as) that follow each other: after this many
  // of them, when every participant has started its last two rounds exactly a common period
  // apart, the rest of the run repeats that period, and each participant jumps over them
  // (the pattern is a time shift of the last round's). simulate() checks the period held
  // and, where it did not, simulates again with 8 x as many rounds before the jump, up to
  // all of them. 0: simulate every round. Not with a trace (its timeline shows every round).
  int fast_forward_after = 4;
};

struct SimResult {
  double total_s = 0;  // simulated time when the last actor finished
  int syncs = 0;  // synchronisations each worker took part in
  double first_sync_s = 0;  // from the first participant entering the first sync to the last leaving it
  std::vector<models::formulas::Phase> phases;  // of the first synchronisation
  double compute_busy_s = 0;  // mean compute time per worker
  std::uint64_t updates = 0;  // asynchronous pushes applied by servers
  std::vector<std::uint64_t> staleness_histogram;  // [s] = pushes applied with staleness s
  std::optional<models::Trace> trace;
  double wall_s = 0;  // real time the simulation took
  // Rounds each participant jumped over (summed over syncs), and whether every jump was
  // exact: each participant's last rounds before it were a common period apart.
  std::uint64_t rounds_fast_forwarded = 0;
  bool fast_forward_exact = true;
  int fast_forward_after = 0;  // the setting the result was simulated with
  double peak_rss_MB = 0;  // the simulating process's peak resident memory

  models::json to_json() const;
  static SimResult from_json(const models::json& doc);
  double mean_staleness() const;
  std::uint64_t max_staleness() const;
};

// Runs in this process (at most once per process: SimGrid's engine is a singleton).
SimResult simulate_here(const models::Topology& topology, const models::Schedule& schedule, const SimOptions& options);
// Runs in a forked child; errors in the child come back as exceptions here.
SimResult simulate(const models::Topology& topology, const models::Schedule& schedule, const SimOptions& options);

}  // namespace gradsync::sim
