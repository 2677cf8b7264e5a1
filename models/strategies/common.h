// Building blocks the strategy files share: participants, rings (reduce-scatter and
// all-gather, several rings at once), gathers to and broadcasts from one participant,
// and the parameters these blocks read. Each block appends rounds to a Schedule.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/schedule/schedule.h"
#include "models/strategies/strategy.h"
#include "models/strategies/strategy_context.h"

namespace gradsync::models::strategies {

// Parameter specs shared by the strategies that use them (one wording, domain and search
// everywhere). ring_order_param(false): declared but not searched (groups' internal rings).
ParamSpec server_param();
ParamSpec k_param();
ParamSpec grouping_param();
ParamSpec speeds_param();
ParamSpec ring_order_param(bool searched);
// A wrapper's "inner" parameter (its choices are the Strategy's `inners`).
ParamSpec inner_param(const std::string& default_inner, const std::string& help);

// "synchronises every T steps" when the record's period is above one step, else "".
std::string changes_by_period(const ResultRecord& r);

// The parameter-server exchange (gather, update, send back), shared by ps and downpour/asgd.
Schedule build_ps(const StrategyContext& ctx, const std::string& name);

// A schedule with the N workers of the placement as participants 0..N-1.
Schedule start_schedule(const std::string& strategy, const StrategyContext& ctx);
// Adds the parameter server (on ctx.server_node()) as a participant; returns its index.
int add_server(Schedule& s, const StrategyContext& ctx);

// The ranks in the ring order the "ring_order" parameter asks for (positions into the placement).
std::vector<int> ring_of_ranks(const StrategyContext& ctx);
// The k groups of ranks for hierarchical schemes ("k", "grouping", "speeds" parameters), each in ring order.
std::vector<std::vector<int>> groups_of_ranks(const StrategyContext& ctx);

// Rings of participants, all of the same length, each listed in ring order.
using Rings = std::vector<std::vector<int>>;

struct Region {
  std::uint64_t base = 0;  // byte offset in the buffer
  std::uint64_t elements = 0;
  int element_bytes = 4;
  Slice slice() const { return Slice{base, elements * static_cast<std::uint64_t>(element_bytes)}; }
};

// Source A's Algorithm 1, phase 1, on every ring at once: after it, position j of a
// ring holds the ring's sum of block (j + 1) mod m of `region`.
void add_ring_reduce_scatter(Schedule& s, const Rings& rings, Region region, const std::string& phase,
                             const std::string& compute_phase);
// Phase 2: position j starts with block (j + 1) mod m complete; afterwards all blocks are.
void add_ring_all_gather(Schedule& s, const Rings& rings, Region region, const std::string& phase);
// Ring all-reduce inside every group (each member ends with its group's sum); returns
// each group's representative (its first member) and who it would broadcast to.
struct Groups {
  std::vector<int> representatives;
  std::vector<std::pair<int, std::vector<int>>> broadcasts;
};
Groups add_group_all_reduce(Schedule& s, const Rings& groups, Region region);
// Source B's hierarchical all-reduce of `region`: a ring inside each group, a ring of the
// groups' representatives, a broadcast inside each group.
void add_hierarchical_allreduce(Schedule& s, const Rings& groups, Region region);
// Both phases.
void add_ring_allreduce(Schedule& s, const Rings& rings, Region region, const std::string& prefix = "");

// All-gather or reduce-scatter alone: one half of the ring over `ring` (participants in ring
// order), and the result each rank must hold (Schedule::expected): position j of the ring
// contributes (all-gather) or ends with the sum of (reduce-scatter) block j + 1 of `region`. A
// reduce-scatter's local reductions are reported under `compute_phase` ("": its own phase).
void add_ring_half(Schedule& s, const std::vector<int>& ring, Region region, bool reduce_scatter,
                   const std::string& compute_phase);
// That result alone, one region per block of `region` (what add_ring_half sets as Schedule::expected).
std::vector<ExpectedRegion> ring_half_expected(const std::vector<int>& ring, Region region, bool reduce_scatter);

// nccl-tests' bus bandwidth factor for the "collective" parameter among `params` (all-reduce
// when absent): for the strategies that take it.
double collective_busbw_factor(int ranks, const std::map<std::string, std::string>& params);

// Every sender sends `slice` to `root`, which adds them up (one round).
void add_gather_reduce(Schedule& s, const std::vector<int>& senders, int root, Slice slice, const std::string& phase,
                       const std::string& compute_phase);
// `root` sends `slice` to every receiver, which overwrite theirs (one round). Several roots
// may broadcast at once: pairs (root, receivers).
void add_broadcasts(Schedule& s, const std::vector<std::pair<int, std::vector<int>>>& trees, Slice slice,
                    const std::string& phase);

// A local round: every listed participant is busy for `seconds`.
void add_compute(Schedule& s, const std::vector<int>& participants, double seconds, const std::string& phase);

std::vector<int> all_workers(const Schedule& s);

// "groups: {gpu0 gpu1} {gpu2 gpu3}" for a schedule's notes.
std::string describe_groups(const StrategyContext& ctx, const Rings& groups);

// The strategy a wrapper wraps ("inner" parameter), checked against the wrapper's `inners`.
const Strategy& inner_strategy(const StrategyContext& ctx);

}  // namespace gradsync::models::strategies
