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

// Whether an alltoall's blocks are off 16-byte alignment. NCCL's copies move 16 bytes a thread
// where every pointer is 16-byte aligned, else one element, and point-to-point work is of bytes
// (src/device/common_kernel.h, reduceCopy; enqueue.cc gives sends and receives ncclInt8): such
// blocks go a byte at a time, `bytewise_slowdown` times slower.
bool misaligned_alltoall(const StrategyContext& ctx, const Plan& plan);
// An alltoall's messages grow as the ranks squared, and so do the routes its closed form and its
// schedule price: 2,048 ranks (4.2 M messages) take about 10 s and 2.3 GB, 8,192 ranks would take
// 16 times that. Throws InputError above this many ranks, before any of it is built.
constexpr int kMostAlltoallRanks = 2048;
void check_alltoall_scale(Collective collective, int ranks);
// The time: `launch_s`, the latency, then every message at once, each at its pair's rate.
double point_to_point_seconds(const StrategyContext& ctx, const Plan& plan, double launch_s);
// The schedule; `launch_s` is charged once first.
Schedule point_to_point_schedule(const StrategyContext& ctx, const Plan& plan, double launch_s);
// What it runs, in words: protocol, latency, the pairs' transports, the channels' caps.
std::vector<std::string> describe_point_to_point(const StrategyContext& ctx, const Plan& plan);

}  // namespace gradsync::models::nccl
