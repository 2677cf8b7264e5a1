// The in-process reference executor and the checks gradsync-run applies: exact strategies
// give the closed-form sums, a corrupted element is counted, 1-bit and BMUF results
// follow their numerics (no closed form), asynchronous results are recognised.
#include <gtest/gtest.h>

#include "models/executors/predict.h"
#include "models/topology/topology_io.h"
#include "models/topology/uniform_topologies.h"
#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/check.h"
#include "support/collectives.h"
#include "support/in_process.h"
#include "runtime/transports.h"

using namespace gradsync;

namespace {

models::Schedule build(const std::string& strategy, int n, std::uint64_t elements, std::vector<std::string> params = {}) {
  static const models::Topology t = models::flat_topology(64);
  models::PredictRequest q;
  q.topology = &t;
  q.bytes = 4.0 * static_cast<double>(elements);
  q.strategy = &models::find_strategy(strategy);
  q.params = models::SyncParams::parse(params);
  q.placement = models::first_gpus(t, n);
  return models::build_schedule(q).schedule;
}

// Every worker's gradient after one run of the schedule executor, all participants in this
// process, from check_input.
std::vector<std::vector<float>> run_in_process(const models::Schedule& s) {
  auto memory = runtime::make_host_memory();
  auto transport = test_in_process::make_transport();
  runtime::ScheduleExecutor executor(s, test_in_process::map_all_here(s), 0, *memory, *transport);
  executor.reset(runtime::check_input);
  executor.run();
  std::vector<std::vector<float>> out;
  for (int w = 0; w < s.workers; ++w) out.push_back(executor.gradient(w));
  return out;
}

}  // namespace

