// recommend as a library: its candidates are priced on several threads and taken in their own
// order, so the ranking (ties kept in the order of generation) is the one a single thread gives.
#include <gtest/gtest.h>

#include "experiments/recommend.h"

using namespace gradsync;
using namespace gradsync::experiments;

namespace {

Recommendation on_threads(const Plan& plan, int threads) {
  RecommendOptions o;
  o.confirm = 0;
  o.threads = threads;
  return recommend(plan, o);
}

}  // namespace

TEST(Recommend, ManyThreadsRankAsOneDoes) {
  Experiment e;
  e.topology = "source-a-titanx-4gpu";
  e.workload = "source-a-ffnn-lm";
  const Plan plan = make_plan(e);
  const Recommendation one = on_threads(plan, 1);
  const Recommendation many = on_threads(plan, 4);
  // Enough candidates (every strategy, its parameters and server places, 1-4 GPUs) that threads
  // finish out of order, and choices with equal figures whose order only generation decides.
  ASSERT_GT(one.evaluated, 100u);
  EXPECT_EQ(many.evaluated, one.evaluated);
  EXPECT_EQ(many.skipped, one.skipped);
  ASSERT_EQ(many.ranked.size(), one.ranked.size());
  for (std::size_t i = 0; i < one.ranked.size(); ++i) {
    const Choice& a = one.ranked[i];
    const Choice& b = many.ranked[i];
    EXPECT_EQ(b.name() + " " + b.params_text() + " on " + std::to_string(b.gpus), a.name() + " " + a.params_text() + " on " + std::to_string(a.gpus))
        << "rank " << i + 1;
    EXPECT_EQ(b.rank_nodes, a.rank_nodes) << "rank " << i + 1;
    EXPECT_EQ(b.score, a.score) << "rank " << i + 1;
  }
}
