// Ring all-reduce (source A, Algorithm 1): reduce-scatter then all-gather around a ring
// of the N ranks, each moving N-1 blocks of S/N bytes per phase.
#include "models/strategies/common.h"

namespace gradsync::models::strategies {

namespace ring_strategy {

Strategy definition() {
  Strategy s;
  s.name = "ring";
  s.summary = "ring all-reduce: reduce-scatter then all-gather, N-1 steps each (source A, Algorithm 1)";
  s.source = "A, B, C";
  s.order = 20;
  s.params = {ring_order_param(true)};
  s.test_variants = {{{}}, {{"ring_order=given"}}};
  s.is_default = true;
  s.closed_form = [](const StrategyContext& ctx) { return formulas::ring_allreduce(ctx.rank_inputs()); };
  s.build = [](const StrategyContext& ctx) {
    Schedule s = start_schedule("ring", ctx);
    const std::vector<int> order = ring_of_ranks(ctx);
    add_ring_allreduce(s, {order}, Region{0, ctx.elements, ctx.element_bytes});
    std::string text = "ring order:";
    for (int r : order) text += " " + ctx.topology.node(ctx.placement.ranks[static_cast<std::size_t>(r)]).id;
    s.notes.push_back(text);
    return s;
  };
  return s;
}

const Registration registered(definition());

}  // namespace ring_strategy

}  // namespace gradsync::models::strategies
