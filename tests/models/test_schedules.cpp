// gloo-style sweep: every registered strategy's test variants (a wrapper lists one per inner it
// may wrap) x ranks
// 1..9 x sizes {0, 1, 7, N-1, N+1, 1 Mi + 3} elements x every k dividing N, each schedule
// proved correct by the symbolic executor: every worker ends holding every worker's
// contribution exactly once (or, for sampling, the documented rows).
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "models/executors/predict.h"
#include "models/schedule/symbolic.h"
#include "models/topology/topology_io.h"
#include "models/topology/uniform_topologies.h"
#include "support/topologies.h"

using namespace gradsync::models;

namespace {

// 12 GPUs behind 3 switches, host memory at the root: enough for 9 ranks, groups, a server.
const Topology& machine() {
  static const Topology t = test_topologies::switch_tree("sweep", 3, 4, {12, 1}, {8, 1}, {20, 0.5});
  return t;
}

}  // namespace

TEST(ScheduleSweep, EveryStrategyRanksSizesAndGroupsIsCorrect) {
  // Every registered strategy's test variants (models/strategies/strategy.h), and every k dividing N
  // where the schedule forms groups (its build resolves k).
  const Topology& t = machine();
  int checked = 0;
  for (const Strategy* strategy : all_strategies()) {
    std::vector<TestVariant> variants = strategy->test_variants;
    if (variants.empty()) variants.push_back({});
    for (const TestVariant& v : variants) {
      for (int n = 1; n <= 9; ++n) {
        std::set<std::uint64_t> sizes = {0, 1, 7, static_cast<std::uint64_t>(n - 1), static_cast<std::uint64_t>(n + 1),
                                         1024 * 1024 + 3};
        PredictRequest q;
        q.topology = &t;
        q.strategy = strategy;
        q.placement = first_gpus(t, n);
        q.bytes = 4.0;
        q.params = SyncParams::parse(v.params);
        const bool grouped = build_schedule(q).resolved.count("k") > 0;
        std::vector<int> ks = {0};  // 0: no k parameter
        if (grouped) {
          ks.clear();
          for (int k = 1; k <= n; ++k) {
            if (n % k == 0) ks.push_back(k);
          }
        }
        for (std::uint64_t elements : sizes) {
          for (int k : ks) {
            q.bytes = 4.0 * static_cast<double>(elements);
            auto params = v.params;
            if (k > 0) params.push_back("k=" + std::to_string(k));
            q.params = SyncParams::parse(params);
            const Schedule s = build_schedule(q).schedule;
            const SymbolicResult r = check_schedule(s);
            ASSERT_TRUE(r.ok) << strategy->name << " " << ::testing::PrintToString(params) << " N=" << n
                              << " elements=" << elements << ": " << r.message;
            ++checked;
          }
        }
      }
    }
  }
  std::printf("symbolic sweep: %d schedules proved correct\n", checked);
}

TEST(ScheduleSweep, WireBytesOfTheClassicSchedules) {
  // Source C: ring traffic per worker stays just under 2 x model size; PS moves 2·N·size in total.
  const Topology& t = machine();
  const std::uint64_t elements = 9 * 1000;
  const double S = 4.0 * elements;
  for (int n : {2, 3, 9}) {
    PredictRequest q;
    q.topology = &t;
    q.bytes = S;
    q.placement = first_gpus(t, n);
    q.strategy = &find_strategy("ring");
    const auto ring = check_schedule(build_schedule(q).schedule);
    EXPECT_DOUBLE_EQ(static_cast<double>(ring.bytes_on_wire) / n, 2.0 * (n - 1) / n * S);
    q.strategy = &find_strategy("ps");
    const auto ps = check_schedule(build_schedule(q).schedule);
    EXPECT_DOUBLE_EQ(static_cast<double>(ps.bytes_on_wire), 2.0 * n * S);
    // 1-bit: one bit per value plus two 4-byte scales per column (1024 values without a workload).
    q.strategy = &find_strategy("onebit");
    const auto onebit = check_schedule(build_schedule(q).schedule);
    EXPECT_LT(onebit.bytes_on_wire * 20, ring.bytes_on_wire);
    EXPECT_GT(onebit.bytes_on_wire * 40, ring.bytes_on_wire);
  }
}

TEST(ScheduleSweep, SamplingSendsOnlyTheChosenRows) {
  const Topology& t = machine();
  const Workload w = *workload_preset("source-a-ffnn-lm");
  PredictRequest q;
  q.topology = &t;
  q.workload = &w;
  q.placement = first_gpus(t, 4);
  q.strategy = &find_strategy("sampled");
  q.params = SyncParams::parse({"inner=ring"});
  const Schedule s = build_schedule(q).schedule;
  const auto r = check_schedule(s);
  ASSERT_TRUE(r.ok) << r.message;
  // The hidden layer goes whole; of the 2 x 49,036 vocabulary rows, alpha 5 % + beta 1 % +
  // each rank's minibatch words: well under a tenth of the bytes of a full ring.
  const double full_ring = 2.0 * 3 / 4 * w.gradient_bytes() * 4;
  EXPECT_LT(static_cast<double>(r.bytes_on_wire), full_ring / 5);
  EXPECT_GT(static_cast<double>(r.bytes_on_wire), 2.0 * 3 / 4 * 4 * 4'195'328 * 4);  // at least the hidden layer
}
