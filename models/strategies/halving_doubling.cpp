// Recursive halving-doubling all-reduce (Rabenseifner; MPICH's allreduce for long
// messages, Thakur, Rabenseifner & Gropp 2005): a reduce-scatter by recursive halving —
// at step s every rank exchanges half of what it still holds with the rank 2^s away, and
// keeps reducing the half it keeps — then an all-gather by recursive doubling, the same
// exchanges in reverse, each rank sending all it holds. lg N steps each way, each rank
// sending (N-1)/N of the buffer per phase, as a ring does, in lg N instead of N-1 messages.
//
// N not a power of two, as MPICH does it: with P the largest power of two below N and
// R = N - P, each even rank among the first 2R first sends its whole buffer to the next
// (odd) rank, which adds it and takes the even rank's place; the P remaining ranks run the
// halving-doubling; at the end each of those odd ranks sends the result back.
//
// This file is the whole strategy: its registry entry, closed form and schedule.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/strategies/common.h"

namespace gradsync::models::strategies {

namespace halving_doubling_strategy {

// Block indices [lo, hi) of the P blocks of the buffer.
struct Blocks {
  int lo = 0, hi = 0;
};

// One exchange of the halving: the partner (a rank position), what is kept and reduced,
// what is sent. The doubling replays the exchanges in reverse, sending what was kept and
// receiving what was sent.
struct Exchange {
  int partner = 0;
  Blocks keep, send;
};

struct Plan {
  int n = 1, pof2 = 1, rem = 0, steps = 0;
  std::vector<std::vector<Exchange>> exchanges;  // per rank position; empty for the folded-out ranks
};

Plan plan_for(int n) {
  Plan plan;
  plan.n = n;
  while (plan.pof2 * 2 <= n) {
    plan.pof2 *= 2;
    ++plan.steps;
  }
  plan.rem = n - plan.pof2;
  // Rank positions of the P ranks taking part: the odd ones of the first 2R, then the rest.
  auto position_of = [&](int newrank) { return newrank < plan.rem ? 2 * newrank + 1 : newrank + plan.rem; };
  plan.exchanges.assign(static_cast<std::size_t>(n), {});
  for (int newrank = 0; newrank < plan.pof2; ++newrank) {
    auto& mine = plan.exchanges[static_cast<std::size_t>(position_of(newrank))];
    Blocks held{0, plan.pof2};
    for (int mask = 1; mask < plan.pof2; mask <<= 1) {
      const int partner = newrank ^ mask;
      const int mid = (held.lo + held.hi) / 2;
      // The lower of the two keeps the lower half (MPICH's rule).
      const Blocks lower{held.lo, mid}, upper{mid, held.hi};
      const bool low = newrank < partner;
      mine.push_back(Exchange{position_of(partner), low ? lower : upper, low ? upper : lower});
      held = low ? lower : upper;
    }
  }
  return plan;
}

double log2_of_pof2(int n) {
  int steps = 0;
  for (int p = 1; p * 2 <= n; p *= 2) ++steps;
  return steps;
}

Strategy definition() {
  Strategy s;
  s.name = "halving_doubling";
  s.summary = "recursive halving-doubling all-reduce (Rabenseifner, MPICH): reduce-scatter by recursive halving, "
              "all-gather by recursive doubling, lg N steps each; other N folded in as MPICH does";
  s.source = "MPICH (Thakur, Rabenseifner & Gropp 2005)";
  s.order = 25;  // after the ring: another all-reduce among the ranks
  // Thakur, Rabenseifner & Gropp (2005), with P the largest power of two <= N: lg P steps
  // each way of P-1 P-th parts of S, P-1 P-th parts reduced; N not a power of two adds the
  // whole buffer sent and reduced before, and sent after.
  s.closed_form = [](const StrategyContext& ctx) {
    const formulas::CostInputs in = ctx.rank_inputs();
    formulas::check_inputs(in, false);
    const double P = std::pow(2.0, log2_of_pof2(in.N)), steps = log2_of_pof2(in.N);
    const double part = (P - 1) / P * in.S;
    formulas::Breakdown b{{{"reduce-scatter", steps * in.a + part / in.B},
                           {"reduce", part * in.C},
                           {"all-gather", steps * in.a + part / in.B}}};
    if (in.N > P) {
      b.phases.push_back({"fold in", in.a + in.S / in.B + in.S * in.C});
      b.phases.push_back({"fold out", in.a + in.S / in.B});
    }
    return b;
  };
  s.build = [](const StrategyContext& ctx) {
    Schedule s = start_schedule("halving_doubling", ctx);
    const auto plan = std::make_shared<const Plan>(plan_for(ctx.N()));
    const Region all{0, ctx.elements, ctx.element_bytes};
    // The bytes of blocks [lo, hi) of the P blocks.
    auto bytes = [all, P = plan->pof2](Blocks b) {
      const Slice first = block(all.base, all.elements, P, b.lo, all.element_bytes);
      const Slice last = block(all.base, all.elements, P, b.hi - 1, all.element_bytes);
      return Slice{first.offset, last.end() - first.offset};
    };
    const int twice_rem = 2 * plan->rem;
    const Slice whole = all.slice();
    if (plan->rem > 0) {
      s.rounds.push_back(Round{"fold in", "reduce", [whole, twice_rem](int p, std::vector<Op>& out) {
                                 if (p >= twice_rem) return;
                                 out.push_back(p % 2 == 0 ? Op::send(p + 1, whole) : Op::recv_reduce(p - 1, whole));
                               }});
    }
    for (int step = 0; step < plan->steps; ++step) {
      s.rounds.push_back(Round{"reduce-scatter", "reduce", [plan, bytes, step](int p, std::vector<Op>& out) {
                                 const auto& mine = plan->exchanges[static_cast<std::size_t>(p)];
                                 if (mine.empty()) return;
                                 const Exchange& e = mine[static_cast<std::size_t>(step)];
                                 out.push_back(Op::send(e.partner, bytes(e.send)));
                                 out.push_back(Op::recv_reduce(e.partner, bytes(e.keep)));
                               }});
    }
    for (int step = plan->steps - 1; step >= 0; --step) {
      s.rounds.push_back(Round{"all-gather", "", [plan, bytes, step](int p, std::vector<Op>& out) {
                                 const auto& mine = plan->exchanges[static_cast<std::size_t>(p)];
                                 if (mine.empty()) return;
                                 const Exchange& e = mine[static_cast<std::size_t>(step)];
                                 out.push_back(Op::send(e.partner, bytes(e.keep)));
                                 out.push_back(Op::recv(e.partner, bytes(e.send)));
                               }});
    }
    if (plan->rem > 0) {
      s.rounds.push_back(Round{"fold out", "", [whole, twice_rem](int p, std::vector<Op>& out) {
                                 if (p >= twice_rem) return;
                                 out.push_back(p % 2 == 1 ? Op::send(p - 1, whole) : Op::recv(p + 1, whole));
                               }});
    }
    std::string note = "recursive halving and doubling among " + std::to_string(plan->pof2) + " of " +
                       std::to_string(plan->n) + " ranks";
    if (plan->rem > 0) {
      note += "; folded in first (MPICH):";
      for (int r = 0; r < twice_rem; r += 2) {
        note += " " + ctx.topology.node(ctx.placement.ranks[static_cast<std::size_t>(r)]).id + "->" +
                ctx.topology.node(ctx.placement.ranks[static_cast<std::size_t>(r + 1)]).id;
      }
    }
    s.notes.push_back(note);
    return s;
  };
  return s;
}

const Registration registered(definition());

}  // namespace halving_doubling_strategy

}  // namespace gradsync::models::strategies
