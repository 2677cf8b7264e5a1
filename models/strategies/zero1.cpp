// ZeRO stage 1 (P_os; DeepSpeed's default stage 1): each rank keeps a replica of the parameters
// and the gradients but only its shard of the optimizer state. After the backward pass the
// gradient is reduce-scattered (each rank gets the sum of the shard it updates), each rank updates
// its shard, and the parameters are all-gathered: as many bytes as an all-reduce, none of them
// beside the backward pass (DeepSpeed reduces after it unless overlap_comm is set).
#include "models/strategies/common.h"
#include "models/strategies/sharded.h"

namespace gradsync::models::strategies {

namespace zero1_strategy {

Strategy definition() {
  Strategy s = sharded_strategy(Sharding::optimizer_state, 1);
  s.name = "zero1";
  s.summary = "ZeRO-1: optimizer state sharded; gradients reduce-scattered after the backward pass, parameters all-gathered";
  s.order = 100;
  s.step_plan = [](const Workload& w, const OverlapSettings&) {
    StepPlan plan;
    const LayerTasks layers = add_layer_tasks(plan, w);
    std::vector<int> after_backward;
    if (!layers.backward.empty()) after_backward.push_back(layers.backward.front());  // the first layer's, done last
    add_sync(plan, w, "reduce_scatter", "reduce-scatter of the gradients", after_backward);
    add_sync(plan, w, "all_gather", "all-gather of the updated parameters", {});
    return plan;
  };
  s.build = [](const StrategyContext& ctx) { return build_sharded(ctx, "zero1", 1); };
  return s;
}

const Registration registered(definition());

}  // namespace zero1_strategy

}  // namespace gradsync::models::strategies
