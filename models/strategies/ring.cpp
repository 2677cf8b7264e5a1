// Ring all-reduce (source A, Algorithm 1): reduce-scatter then all-gather around a ring
// of the N ranks, each moving N-1 blocks of S/N bytes per phase.
#include "models/formula_executor.h"
#include "models/strategies/registry.h"

namespace gradsync::models::strategies {

const Strategy& ring() {
  static const Strategy s{
      "ring",
      "ring all-reduce: reduce-scatter then all-gather, N-1 steps each (source A, Algorithm 1)",
      "A, B, C",
      {},
      false,
      [](const FormulaContext& ctx) { return formulas::ring_allreduce(ctx.rank_inputs()); },
  };
  return s;
}

}  // namespace gradsync::models::strategies
