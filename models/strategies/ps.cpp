// Parameter server (sources A, B, C): every worker sends its gradient to one server,
// which sums them, updates the parameters and sends them back to every worker.
#include "models/formula_executor.h"
#include "models/strategies/registry.h"

namespace gradsync::models::strategies {

const Strategy& ps() {
  static const Strategy s{
      "ps",
      "parameter server: gather every gradient at one server, update, send the parameters back",
      "A, B, C",
      {{"server", "auto",
        "where the server lives: host (host memory), rank0, or a node id; auto: host memory when the topology has "
        "it (as in source A), else rank0"}},
      true,
      [](const FormulaContext& ctx) { return formulas::parameter_server(ctx.server_inputs()); },
  };
  return s;
}

}  // namespace gradsync::models::strategies
