// PS-HRA (source B): synchronous ring all-reduce inside each of k groups, an
// asynchronous parameter server between the groups' representatives, and a broadcast
// from each representative to its group.
#include "models/formula_executor.h"
#include "models/strategies/registry.h"

namespace gradsync::models::strategies {

const Strategy& ps_hra() {
  static const Strategy s{
      "ps_hra",
      "PS-HRA: rings inside k groups, asynchronous parameter server between group representatives, broadcast",
      "B",
      {{"k", "auto", "number of groups (must divide N); auto: one group per PCIe switch above the ranks"},
       {"server", "auto", "where the server lives: host, rank0, or a node id; auto: host memory when present, else rank0"}},
      true,
      [](const FormulaContext& ctx) {
        formulas::CostInputs in = ctx.combined_inputs();
        in.k = ctx.groups();
        return formulas::ps_hra(in);
      },
  };
  return s;
}

}  // namespace gradsync::models::strategies
