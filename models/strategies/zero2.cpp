// ZeRO stage 2 (P_os+g): each rank keeps a replica of the parameters but only its shard of the
// gradients and of the optimizer state. The gradients are reduce-scattered bucket by bucket as the
// backward pass produces them (DDP's buckets, beside the rest of the backward pass); after the
// optimizer step on each shard, the parameters are all-gathered before the next forward pass.
#include "models/strategies/common.h"
#include "models/strategies/sharded.h"

namespace gradsync::models::strategies {

namespace zero2_strategy {

Strategy definition() {
  Strategy s = sharded_strategy(Sharding::gradients, 1);
  s.name = "zero2";
  s.summary = "ZeRO-2: optimizer state and gradients sharded; gradients reduce-scattered bucket by bucket beside the "
              "backward pass, parameters all-gathered";
  s.order = 101;
  s.step_plan = [](const Workload& w, const OverlapSettings& o) {
    StepPlan plan;
    const LayerTasks layers = add_layer_tasks(plan, w);
    const std::vector<Bucket> buckets = buckets_of(w, o);
    for (std::size_t k = 0; k < buckets.size(); ++k) {
      add_sync(plan, buckets[k].gradient, "reduce_scatter", "reduce-scatter of bucket " + std::to_string(k),
               {layers.backward[buckets[k].layers.back()]});
    }
    add_sync(plan, w, "all_gather", "all-gather of the updated parameters", {});
    return plan;
  };
  s.build = [](const StrategyContext& ctx) { return build_sharded(ctx, "zero2", 1); };
  return s;
}

const Registration registered(definition());

}  // namespace zero2_strategy

}  // namespace gradsync::models::strategies
