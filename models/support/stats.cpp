#include "models/support/stats.h"

#include <algorithm>
#include <cmath>

namespace gradsync::models {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2), v.end());
  const double upper = v[n / 2];
  if (n % 2) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2));
  return (lower + upper) / 2;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

double weighted_percentile(std::vector<std::pair<double, double>> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double total = 0;
  for (const auto& [value, weight] : v) total += weight;
  q = std::clamp(q, 0.0, 1.0);
  double before = 0, previous_at = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double at = (before + v[i].second / 2) / total;
    if (q <= at) {
      if (i == 0) return v[0].first;
      return v[i - 1].first + (q - previous_at) / (at - previous_at) * (v[i].first - v[i - 1].first);
    }
    before += v[i].second;
    previous_at = at;
  }
  return v.back().first;
}

double relative_spread(const std::vector<double>& v) {
  const double m = median(v);
  if (v.size() < 2 || !(m > 0)) return 0;
  std::vector<double> deviation;
  deviation.reserve(v.size());
  for (double x : v) deviation.push_back(std::fabs(x - m));
  return 1.4826 * median(std::move(deviation)) / m;
}

}  // namespace gradsync::models
