// PS-HRA (source B): synchronous ring all-reduce inside each of k groups, an
// asynchronous parameter server between the groups' representatives, and a broadcast
// from each representative to its group.
#include "models/strategies/common.h"
#include "models/strategies/registry.h"

namespace gradsync::models::strategies {

const Strategy& ps_hra() {
  static const Strategy s{
      "ps_hra",
      "PS-HRA: rings inside k groups, asynchronous parameter server between group representatives, broadcast",
      "B",
      {k_param(), grouping_param(), speeds_param(), ring_order_param(), server_param()},
      true,
      [](const StrategyContext& ctx) {
        formulas::CostInputs in = ctx.combined_inputs();
        in.k = ctx.groups();
        return formulas::ps_hra(in);
      },
      [](const StrategyContext& ctx) {
        Schedule s = start_schedule("ps_hra", ctx);
        const Rings groups = groups_of_ranks(ctx);
        const Region all{0, ctx.elements, ctx.element_bytes};
        const auto [representatives, broadcasts] = add_group_all_reduce(s, groups, all);
        const int server = add_server(s, ctx.server_node());
        // Each representative's push and pull: asynchronous between groups.
        add_gather_reduce(s, representatives, server, all.slice(), "server exchange", "server exchange");
        s.rounds.back().asynchronous = true;
        add_broadcasts(s, {{server, representatives}}, all.slice(), "server exchange");
        s.rounds.back().asynchronous = true;
        if (groups.front().size() > 1) add_broadcasts(s, broadcasts, all.slice(), "broadcast");
        s.notes.push_back(describe_groups(ctx, groups));
        s.notes.push_back("server on " + ctx.topology.node(ctx.server_node()).id);
        return s;
      },
  };
  return s;
}

}  // namespace gradsync::models::strategies
