// PS-HRA (source B): synchronous ring all-reduce inside each of k groups, an
// asynchronous parameter server between the groups' representatives, and a broadcast
// from each representative to its group.
#include "models/strategies/common.h"

namespace gradsync::models::strategies {

namespace ps_hra_strategy {

Strategy definition() {
  Strategy s;
  s.name = "ps_hra";
  s.summary = "PS-HRA: rings inside k groups, asynchronous parameter server between group representatives, broadcast";
  s.source = "B";
  s.order = 40;
  s.params = {k_param(), grouping_param(), speeds_param(), ring_order_param(false), server_param()};
  s.uses_server = true;
  s.test_variants = {{{"grouping=order"}}};
  s.closed_form = [](const StrategyContext& ctx) {
    formulas::CostInputs in = ctx.combined_inputs();
    in.k = ctx.groups();
    return formulas::ps_hra(in);
  };
  s.build = [](const StrategyContext& ctx) {
    Schedule s = start_schedule("ps_hra", ctx);
    const Rings groups = groups_of_ranks(ctx);
    const Region all{0, ctx.elements, ctx.element_bytes};
    const auto [representatives, broadcasts] = add_group_all_reduce(s, groups, all);
    const int server = add_server(s, ctx);
    // Each representative's push and pull: asynchronous between groups.
    add_gather_reduce(s, representatives, server, all.slice(), "server exchange", "server exchange");
    s.rounds.back().asynchronous = true;
    add_broadcasts(s, {{server, representatives}}, all.slice(), "server exchange");
    s.rounds.back().asynchronous = true;
    if (groups.front().size() > 1) add_broadcasts(s, broadcasts, all.slice(), "broadcast");
    s.notes.push_back(describe_groups(ctx, groups));
    s.notes.push_back("server on " + ctx.topology.node(ctx.server_node()).id);
    return s;
  };
  return s;
}

const Registration registered(definition());

}  // namespace ps_hra_strategy

}  // namespace gradsync::models::strategies
