// Median, p99, mean and minimum of a set of timings, for the floors' tables (tcp_pingpong).
// Header-only so that tests/unit can check it without the benchmarks being built.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace rs::bench {

struct LatencySummary {
  double median = 0, p99 = 0, mean = 0, min = 0;
};

// The nearest-rank percentile (q in (0, 1]) of sorted samples: the smallest sample with at
// least q of them at or below it, so p99 of 50 samples is the largest and never interpolated.
inline double nearestRank(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

inline LatencySummary summarize(std::vector<double> samples) {
  if (samples.empty()) return {};
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  // The median of an even count is the mean of the middle two, as usual.
  const double median = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  return {median, nearestRank(samples, 0.99),
          std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n),
          samples.front()};
}

}  // namespace rs::bench
