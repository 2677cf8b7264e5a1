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
