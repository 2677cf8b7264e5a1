// NCCL's all-reduce on one host of PCIe or point-to-point NVLink, hop by hop (per_hop.cpp says
// where each rule and constant comes from): the protocol, channels and transport (P2P, SHM) of
// each hop of the ring or the chain, as NCCL 2.30.7 chooses them, priced on the topology's rates.
// Hosts with an NVSwitch, and clusters, go to NCCL's planner instead (plan.h, planned.h).
#pragma once

#include "models/schedule/schedule.h"
#include "models/strategies/strategy_context.h"

namespace gradsync::models::strategies::nccl_strategy {

// Launching the kernels: the cost per GPU a host thread drives (launch_us), times the GPUs it
// drives (gpus_per_thread). The planner's predictions add it too.
double launch_seconds(const StrategyContext& ctx);

// NCCL's time for its choice of algorithm, protocol and channels (resolved into ctx), with the
// tree's pipeline fill as the schedule has it: the closed form.
double per_hop_seconds(const StrategyContext& ctx);

// The same choice as a schedule every executor runs: each hop's transfers as its transport and
// the protocol move them, the reduction fused into the copy.
Schedule per_hop_schedule(const StrategyContext& ctx);

}  // namespace gradsync::models::strategies::nccl_strategy
