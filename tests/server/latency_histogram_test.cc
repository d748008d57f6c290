// The per-thread reduce-latency histogram: bucket boundaries (Prometheus `le` is inclusive),
// merging several threads' histograms, and cumulative counts that always end at the total.
#include "server/latency_histogram.h"

#include <catch2/catch.hpp>

namespace {

using rs::server::LatencyHistogram;
using namespace std::chrono_literals;

TEST_CASE("latency histogram: an observation lands in the first bucket whose bound holds it") {
  CHECK(LatencyHistogram::bucketFor(0ns) == 0);
  CHECK(LatencyHistogram::bucketFor(50us) == 0);  // le="5e-05" includes 50 us itself
  CHECK(LatencyHistogram::bucketFor(50001ns) == 1);
  CHECK(LatencyHistogram::bucketFor(1ms) == 4);
  CHECK(LatencyHistogram::bucketFor(10s) == LatencyHistogram::kBoundsSeconds.size() - 1);
  CHECK(LatencyHistogram::bucketFor(11s) == LatencyHistogram::kBoundsSeconds.size());  // +Inf
  CHECK(LatencyHistogram::bucketFor(-1ns) == 0);  // a clock step backwards is not an error
}

TEST_CASE("latency histogram: bounds increase, so cumulative buckets never decrease") {
  const auto& b = LatencyHistogram::kBoundsSeconds;
  for (size_t i = 1; i < b.size(); ++i) CHECK(b[i - 1] < b[i]);
}

TEST_CASE("latency histogram: threads' histograms merge into one cumulative snapshot") {
  LatencyHistogram a, b;
  a.observe(30us);
  a.observe(2ms);
  b.observe(30us);
  b.observe(700ms);
  b.observe(60s);
  LatencyHistogram::Snapshot s;
  a.mergeInto(s);
  b.mergeInto(s);
  CHECK(s.count() == 5);
  CHECK(s.counts[0] == 2);
  CHECK(s.cumulative(0) == 2);                     // <= 50 us
  CHECK(s.cumulative(4) == 2);                     // <= 1 ms
  CHECK(s.cumulative(5) == 3);                     // <= 2.5 ms
  CHECK(s.cumulative(LatencyHistogram::kBoundsSeconds.size() - 1) == 4);  // <= 10 s
  CHECK(s.cumulative(LatencyHistogram::kBoundsSeconds.size()) == 5);      // +Inf
  CHECK(s.sumSeconds() == Approx(30e-6 + 2e-3 + 30e-6 + 0.7 + 60).epsilon(1e-12));
  // Merging is additive: a second merge of the same thread counts it twice.
  a.mergeInto(s);
  CHECK(s.count() == 7);
}

TEST_CASE("latency histogram: an empty snapshot has zero count and sum") {
  LatencyHistogram h;
  LatencyHistogram::Snapshot s;
  h.mergeInto(s);
  CHECK(s.count() == 0);
  CHECK(s.sumSeconds() == 0);
}

}  // namespace
