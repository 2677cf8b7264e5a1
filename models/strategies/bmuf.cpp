// BMUF, block-wise model-update filtering (sources C, D): model averaging every T steps
// plus a block momentum on the averaged model delta: Δ = η_b · (avg − w) + μ_b · Δ_prev,
// w ← w + Δ (or the Nesterov form). Defaults from CNTK: block learning rate 1.0, block
// momentum 1 − 1/N, syncPeriod 120,000 samples.
#include <limits>
#include <memory>

#include "models/support/error.h"
#include "models/schedule/kernels.h"
#include "models/strategies/common.h"
#include "models/strategies/periodic.h"

namespace gradsync::models::strategies {

namespace bmuf_strategy {

Strategy definition() {
  ParamSpec momentum{"block_momentum", "auto", "block momentum μ_b in [0, 1); auto: 1 - 1/N", real_domain(0, 1, true, false, 0, true)};
  ParamSpec lr{"block_lr", "1.0", "block learning rate η_b", real_domain(0, std::numeric_limits<double>::infinity(), false, true, 5)};
  ParamSpec nesterov{"nesterov", "true", "Nesterov-style block momentum: true or false", word_domain({"true", "false"})};
  ParamSpec reset{"reset_momentum", "true",
                  "the workers' local SGD momentum starts afresh after each synchronisation (CNTK's resetSGDMomentum): true or false",
                  word_domain({"true", "false"})};
  Strategy s = periodic_strategy("bmuf", "steps between synchronisations; auto: 120,000 samples (CNTK's syncPeriod) / minibatch",
                                 {momentum, lr, nesterov, reset});
  s.summary = "block momentum (BMUF): model averaging every T steps plus a block momentum update";
  s.order = 80;
  s.keeps_one_workers_learning_rate = true;  // the block momentum 1 - 1/N puts back what averaging divides
  s.test_variants = {{{"inner=ps"}}};
  s.build = [](const StrategyContext& ctx) {
    const double lr = ctx.params.number("block_lr");
    const bool nesterov_on = ctx.params.word("nesterov") == "true";
    const double given_momentum = ctx.params.is_auto("block_momentum") ? 0 : ctx.params.number("block_momentum");
    Schedule s = build_periodic(ctx, "bmuf", 120'000);
    s.resets_local_momentum = ctx.params.word("reset_momentum") == "true";
    const int n = s.workers;
    const double momentum = ctx.params.is_auto("block_momentum") ? 1.0 - 1.0 / n : given_momentum;
    // Scratch after the inner strategy's: the model the workers started this block from (the
    // last block's result, Nesterov's look-ahead included; CNTK's prevWeight),
    // and the last block update (both kept from one synchronisation to the next).
    const Slice model{0, s.gradient_bytes};
    const Slice previous{s.gradient_bytes + s.scratch_bytes, s.gradient_bytes};
    const Slice delta{previous.end(), s.gradient_bytes};
    s.scratch_bytes += 2 * s.gradient_bytes;
    s.state_starts.push_back({previous, model});  // the first block starts from the workers' first model
    const auto average = std::make_shared<const KernelCall>(divide_call(n));
    s.rounds.push_back(Round{"average", "average", [model, n, average](int p, std::vector<Op>& out) {
                               if (p < n) out.push_back(Op::run(*average, model));
                             }});
    const auto update = std::make_shared<const KernelCall>(block_momentum_call(previous, delta, momentum, lr, nesterov_on));
    s.rounds.push_back(Round{"block update", "block update", [model, n, update](int p, std::vector<Op>& out) {
                               if (p < n) out.push_back(Op::run(*update, model));
                             }});
    if (s.expected.empty()) s.expected.push_back({model, true, false, {}});
    for (auto& region : s.expected) region.numeric_only = true;
    s.notes.push_back("block momentum " + number_text(momentum, 4) + ", block learning rate " + number_text(lr, 4) +
                      (nesterov_on ? ", Nesterov" : ""));
    return s;
  };
  return s;
}

const Registration registered(definition());

}  // namespace bmuf_strategy

}  // namespace gradsync::models::strategies
