// NCCL's point-to-point work as nccl-tests runs it (alltoall_perf, sendrecv_perf): in one group,
// each rank's messages to every other rank (alltoall: S/N each) or S to the next rank (sendrecv),
// all at once, each over its pair's transport and the channels NCCL gives a message
// (p2p_channels.h). The closed form, the schedule every executor runs, and the plan in words.
#pragma once

#include <string>
#include <vector>

#include "models/schedule/schedule.h"
#include "models/strategies/nccl/plan.h"
#include "models/strategies/strategy_context.h"

namespace gradsync::models::nccl {

// The time: `launch_s`, the latency, then every message at once, each at its pair's rate.
double point_to_point_seconds(const StrategyContext& ctx, const Plan& plan, double launch_s);
// The schedule; `launch_s` is charged once first.
Schedule point_to_point_schedule(const StrategyContext& ctx, const Plan& plan, double launch_s);
// What it runs, in words: protocol, latency, the pairs' transports, the channels' caps.
std::vector<std::string> describe_point_to_point(const StrategyContext& ctx, const Plan& plan);

}  // namespace gradsync::models::nccl
