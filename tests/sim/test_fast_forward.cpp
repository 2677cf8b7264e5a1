// The simulator's jump over rounds declared equal in cost (issue 16): once every participant
// starts its rounds a common period apart, the rest of the run repeats that period. The
// result must be what simulating every round gives, on machines where the rounds settle at
// once and where they do not (then the simulator settles longer before jumping, or not at
// all), and a timeline still shows every round.
#include <gtest/gtest.h>

#include "models/executors/predict.h"
#include "models/topology/uniform_topologies.h"
#include "sim/simulator.h"
#include "support/topologies.h"

using namespace gradsync;
using namespace gradsync::models;

namespace {

// 64 GPUs behind 4 switches: GPU links faster than the uplinks, and a route across switches
// twice the latency of one inside a switch.
const Topology& tree64() {
  static const Topology t = test_topologies::switch_tree("tree-64", 4, 16, {12, 1}, {8, 2}, {20, 0.5});
  return t;
}

sim::SimResult simulate(const Topology& t, const std::string& strategy, std::vector<std::string> params, int n,
                        double bytes, int after, bool trace = false) {
  PredictRequest q;
  q.topology = &t;
  q.bytes = bytes;
  q.strategy = &find_strategy(strategy);
  q.params = SyncParams::parse(params);
  q.placement = first_gpus(t, n);
  const BuiltSchedule built = build_schedule(q);
  sim::SimOptions o;
  o.sync_every_step = true;
  o.steps = 2;
  o.compute_s = 1e-3;
  o.costs = participant_costs(built.schedule);
  o.fast_forward_after = after;
  o.trace = trace;
  return sim::simulate(t, built.schedule, o);
}

void expect_same(const sim::SimResult& jumped, const sim::SimResult& every, const std::string& what) {
  constexpr double kRel = 1e-6;
  EXPECT_NEAR(jumped.total_s, every.total_s, kRel * every.total_s) << what;
  EXPECT_NEAR(jumped.first_sync_s, every.first_sync_s, kRel * every.first_sync_s) << what;
  ASSERT_EQ(jumped.phases.size(), every.phases.size()) << what;
  for (std::size_t i = 0; i < every.phases.size(); ++i) {
    EXPECT_EQ(jumped.phases[i].name, every.phases[i].name) << what;
    EXPECT_NEAR(jumped.phases[i].seconds, every.phases[i].seconds, kRel * every.first_sync_s) << what << " " << every.phases[i].name;
  }
}

}  // namespace

TEST(FastForward, EqualToSimulatingEveryRound) {
  const Topology& t = tree64();
  struct Case {
    std::string strategy;
    std::vector<std::string> params;
    int n;
  };
  const std::vector<Case> cases = {
      {"ring", {"ring_order=given"}, 64},       // across switches in rank order
      {"ring", {}, 64},                         // the ring order gradsync picks
      {"ring", {"ring_order=given"}, 24},       // a switch and a half: uplinks shared unevenly
      {"hierarchical", {"k=4"}, 64},            // rings in groups, then the representatives'
      {"onebit", {"inner=ring"}, 32},           // encoded payloads
      {"ps", {}, 16},                           // nothing declared alike
  };
  std::uint64_t jumped = 0;
  for (const Case& c : cases) {
    const double bytes = 4.0 * 3 * 65536;  // splits evenly over every ring here (24, 32, 64, 16)
    const std::string what = c.strategy + " on " + std::to_string(c.n);
    const auto fast = simulate(t, c.strategy, c.params, c.n, bytes, 4);
    const auto every = simulate(t, c.strategy, c.params, c.n, bytes, 0);
    EXPECT_TRUE(fast.fast_forward_exact) << what;
    EXPECT_EQ(every.rounds_fast_forwarded, 0u) << what;
    expect_same(fast, every, what);
    jumped += fast.rounds_fast_forwarded;
    std::printf("%s: %llu rounds jumped (after %d), %.3f ms\n", what.c_str(),
                static_cast<unsigned long long>(fast.rounds_fast_forwarded), fast.fast_forward_after, 1e3 * fast.first_sync_s);
  }
  EXPECT_GT(jumped, 200u);  // the jump was taken, not just never offered
}

TEST(FastForward, ATimelineShowsEveryRound) {
  const auto traced = simulate(tree64(), "ring", {"ring_order=given"}, 16, 4.0 * 1024 * 16, 4, true);
  EXPECT_EQ(traced.rounds_fast_forwarded, 0u);
  ASSERT_TRUE(traced.trace.has_value());
}
