// Model averaging (sources C, D): workers train on their own and average their models
// every T steps (an all-reduce of the model, then a division by N). Communication per
// step shrinks by T; the local learning rate must grow N-fold (runtime numerics).
#include <memory>

#include "models/schedule/kernels.h"
#include "models/strategies/common.h"
#include "models/strategies/periodic.h"

namespace gradsync::models::strategies {

namespace model_avg_strategy {

Strategy definition() {
  Strategy s = periodic_strategy("model_avg", "steps between averagings; auto: 40,000 samples (CNTK's syncPeriod) / minibatch", {});
  s.summary = "model averaging: all-reduce and average the models every T steps";
  s.order = 70;
  s.test_variants = {{{"inner=ring", "T=5"}}, {{"inner=hierarchical", "grouping=order"}}};
  s.build = [](const StrategyContext& ctx) {
    Schedule s = build_periodic(ctx, "model_avg", 40'000);
    // Divide the sum of the N models by N.
    const Slice model{0, s.gradient_bytes};
    const int n = s.workers;
    const auto average = std::make_shared<const KernelCall>(divide_call(n));
    s.rounds.push_back(Round{"average", "average", [model, n, average](int p, std::vector<Op>& out) {
                               if (p < n) out.push_back(Op::run(*average, model));
                             }});
    if (s.expected.empty()) s.expected.push_back({model, true, false, {}});
    for (auto& region : s.expected) region.divisor = n;
    return s;
  };
  return s;
}

const Registration registered(definition());

}  // namespace model_avg_strategy

}  // namespace gradsync::models::strategies
