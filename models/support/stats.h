// The statistics gradsync reports, defined once: the median (the mean of the two middle values
// for an even count), and a spread that one outlier does not move.
#pragma once

#include <utility>
#include <vector>

namespace gradsync::models {

// 0 for no values.
double median(std::vector<double> values);
// The q-th quantile (0 <= q <= 1) by linear interpolation between the order statistics
// (numpy's default, R's type 7): the 90th percentile is percentile(v, 0.9); 0 for no values.
double percentile(std::vector<double> values, double q);
// The q-th quantile of values that weigh unequally ({value, weight}, weights > 0): each value
// stands at the middle of its share of the total weight, linear between them (with equal
// weights, Hazen's rule, R's type 5); 0 for no values.
double weighted_percentile(std::vector<std::pair<double, double>> values, double q);
// 1.4826 x the median absolute deviation / the median: a relative standard deviation that one
// outlier does not move; 0 for fewer than two values or a median that is not positive.
double relative_spread(const std::vector<double>& values);

}  // namespace gradsync::models