// The reference against the closed form (sums of the integer inputs, averaged where the
// schedule says), for every strategy whose result is exact: no encoded payload, no numeric update.
TEST(Check, ReferenceRunGivesTheClosedFormForExactStrategies) {
  int checked = 0;
  for (const models::Strategy* strategy : models::all_strategies()) {
    for (int n : {1, 3, 4}) {
      const auto s = build(strategy->name, n, 1001);
      const bool numeric = std::any_of(s.expected.begin(), s.expected.end(), [](const auto& e) { return e.numeric_only; });
      if (s.asynchronous || runtime::is_lossy(s) || numeric) continue;
      const auto result = runtime::reference_run(s, runtime::check_input);
      for (int w = 0; w < n; ++w) {
        EXPECT_EQ(runtime::count_wrong(s, w, result[static_cast<std::size_t>(w)], runtime::check_input, nullptr), 0u)
            << strategy->name << " N=" << n << " worker " << w;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 6 * 3);  // ps, ring, hierarchical, ps_hra, sampled, model_avg at least
}

// The collectives' result kinds: the executor and the reference agree bit for bit, every worker
// holds what its regions ask (its shard, every owner's block, the root's copy, the sum at the
// root, the all-to-all's transposed blocks), and a wrong element counts only where the worker
// must hold the region.
TEST(Check, ResultKindsOfTheCollectivesAreCheckedExactly) {
  namespace c = test_collectives;
  for (int n : {1, 2, 3, 5}) {
    for (std::uint64_t elements : {std::uint64_t{1}, std::uint64_t{997}}) {
      for (const models::Schedule& s : {c::reduce_scatter(n, elements), c::all_gather(n, elements),
                                        c::broadcast(n, elements, n - 1), c::reduce(n, elements, n / 2), c::alltoall(n, elements)}) {
        SCOPED_TRACE(s.strategy + " N=" + std::to_string(n) + " elements=" + std::to_string(elements));
        const auto results = run_in_process(s);
        const auto reference = runtime::reference_run(s, runtime::check_input);
        for (int w = 0; w < n; ++w) {
          const auto& got = results[static_cast<std::size_t>(w)];
          ASSERT_EQ(std::memcmp(got.data(), reference[static_cast<std::size_t>(w)].data(), got.size() * sizeof(float)), 0) << w;
          EXPECT_EQ(runtime::count_wrong(s, w, got, runtime::check_input, nullptr), 0u) << w;
        }
      }
    }
  }
  // Reduce-scatter on 4 workers, 400 elements: worker 0 holds block 1 = [100, 200) only.
  const auto s = c::reduce_scatter(4, 400);
  auto result = runtime::reference_run(s, runtime::check_input)[0];
  result[150] += 1.0f;  // in its shard: wrong
  result[20] += 1.0f;   // in a shard it does not hold: unspecified
  EXPECT_EQ(runtime::count_wrong(s, 0, result, runtime::check_input, nullptr), 1u);
  double sum = 0;
  for (int w = 0; w < 4; ++w) sum += runtime::check_input(w, 150);
  EXPECT_EQ(result[150], static_cast<float>(sum) + 1.0f);
  // All-to-all on 3 workers of 2 x 3 elements: worker 1's block 2 ([4, 6)) is worker 2's block 1
  // (its elements 2 and 3); worker 1 holding its own there instead counts both.
  const auto a = c::alltoall(3, 2);
  auto got = runtime::reference_run(a, runtime::check_input)[1];
  EXPECT_EQ(got[4], runtime::check_input(2, 2));
  EXPECT_EQ(got[5], runtime::check_input(2, 3));
  EXPECT_EQ(runtime::count_wrong(a, 1, got, runtime::check_input, nullptr), 0u);
  got[4] = runtime::check_input(1, 4);
  got[5] = runtime::check_input(1, 5);
  EXPECT_EQ(runtime::count_wrong(a, 1, got, runtime::check_input, nullptr), 2u);
}

TEST(Check, ACorruptedElementIsCounted) {
  const auto s = build("ring", 4, 1000);
  auto result = runtime::reference_run(s, runtime::check_input);
  const auto reference = result[2];
  result[2][17] += 1.0f;
  result[2][999] = -result[2][999] - 1;
  EXPECT_EQ(runtime::count_wrong(s, 2, result[2], runtime::check_input, &reference), 2u);
  EXPECT_EQ(runtime::count_wrong(s, 2, result[2], runtime::check_input, nullptr), 2u);
  EXPECT_EQ(runtime::count_wrong(s, 2, reference, runtime::check_input, &reference), 0u);
}

TEST(Check, LossyAndNumericStrategiesAreCheckedAgainstTheReferenceOnly) {
  const auto onebit = build("onebit", 4, 4096);
  EXPECT_TRUE(runtime::is_lossy(onebit));
  EXPECT_FALSE(runtime::is_lossy(build("onebit", 4, 4096, {"bits=32"})));
  const auto result = runtime::reference_run(onebit, runtime::check_input);
  // 1-bit values differ from the exact sum, yet every rank agrees with every other.
  const auto exact = runtime::reference_run(build("ring", 4, 4096), runtime::check_input);
  EXPECT_NE(result[0], exact[0]);
  for (int w = 1; w < 4; ++w) EXPECT_EQ(result[static_cast<std::size_t>(w)], result[0]);
  EXPECT_EQ(runtime::count_wrong(onebit, 1, result[1], runtime::check_input, &result[1]), 0u);
  // BMUF's first synchronisation: the global model of the last one starts as the worker's own first
  // model (its input), the block momentum at zero: model = previous + lr * (average - previous).
  const auto bmuf = runtime::reference_run(build("bmuf", 4, 64, {"block_lr=0.5"}), runtime::check_input);
  const auto average = runtime::reference_run(build("model_avg", 4, 64), runtime::check_input);
  for (std::size_t i = 0; i < 64; ++i) {
    // Nesterov (default): previous + delta + momentum * delta, delta = 0.5 * (average - previous),
    // momentum = 3/4.
    const float previous = runtime::check_input(0, i);
    const float delta = 0.5f * (average[0][i] - previous);
    EXPECT_FLOAT_EQ(bmuf[0][i], (previous + delta) + 0.75f * delta) << i;
  }
}

TEST(Check, AsynchronousResultsAreOwnPlusSomeOthersAtAnyWorkerCount) {
  for (int n : {4, 16, 40}) {
    const auto s = build("downpour", n, 1000);
    const auto input = runtime::asynchronous_check_input(n);
    // What worker 1 holds after workers 1 and 3 (and, with more workers, 13) pushed.
    std::vector<int> pushed = {1, 3};
    if (n > 13) pushed.push_back(13);
    std::vector<float> got(1000, 0.0f);
    for (std::uint64_t i = 0; i < 1000; ++i) {
      for (int w : pushed) got[i] += input(w, i);
    }
    EXPECT_EQ(runtime::count_wrong_asynchronous(s, 1, got), 0u) << n;
    // Worker 0's own push is missing: its elements (every n-th) are wrong.
    EXPECT_EQ(runtime::count_wrong_asynchronous(s, 0, got), (1000u + n - 1) / n) << n;
    // A corrupted element, a doubled one, and an element of worker 3 lost while its others are there.
    auto bad = got;
    bad[static_cast<std::size_t>(n) + 1] += 2;  // worker 1's
    bad[static_cast<std::size_t>(2 * n) + 3] *= 2;  // worker 3's
    bad[static_cast<std::size_t>(5 * n) + 3] = 0;  // worker 3's push "missing" there only
    EXPECT_EQ(runtime::count_wrong_asynchronous(s, 1, bad), 3u) << n;
  }
}

// The executor of a real run (in this process, on host memory through the same Memory,
// kernels and executor as gradsync-run) against the independent reference, bit for bit:
// every strategy's test variants, 1 to 6 ranks, sizes that do and do not divide.
TEST(Check, TheExecutorEqualsTheIndependentReferenceForEveryStrategy) {
  int compared = 0;
  for (const models::Strategy* strategy : models::all_strategies()) {
    std::vector<models::TestVariant> variants = strategy->test_variants;
    if (variants.empty()) variants.push_back({});
    for (const auto& variant : variants) {
      for (int n = 1; n <= 6; ++n) {
        for (std::uint64_t elements : {std::uint64_t{1}, std::uint64_t{997}, std::uint64_t{4096}}) {
          const auto s = build(strategy->name, n, elements, variant.params);
          if (s.asynchronous) continue;  // lockstep here; the asynchronous ones are checked under mpirun
          const auto results = run_in_process(s);
          const auto reference = runtime::reference_run(s, runtime::check_input);
          for (int w = 0; w < n; ++w) {
            const auto& got = results[static_cast<std::size_t>(w)];
            ASSERT_EQ(got.size(), reference[static_cast<std::size_t>(w)].size());
            ASSERT_EQ(std::memcmp(got.data(), reference[static_cast<std::size_t>(w)].data(), got.size() * sizeof(float)), 0)
                << strategy->name << " " << ::testing::PrintToString(variant.params) << " N=" << n << " elements=" << elements
                << " worker " << w;
            EXPECT_EQ(runtime::count_wrong(s, w, got, runtime::check_input, &reference[static_cast<std::size_t>(w)]), 0u);
          }
          ++compared;
        }
      }
    }
  }
  std::printf("executor = reference, bit for bit, for %d schedules\n", compared);
}

TEST(Check, OneBitKeepsEveryCopyOfAValueEqualWhateverItWraps) {
  for (const models::Strategy* wrapped : models::inner_strategies(models::find_strategy("onebit"))) {
    const std::string inner = wrapped->name;
    for (int n : {2, 3, 4, 6}) {
      std::vector<std::string> params = {"inner=" + inner};
      const bool grouped = std::any_of(wrapped->params.begin(), wrapped->params.end(),
                                       [](const models::ParamSpec& p) { return p.name == "k"; });
      if (grouped) params.push_back(n % 2 == 0 ? "k=2" : "k=1");
      if (grouped) params.push_back("grouping=order");
      const auto result = runtime::reference_run(build("onebit", n, 3000, params), runtime::check_input);
      for (int w = 1; w < n; ++w) EXPECT_EQ(result[static_cast<std::size_t>(w)], result[0]) << inner << " N=" << n << " worker " << w;
    }
  }
}

TEST(Check, OneBitErrorFeedbackConvergesToTheExactSumOverSteps) {
  // The same gradients every step: with error feedback, the mean of what 1-bit SGD
  // delivers tends to the exact sum (what is not sent now is sent later).
  for (const char* inner : {"ps", "ring"}) {
    const auto s = build("onebit", 3, 512, {std::string("inner=") + inner, "column=4"});
    auto memory = runtime::make_host_memory();
    auto transport = test_in_process::make_transport();
    runtime::ScheduleExecutor executor(s, test_in_process::map_all_here(s), 0, *memory, *transport);
    executor.reset(runtime::check_input);
    std::vector<double> total(512, 0.0);
    auto error_after = [&](int steps) {
      double worst = 0;
      for (std::size_t i = 0; i < 512; ++i) {
        const double exact = runtime::check_input(0, i) + runtime::check_input(1, i) + runtime::check_input(2, i);
        worst = std::max(worst, std::fabs(total[i] / steps - exact));
      }
      return worst;
    };
    double after_10 = 0;
    for (int step = 1; step <= 1000; ++step) {
      executor.refill(runtime::check_input);
      executor.run();
      const auto got = executor.gradient(0);
      for (std::size_t i = 0; i < 512; ++i) total[i] += got[i];
      if (step == 10) after_10 = error_after(10);
      if (step == 10 || step == 100 || step == 1000) std::printf("%s step %d: %.3f\n", inner, step, error_after(step));
    }
    const double after_1000 = error_after(1000);
    EXPECT_LT(after_1000, after_10 / 5) << inner << ": " << after_10 << " -> " << after_1000;
    EXPECT_LT(after_1000, 5.0) << inner;  // inputs are integers in [-500, 500)
  }
}

TEST(Check, OneBitWithoutErrorFeedbackLosesTheSameEveryStep) {
  // feedback=off (source D's ablation): nothing is carried, so the same gradients give the same
  // quantised sum every step, its error never shrinks, and a step is the reference's one step.
  for (const char* inner : {"ps", "ring"}) {
    const auto s = build("onebit", 3, 512, {std::string("inner=") + inner, "column=4", "feedback=off"});
    auto memory = runtime::make_host_memory();
    auto transport = test_in_process::make_transport();
    runtime::ScheduleExecutor executor(s, test_in_process::map_all_here(s), 0, *memory, *transport);
    executor.reset(runtime::check_input);
    const auto reference = runtime::reference_run(s, runtime::check_input);
    double error = 0;
    for (std::size_t i = 0; i < 512; ++i) {
      const double exact = runtime::check_input(0, i) + runtime::check_input(1, i) + runtime::check_input(2, i);
      error = std::max(error, std::fabs(reference[0][i] - exact));
    }
    EXPECT_GT(error, 50.0) << inner << ": 1 bit per value of integers in [-500, 500) is not exact";
    for (int step = 1; step <= 5; ++step) {
      executor.refill(runtime::check_input);
      executor.run();
      const auto got = executor.gradient(0);
      ASSERT_EQ(got.size(), reference[0].size());
      EXPECT_EQ(std::memcmp(got.data(), reference[0].data(), got.size() * sizeof(float)), 0) << inner << " step " << step;
    }
    // With feedback the second step already differs: the first step's residual is added.
    const auto with = build("onebit", 3, 512, {std::string("inner=") + inner, "column=4"});
    runtime::ScheduleExecutor carried(with, test_in_process::map_all_here(with), 0, *memory, *transport);
    carried.reset(runtime::check_input);
    carried.refill(runtime::check_input);
    carried.run();
    EXPECT_EQ(carried.gradient(0), reference[0]) << inner << ": the first step has no residual yet";
    carried.refill(runtime::check_input);
    carried.run();
    EXPECT_NE(carried.gradient(0), reference[0]) << inner;
  }
}
