#pragma once

#include "models/schedule/schedule.h"
#include "models/strategies/nccl/plan.h"
#include "models/strategies/strategy_context.h"

namespace gradsync::models::nccl {

// aws-ofi-nccl's RDMA protocol (EFA) drives the adapters beside a GPU as one NCCL device and
// stripes each message of a connection over them, a rail each (nccl_ofi_rdma.cpp at 2daf7d30).
// The schedule's transfers that leave or enter a host by such a device (Op::via naming its first
// adapter) are cut into one piece a rail, every piece through its own adapters and each at its
// share of the transfer's cap, so the device moves what its rails together carry. Elsewhere
// (devices of one NIC) nothing changes. Point-to-point work between hosts, which names no
// NICs, leaves and enters by the devices beside the receiving rank's place on each host (PXN: the
// peer's rail), striped alike.
void stripe_over_rails(Schedule& s, const StrategyContext& ctx, const Plan& plan);

}  // namespace gradsync::models::nccl
