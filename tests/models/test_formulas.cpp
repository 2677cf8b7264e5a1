// The papers' closed forms, pinned to values computed by hand from seeds-digest.md.
#include <gtest/gtest.h>

#include "models/executors/predict.h"
#include "models/strategies/formulas.h"
#include "models/strategies/strategy.h"
#include "models/support/error.h"
#include "models/topology/placement.h"
#include "models/topology/uniform_topologies.h"

using namespace gradsync::models;
using namespace gradsync::models::formulas;

namespace {
// Relative closeness: the hand values are exact decimals; allow only rounding noise.
void expect_close(double actual, double expected) { EXPECT_NEAR(actual, expected, 1e-12 * std::max(1.0, expected)); }

CostInputs case1() { return CostInputs{4, 100e6, 5e9, 10e-6, 1e-11, 2}; }
CostInputs case2() { return CostInputs{16, 1e9, 1e10, 5e-6, 2e-12, 4}; }
}  // namespace

TEST(Formulas, ParameterServer) {
  // 2(1e-5 + 4·1e8/5e9) + 4·1e8·1e-11 = 0.16002 + 0.004
  expect_close(parameter_server(case1()).total(), 0.16402);
  // 2(5e-6 + 16·1e9/1e10) + 16·1e9·2e-12 = 3.20001 + 0.032
  expect_close(parameter_server(case2()).total(), 3.23201);
  // One worker still goes through the server: 2(a + S/B) + S·C
  expect_close(parameter_server(CostInputs{1, 1e8, 1e9, 1e-5, 1e-11}).total(), 2 * (1e-5 + 0.1) + 1e-3);
}

TEST(Formulas, Ring) {
  // 6(1e-5 + 1e8/2e10) + 3·2.5e7·1e-11 = 0.03006 + 0.00075
  expect_close(ring_allreduce(case1()).total(), 0.03081);
  // 30(5e-6 + 1e9/1.6e11) + 15·6.25e7·2e-12 = 0.18765 + 0.001875
  expect_close(ring_allreduce(case2()).total(), 0.189525);
  EXPECT_EQ(ring_allreduce(CostInputs{1, 1e8, 1e9, 1e-5, 1e-11}).total(), 0.0);  // one worker moves nothing
}

TEST(Formulas, Hierarchical) {
  // 0.02002 + 0.02002 + 0.0005 + 0.0005 + 0.02001
  expect_close(hierarchical_allreduce(case1()).total(), 0.06105);
  // 0.15003 + 0.15003 + 0.0015 + 0.0015 + 0.100005
  expect_close(hierarchical_allreduce(case2()).total(), 0.403065);
}

TEST(Formulas, PsHra) {
  // 0.02002 + 0.0005 + 3·0.02001 + 1e8·1e-11
  expect_close(ps_hra(case1()).total(), 0.08155);
  // 0.15003 + 0.0015 + 3·0.100005 + 1e9·2e-12
  expect_close(ps_hra(case2()).total(), 0.453545);
}

TEST(Formulas, PhasesAddUpToTheFormula) {
  const auto b = hierarchical_allreduce(case2());
  ASSERT_EQ(b.phases.size(), 6u);
  EXPECT_EQ(b.phases.back().name, "broadcast");
  expect_close(b.phases.back().seconds, 5e-6 + 0.1);
  const auto ps = parameter_server(case1());
  expect_close(ps.phases[0].seconds + ps.phases[2].seconds, 2 * (1e-5 + 0.08));
}

TEST(Formulas, ServerReductionRateOnlyChangesTheServerTerm) {
  CostInputs in = case1();
  in.C_server = 1e-10;  // a CPU ten times slower than the GPUs
  expect_close(parameter_server(in).total(), 0.16002 + 4 * 100e6 * 1e-10);
  expect_close(ps_hra(in).total(), 0.02002 + 0.0005 + 0.06003 + 100e6 * 1e-10);
  expect_close(ring_allreduce(in).total(), 0.03081);
}

TEST(Formulas, SourceA) {
  // Eq. (2), written here from the paper: t_gather&back = 2·N·S / B.
  const auto gather_and_back = [](int N, double S, double B) { return 2.0 * N * S / B; };
  expect_close(allreduce(4, 418e6, 4.46e9), 0.14058295964125561);
  EXPECT_EQ(allreduce(1, 418e6, 4.46e9), 0.0);
  expect_close(minibatch_time(0.017, 0.14), 0.157);
  expect_close(epoch_time(12657, 4, 0.2), 632.85);
  // Source A's equations are source B's with a = 0 and C = 0.
  for (int N : {1, 2, 3, 4, 7}) {
    const CostInputs in{N, 3e8, 7e9, 0, 0};
    expect_close(gather_and_back(N, in.S, in.B), parameter_server(in).total());
    expect_close(allreduce(N, in.S, in.B), ring_allreduce(in).total());
  }
}

// Source C's traffic, from the schedules: a parameter server moves 2·N·model bytes per step
// (each worker's gradient in, the model back out), a ring all-reduce 2·(N−1)/N·model bytes out
// of each worker.
TEST(Formulas, SourceCTrafficIsWhatTheSchedulesMove) {
  const Topology t = flat_topology(8);
  const double model = 8 * 1024 * 1024;  // bytes, divisible by every N below
  for (int N : {2, 4, 8}) {
    SCOPED_TRACE(N);
    for (const char* name : {"ps", "ring"}) {
      PredictRequest q;
      q.topology = &t;
      q.strategy = &find_strategy(name);
      q.bytes = model;
      q.placement = first_gpus(t, N);
      if (std::string(name) == "ps") q.params.set("server", "rank0");
      const Schedule s = build_schedule(q).schedule;
      std::vector<double> sent(s.participants.size());
      for (std::size_t r = 0; r < s.rounds.size(); ++r) {
        for (int p = 0; p < s.participant_count(); ++p) {
          for (const Op& op : s.ops(r, p)) sent[p] += op.kind == OpKind::send ? op.link_bytes() : 0;
        }
      }
      if (std::string(name) == "ring") {
        for (int w = 0; w < N; ++w) expect_close(sent[w], 2.0 * (N - 1) / N * model);
      } else {
        // Every worker's gradient in and the model back out: 2·N·model (the server is a
        // participant of its own, here on rank 0's GPU, so worker 0's exchange is counted too).
        double total = 0;
        for (double b : sent) total += b;
        expect_close(total, 2.0 * N * model);
      }
    }
  }
}

TEST(Formulas, BadInputsAreErrors) {
  auto message = [](auto f, CostInputs in) {
    try {
      f(in);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message(hierarchical_allreduce, CostInputs{6, 1e6, 1e9, 0, 0, 4}),
            "N = 6 is not divisible by k = 4; expected k to divide the number of workers");
  EXPECT_EQ(message(ps_hra, CostInputs{4, 1e6, 1e9, 0, 0, 5}), "k = 5: expected between 1 and N = 4 groups");
  EXPECT_EQ(message(ring_allreduce, CostInputs{4, 1e6, -1, 0, 0}), "B = -1.000000: expected a bandwidth greater than 0");
  EXPECT_EQ(message(parameter_server, CostInputs{0, 1e6, 1, 0, 0}), "N = 0: expected at least 1 worker");
}
