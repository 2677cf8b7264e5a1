// Parameter server (sources A, B, C): every worker sends its gradient to one server,
// which sums them, updates the parameters and sends them back to every worker.
#include "models/strategies/common.h"

namespace gradsync::models::strategies {

Schedule build_ps(const StrategyContext& ctx, const std::string& name) {
  Schedule s = start_schedule(name, ctx);
  const int server = add_server(s, ctx);
  const Slice gradient{0, s.gradient_bytes};
  add_gather_reduce(s, all_workers(s), server, gradient, "gather", "update");
  add_broadcasts(s, {{server, all_workers(s)}}, gradient, "send back");
  s.notes.push_back("server on " + ctx.topology.node(ctx.server_node()).id);
  return s;
}

namespace ps_strategy {

Strategy definition() {
  Strategy s;
  s.name = "ps";
  s.summary = "parameter server: gather every gradient at one server, update, send the parameters back";
  s.source = "A, B, C";
  s.order = 10;
  s.params = {server_param()};
  s.uses_server = true;
  s.test_variants = {{{}}, {{"server=rank0"}}};
  s.closed_form = [](const StrategyContext& ctx) { return formulas::parameter_server(ctx.server_inputs()); };
  s.build = [](const StrategyContext& ctx) { return build_ps(ctx, "ps"); };
  return s;
}

const Registration registered(definition());

}  // namespace ps_strategy

}  // namespace gradsync::models::strategies
