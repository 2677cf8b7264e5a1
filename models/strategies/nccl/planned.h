// NCCL's all-reduce as its planner lays it out (plan.h), as a schedule every executor runs:
// the ring over every channel (each channel's ring the hosts' own orders joined end to end,
// NET between hosts); the tree (a chain in each host, NCCL's double binary tree between the
// hosts' heads, half the channels on each of its two trees); NVLS (every GPU sends its part to
// the NVSwitch, which reduces and multicasts the sum back); and NVLS tree (the NVSwitch's sum
// goes to a head GPU per part, which joins the double binary tree of the other hosts' heads and
// sends the total back through its switch). Each transfer moves at most its share of what
// NCCL's cost model gives the algorithm and protocol, and the latency NCCL's model charges is
// spread over the rounds; the links of the topology decide where they are slower.
#pragma once

#include <string>
#include <vector>

#include "models/schedule/schedule.h"
#include "models/strategies/nccl/plan.h"
#include "models/strategies/strategy_context.h"

namespace gradsync::models::nccl {

// The schedule of `plan` for the context's ranks and size; `launch_s` is charged once first.
Schedule planned_schedule(const StrategyContext& ctx, const Plan& plan, double launch_s);

// The time the schedule takes where no link is slower than NCCL's model (the closed form):
// launch, NCCL's latency, and the bytes at its bandwidth with a pipeline's fill.
double planned_seconds(const StrategyContext& ctx, const Plan& plan, double launch_s);

// What the plan decided, in words: algorithm, protocol, channels, heads, the hosts' paths.
std::vector<std::string> describe_plan(const StrategyContext& ctx, const Plan& plan);

// NCCL 2.4's NCCL_TREE_THRESHOLD (the tree_threshold parameter): the algorithm it fixes for an
// all-reduce of `bytes` (trees below it, rings from it), where it is set, the algorithm is not, and
// the release is 2.4 or not stated (2.5 removed it); else -1.
int tree_threshold_algorithm(const StrategyContext& ctx, Collective collective, double bytes);

}  // namespace gradsync::models::nccl
