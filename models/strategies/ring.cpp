// Ring all-reduce (source A, Algorithm 1): reduce-scatter then all-gather around a ring
// of the N ranks, each moving N-1 blocks of S/N bytes per phase.
#include <string>
#include <vector>

#include "models/strategies/common.h"

namespace gradsync::models::strategies {

namespace ring_strategy {

// nccl-tests' collectives that the ring runs: the all-reduce, or one of its halves alone.
ParamSpec collective_param() {
  return ParamSpec{"collective", "all_reduce",
                   "all_reduce, or one half of it alone: reduce_scatter (each rank ends with the sum of its block) or "
                   "all_gather (each rank's block to every rank); the size is the whole buffer, as nccl-tests prints it",
                   word_domain({"all_reduce", "reduce_scatter", "all_gather"})};
}

Strategy definition() {
  Strategy s;
  s.name = "ring";
  s.summary = "ring all-reduce: reduce-scatter then all-gather, N-1 steps each (source A, Algorithm 1)";
  s.source = "A, B, C";
  s.order = 20;
  s.params = {ring_order_param(true), collective_param()};
  s.test_variants = {{{}}, {{"ring_order=given"}}, {{"collective=reduce_scatter"}}, {{"collective=all_gather"}}};
  s.is_default = true;
  s.busbw_factor = collective_busbw_factor;
  s.closed_form = [](const StrategyContext& ctx) {
    formulas::Breakdown b = formulas::ring_allreduce(ctx.rank_inputs());
    const std::string& collective = ctx.params.text("collective");
    if (collective != "all_reduce") {
      // One half: the all-gather's steps, or the reduce-scatter's with their reductions.
      std::erase_if(b.phases, [&](const formulas::Phase& p) { return (p.name == "all-gather") != (collective == "all_gather"); });
    }
    return b;
  };
  s.build = [](const StrategyContext& ctx) {
    Schedule s = start_schedule("ring", ctx);
    const std::vector<int> order = ring_of_ranks(ctx);
    const Region region{0, ctx.elements, ctx.element_bytes};
    const std::string& collective = ctx.params.text("collective");
    if (collective == "all_reduce") {
      add_ring_allreduce(s, {order}, region);
    } else {
      add_ring_half(s, order, region, collective == "reduce_scatter", "reduce");
    }
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
