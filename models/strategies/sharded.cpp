#include "models/strategies/sharded.h"

#include <algorithm>

#include "models/strategies/common.h"
#include "models/support/error.h"

namespace gradsync::models::strategies {

namespace {

// The phase names of the i-th of `all_gathers` all-gathers.
std::string all_gather_phase(int i, int all_gathers) {
  if (all_gathers == 1) return "all-gather";
  return i == 0 ? "all-gather (forward)" : i == 1 ? "all-gather (backward)" : "all-gather " + std::to_string(i + 1);
}

// Runs `f` on the context with the inner's "collective" set (sharded strategies set it themselves).
template <typename F>
auto with_collective(const StrategyContext& ctx, const std::string& collective, F&& f) {
  StrategyParams p = ctx.params;
  p.set("collective", collective);
  const StrategyContext half{ctx.topology, ctx.placement, p, ctx.elements, ctx.element_bytes, ctx.workload, ctx.explain, {}};
  auto out = f(half);
  for (const auto& [name, value] : half.resolved) ctx.resolved_as(name, value);
  return out;
}

}  // namespace

Strategy sharded_strategy(Sharding sharding, int all_gathers) {
  Strategy s;
  s.source = "ZeRO (Rajbhandari et al., SC'20); PyTorch FSDP";
  s.sharding = sharding;
  ParamSpec inner = inner_param("ring", "who runs the reduce-scatter and the all-gathers: ring, or nccl (its ring; across hosts "
                                         "and on NVSwitch hosts as its planner plans it)");
  s.params = {inner};
  s.inners = {{"ring"}, {"nccl", false}};
  s.sets_inner_params = {{"collective", {"reduce_scatter", "all_gather"}}};
  s.test_variants = {{{}}, {{"inner=ring", "ring_order=given"}}};
  s.busbw_factor = [all_gathers](int ranks, const std::map<std::string, std::string>&) {
    return ranks > 0 ? (1.0 + all_gathers) * (ranks - 1) / ranks : 0.0;
  };
  s.closed_form = [all_gathers](const StrategyContext& ctx) {
    const Strategy& inner = inner_strategy(ctx);
    formulas::Breakdown b = with_collective(ctx, "reduce_scatter", [&](const StrategyContext& c) { return inner.closed_form(c); });
    const formulas::Breakdown gather = with_collective(ctx, "all_gather", [&](const StrategyContext& c) { return inner.closed_form(c); });
    for (int i = 0; i < all_gathers; ++i) {
      for (formulas::Phase p : gather.phases) {
        p.name = all_gather_phase(i, all_gathers);
        b.phases.push_back(p);
      }
    }
    return b;
  };
  return s;
}

Schedule build_sharded(const StrategyContext& ctx, const std::string& name, int all_gathers) {
  const Strategy& inner = inner_strategy(ctx);
  Schedule s = with_collective(ctx, "reduce_scatter", [&](const StrategyContext& c) { return inner.build(c); });
  const Schedule gather = with_collective(ctx, "all_gather", [&](const StrategyContext& c) { return inner.build(c); });
  for (int i = 0; i < all_gathers; ++i) {
    const int offset = static_cast<int>(s.rounds.size());
    for (std::size_t r = 0; r < gather.rounds.size(); ++r) {
      Round round = gather.rounds[r];
      if (round.same_as >= 0) round.same_as += offset;
      if (r == 0) round.same_ops_as_previous = {};  // the round before it is now the reduce-scatter's last
      round.phase = all_gather_phase(i, all_gathers);
      if (!round.compute_phase.empty()) round.compute_phase = round.phase;
      s.rounds.push_back(std::move(round));
    }
  }
  s.strategy = name;
  s.scratch_bytes = std::max(s.scratch_bytes, gather.scratch_bytes);
  s.expected.clear();  // the whole gradient's sum on every worker
  s.notes.push_back("the gradient reduce-scattered, then the parameters all-gathered" +
                    std::string(all_gathers > 1 ? " (" + std::to_string(all_gathers) + " times)" : "") + ", by " + inner.name);
  return s;
}

}  // namespace gradsync::models::strategies
