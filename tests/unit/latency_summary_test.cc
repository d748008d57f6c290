#include "bench/latency_summary.h"

#include <catch2/catch.hpp>

using rs::bench::nearestRank;
using rs::bench::summarize;

TEST_CASE("latency summary: median, p99, mean and min") {
  const auto s = summarize({5, 1, 4, 2, 3});
  CHECK(s.median == 3);
  CHECK(s.p99 == 5);
  CHECK(s.mean == 3);
  CHECK(s.min == 1);
  CHECK(summarize({4, 1, 3, 2}).median == 2.5);
  CHECK(summarize({}).median == 0);
}

TEST_CASE("p99 is a nearest rank, never interpolated") {
  std::vector<double> sorted;
  for (int i = 1; i <= 200; ++i) sorted.push_back(i);
  CHECK(nearestRank(sorted, 0.99) == 198);
  CHECK(nearestRank(sorted, 0.5) == 100);
  CHECK(nearestRank(std::vector<double>(sorted.begin(), sorted.begin() + 50), 0.99) == 50);
  CHECK(nearestRank({7}, 0.99) == 7);
}
