// Fully sharded data parallel (PyTorch FSDP's FULL_SHARD, ZeRO stage 3, P_os+g+p): each rank keeps
// only its shard of the parameters, gradients and optimizer state. The layers are wrapped in units
// (models/workload/step.h units_of, the bucket cap as size_based_auto_wrap_policy's minimum); a
// unit's parameters are all-gathered before its forward and again before its backward (freed in
// between), and its gradients reduce-scattered after its backward. FSDP's defaults decide the
// order: all-gathers issued ahead while at most two units are gathered (limit_all_gathers), the
// next unit's backward all-gather issued before the current unit's reduce-scatter (BACKWARD_PRE).
#include "models/strategies/common.h"
#include "models/strategies/sharded.h"

namespace gradsync::models::strategies {

namespace fsdp_strategy {

StepPlan fsdp_plan(const Workload& w, const OverlapSettings& o) {
  StepPlan plan;
  const LayerTasks layers = add_layer_tasks(plan, w);
  const std::vector<Bucket> units = units_of(w, o.bucket_cap_bytes);
  const std::size_t n = units.size();
  // A unit's first and last compute tasks in each pass (the backward pass runs its layers from the last).
  auto forward_start = [&](std::size_t u) { return layers.forward[units[u].layers.front()]; };
  auto forward_end = [&](std::size_t u) { return layers.forward[units[u].layers.back()]; };
  auto backward_start = [&](std::size_t u) { return layers.backward[units[u].layers.back()]; };
  auto backward_end = [&](std::size_t u) { return layers.backward[units[u].layers.front()]; };
  auto tag = [](const char* what, std::size_t u) { return std::string(what) + " of unit " + std::to_string(u); };
  // Forward: unit u gathered once unit u-2's forward is done (two units at most), before its forward.
  for (std::size_t u = 0; u < n; ++u) {
    std::vector<int> after;
    if (u >= 2) after.push_back(forward_end(u - 2));
    const int gathered = add_sync(plan, units[u].gradient, "all_gather", tag("all-gather (forward)", u), after);
    plan.tasks[static_cast<std::size_t>(forward_start(u))].after.push_back(gathered);
  }
  if (n == 0) return plan;
  // Backward: the last unit gathered again when the forward pass is done; while unit u's backward
  // runs, unit u-1 is gathered (once unit u+1's backward freed its parameters), then unit u's
  // gradients reduce-scattered once its backward is done.
  std::vector<int> gathered(n, -1);
  gathered[n - 1] = add_sync(plan, units[n - 1].gradient, "all_gather", tag("all-gather (backward)", n - 1), {forward_end(n - 1)});
  for (std::size_t u = n; u-- > 0;) {
    if (u > 0) {
      std::vector<int> after = {gathered[u]};
      if (u + 1 < n) after.push_back(backward_end(u + 1));
      gathered[u - 1] = add_sync(plan, units[u - 1].gradient, "all_gather", tag("all-gather (backward)", u - 1), after);
    }
    add_sync(plan, units[u].gradient, "reduce_scatter", tag("reduce-scatter", u), {backward_end(u)});
  }
  for (std::size_t u = 0; u < n; ++u) plan.tasks[static_cast<std::size_t>(backward_start(u))].after.push_back(gathered[u]);
  return plan;
}

Strategy definition() {
  Strategy s = sharded_strategy(Sharding::parameters, 2);
  s.name = "fsdp";
  s.summary = "FSDP / ZeRO-3: everything sharded; each unit's parameters all-gathered before its forward and its "
              "backward, its gradients reduce-scattered after";
  s.order = 102;
  s.step_plan = fsdp_plan;
  s.build = [](const StrategyContext& ctx) { return build_sharded(ctx, "fsdp", 2); };
  return s;
}

const Registration registered(definition());

}  // namespace fsdp_strategy

}  // namespace gradsync::models::strategies
