// BMUF, block-wise model-update filtering (sources C, D): model averaging every T steps
// plus a block momentum on the averaged model delta: Δ = η_b · (avg − w) + μ_b · Δ_prev,
// w ← w + Δ (or the Nesterov form). Defaults from CNTK: block learning rate 1.0, block
// momentum 1 − 1/N, syncPeriod 120,000 samples.
#include "models/error.h"
#include "models/strategies/common.h"
#include "models/strategies/periodic.h"
#include "models/strategies/registry.h"

namespace gradsync::models::strategies {

const Strategy& bmuf() {
  static const Strategy s{
      "bmuf",
      "block momentum (BMUF): model averaging every T steps plus a block momentum update",
      "C, D",
      periodic_params({{"T", "auto", "steps between synchronisations; auto: 120,000 samples (CNTK's syncPeriod) / minibatch"},
                       {"block_momentum", "auto", "block momentum μ_b in [0, 1); auto: 1 - 1/N"},
                       {"block_lr", "1.0", "block learning rate η_b"},
                       {"nesterov", "true", "Nesterov-style block momentum: true or false"}}),
      false,
      [](const StrategyContext& ctx) { return periodic_closed_form(ctx, "bmuf"); },
      [](const StrategyContext& ctx) {
        if (!ctx.params.is_auto("block_momentum")) {
          const double mu = ctx.params.number("block_momentum", 0, true);
          if (mu >= 1) throw InputError("--param block_momentum=" + ctx.params.text("block_momentum") + ": expected below 1");
        }
        ctx.params.number("block_lr", 0, false);
        const std::string& nesterov = ctx.params.text("nesterov");
        if (nesterov != "true" && nesterov != "false") {
          throw InputError("--param nesterov=" + nesterov + ": expected true or false");
        }
        Schedule s = build_periodic(ctx, "bmuf", 120'000);
        const int n = s.workers;
        const double momentum =
            ctx.params.is_auto("block_momentum") ? 1.0 - 1.0 / n : ctx.params.number("block_momentum", 0, true);
        const double lr = ctx.params.number("block_lr", 0, false);
        // Scratch after the inner strategy's: the global model after the last synchronisation,
        // and the last block update (both kept from one synchronisation to the next).
        const Slice model{0, s.gradient_bytes};
        const Slice previous{s.gradient_bytes + s.scratch_bytes, s.gradient_bytes};
        const Slice delta{previous.end(), s.gradient_bytes};
        s.scratch_bytes += 2 * s.gradient_bytes;
        const bool nesterov_on = nesterov == "true";
        s.rounds.push_back(Round{"average", "average", [model, n](int p, std::vector<Op>& out) {
                                   if (p < n) out.push_back(Op::scale(model, n));
                                 }});
        s.rounds.push_back(Round{"block update", "block update", [=](int p, std::vector<Op>& out) {
                                   if (p < n) out.push_back(Op::block_update(model, previous, delta, momentum, lr, nesterov_on));
                                 }});
        if (s.expected.empty()) s.expected.push_back({model, true, false, {}});
        for (auto& region : s.expected) region.numeric_only = true;
        char text[120];
        std::snprintf(text, sizeof text, "block momentum %.4g, block learning rate %.4g%s", momentum, lr,
                      nesterov_on ? ", Nesterov" : "");
        s.notes.push_back(text);
        return s;
      },
  };
  return s;
}

}  // namespace gradsync::models::strategies
