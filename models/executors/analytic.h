// The analytic executor: walks a schedule on the topology, round by round. In a round,
// every transfer costs its route's latency plus its bytes over the bandwidth it gets
// while the round's other transfers share the links (contention.h); local work
// (reductions, copies, kernels, encoding) costs bytes × the participant's reduction time
// per byte, plus explicit compute. A round lasts its slowest transfer plus its busiest
// participant's local work (rounds are lockstep). The per-phase breakdown adds each
// round's transfer time to its phase and its local time to its compute phase.
//
// Asynchronous schedules (Downpour/ASGD) describe one worker's exchange with the
// server; workers do not wait for each other. The steady state is then bounded either
// by a worker (period × compute + its exchange alone) or by the server's links (every
// worker's exchange through them, back to back).
#pragma once

#include <string>
#include <vector>

#include "models/strategies/formulas.h"
#include "models/schedule/schedule.h"
#include "models/topology/topology.h"

namespace gradsync::models {

// A link (one direction) and the time it bounded the schedule: in each round, the slowest
// transfer's narrowest share is on one link; the round's transfer time goes to it.
struct BoundingLink {
  std::size_t link = 0;  // index into Topology::links()
  bool forward = true;  // from the link's a to its b
  double seconds = 0;
};

struct AnalyticResult {
  double sync_s = 0;  // one synchronisation (for async: a worker's effective exchange, waiting included)
  std::vector<formulas::Phase> phases;
  double iteration_s = 0;  // compute + sync / period, or the async steady state per step
  std::string bound;  // async only: "workers" or "server links"
  std::vector<BoundingLink> bounding_links;  // most time first
  // The time no link bounded: the slowest transfer went at the rate its engine moves it at
  // (Op::max_Bps: NCCL's channels, GPU threads copying through host memory), under the links'.
  double engine_bound_s = 0;
  // The time the slowest transfer was a copy staged through host memory between GPUs without
  // peer access (Topology::staged_copy_Bps), no link bounding it.
  double staged_bound_s = 0;
};

// "swA -> root (4.46 GB/s)"
std::string describe_link(const Topology& topology, const BoundingLink& link);

// `costs[p]`: participant p's local work costs; `compute_s_per_step`: the
// workload's compute per minibatch (0 without a workload). A round declared equal in cost
// to an earlier one (Round::same_as) is not walked again: it costs what that one did.
// `each_round`: walk every round anyway (the reference the shortcut is tested against).
// `threads`: how many threads price the rounds not taken from others (each round on its own,
// then summed in order: the same result however many); 0: one, or every core for a walk of
// 200,000 participant-rounds and more (the 8,192-GPU cluster's NVLS trees).
AnalyticResult run_analytic(const Topology& topology, const Schedule& schedule,
                            const std::vector<LocalCosts>& costs, double compute_s_per_step, bool each_round = false,
                            int threads = 0);

}  // namespace gradsync::models
