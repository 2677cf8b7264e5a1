// Ring all-reduce (source A, Algorithm 1): reduce-scatter then all-gather around a ring
// of the N ranks, each moving N-1 blocks of S/N bytes per phase.
#include "models/strategies/common.h"
#include "models/strategies/registry.h"

namespace gradsync::models::strategies {

const Strategy& ring() {
  static const Strategy s{
      "ring",
      "ring all-reduce: reduce-scatter then all-gather, N-1 steps each (source A, Algorithm 1)",
      "A, B, C",
      {ring_order_param()},
      false,
      [](const StrategyContext& ctx) { return formulas::ring_allreduce(ctx.rank_inputs()); },
      [](const StrategyContext& ctx) {
        Schedule s = start_schedule("ring", ctx);
        const std::vector<int> order = ring_of_ranks(ctx);
        add_ring_allreduce(s, {order}, Region{0, ctx.elements, ctx.element_bytes});
        std::string text = "ring order:";
        for (int r : order) text += " " + ctx.topology.node(ctx.placement.ranks[static_cast<std::size_t>(r)]).id;
        s.notes.push_back(text);
        return s;
      },
  };
  return s;
}

}  // namespace gradsync::models::strategies
