// Hierarchical all-reduce (source B): a ring inside each of k groups, a ring among one
// representative per group, then a broadcast inside each group.
#include "models/strategies/common.h"

namespace gradsync::models::strategies {

namespace hierarchical_strategy {

Strategy definition() {
  Strategy s;
  s.name = "hierarchical";
  s.summary = "hierarchical all-reduce: rings in k groups, a ring of group representatives, broadcast in each group";
  s.source = "B";
  s.order = 30;
  s.params = {k_param(), grouping_param(), speeds_param(), ring_order_param(false)};
  s.test_variants = {{{"grouping=order"}}, {{"grouping=switch"}}};
  s.closed_form = [](const StrategyContext& ctx) {
    formulas::CostInputs in = ctx.rank_inputs();
    in.k = ctx.groups();
    if (in.N == 1) return formulas::Breakdown{};  // one worker: nothing to synchronise, nothing to broadcast
    return formulas::hierarchical_allreduce(in);
  };
  s.build = [](const StrategyContext& ctx) {
    Schedule s = start_schedule("hierarchical", ctx);
    const Rings groups = groups_of_ranks(ctx);
    add_hierarchical_allreduce(s, groups, Region{0, ctx.elements, ctx.element_bytes});
    s.notes.push_back(describe_groups(ctx, groups));
    return s;
  };
  return s;
}

const Registration registered(definition());

}  // namespace hierarchical_strategy

}  // namespace gradsync::models::strategies
