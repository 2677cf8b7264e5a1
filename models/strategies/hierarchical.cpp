// Hierarchical all-reduce (source B): a ring inside each of k groups, a ring among one
// representative per group, then a broadcast inside each group.
#include "models/formula_executor.h"
#include "models/strategies/registry.h"

namespace gradsync::models::strategies {

const Strategy& hierarchical() {
  static const Strategy s{
      "hierarchical",
      "hierarchical all-reduce: rings in k groups, a ring of group representatives, broadcast in each group",
      "B",
      {{"k", "auto", "number of groups (must divide N); auto: one group per PCIe switch above the ranks"}},
      false,
      [](const FormulaContext& ctx) {
        formulas::CostInputs in = ctx.rank_inputs();
        in.k = ctx.groups();
        if (in.N == 1) return formulas::Breakdown{};  // one worker: nothing to synchronise, nothing to broadcast
        return formulas::hierarchical_allreduce(in);
      },
  };
  return s;
}

}  // namespace gradsync::models::strategies
