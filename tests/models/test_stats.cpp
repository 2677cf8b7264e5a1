// The one median and spread every report uses (validate, compare, calibrate, measure).
#include <gtest/gtest.h>

#include "models/support/stats.h"

using gradsync::models::median;
using gradsync::models::relative_spread;

TEST(Stats, MedianOfOddAndEvenCountsInAnyOrder) {
  EXPECT_EQ(median({}), 0);
  EXPECT_EQ(median({3}), 3);
  EXPECT_EQ(median({5, 1, 3}), 3);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);  // the mean of the two middle values, not the upper one
  EXPECT_EQ(median({7, 7, 1, 100}), 7);
}

TEST(Stats, RelativeSpreadIgnoresOneOutlier) {
  EXPECT_EQ(relative_spread({10}), 0);
  EXPECT_EQ(relative_spread({10, 10, 10, 10}), 0);
  // Deviations from the median 10: 1, 0, 1, 0, 990 -> their median 1; 1.4826 x 1 / 10.
  EXPECT_DOUBLE_EQ(relative_spread({9, 10, 11, 10, 1000}), 0.14826);
  EXPECT_EQ(relative_spread({-1, -2}), 0);  // no positive median: no relative figure
}

TEST(Stats, WeightedPercentileGivesEachGroupItsShare) {
  using gradsync::models::weighted_percentile;
  EXPECT_EQ(weighted_percentile({}, 0.5), 0);
  EXPECT_EQ(weighted_percentile({{4, 1}}, 0.05), 4);
  // Equal weights: each value at the middle of its share (Hazen): 1, 2, 3, 4 stand at 1/8, 3/8,
  // 5/8, 7/8; the median halfway between 2 and 3; beyond the outer ones, the outer values.
  EXPECT_DOUBLE_EQ(weighted_percentile({{3, 1}, {1, 1}, {4, 1}, {2, 1}}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(weighted_percentile({{3, 1}, {1, 1}, {4, 1}, {2, 1}}, 0.25), 1.5);
  EXPECT_EQ(weighted_percentile({{3, 1}, {1, 1}, {4, 1}, {2, 1}}, 0.05), 1);
  EXPECT_EQ(weighted_percentile({{3, 1}, {1, 1}, {4, 1}, {2, 1}}, 0.95), 4);
  // Two groups that weigh alike: nine values of 0 (1/9 each) and one of 10 (weight 1). The 10
  // holds half the weight, so the 90th percentile is 10, where unweighted it would be 1.
  std::vector<std::pair<double, double>> groups(9, {0.0, 1.0 / 9});
  groups.push_back({10, 1});
  EXPECT_EQ(weighted_percentile(groups, 0.9), 10);
  EXPECT_EQ(weighted_percentile(groups, 0.2), 0);
  EXPECT_NEAR(weighted_percentile(groups, 0.5), 10 * (0.5 - (8.5 / 9) / 2) / (0.75 - (8.5 / 9) / 2), 1e-12);
}
