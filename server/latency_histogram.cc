#include "server/latency_histogram.h"

#include <algorithm>

namespace rs::server {
namespace {

// The bounds in whole nanoseconds, so that the hot path compares integers.
constexpr std::array<int64_t, LatencyHistogram::kBoundsSeconds.size()> boundsNanoseconds() {
  std::array<int64_t, LatencyHistogram::kBoundsSeconds.size()> out{};
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<int64_t>(LatencyHistogram::kBoundsSeconds[i] * 1e9 + 0.5);
  return out;
}
constexpr auto kBoundsNs = boundsNanoseconds();

}  // namespace

uint64_t LatencyHistogram::Snapshot::count() const { return cumulative(kBuckets - 1); }

uint64_t LatencyHistogram::Snapshot::cumulative(size_t bucket) const {
  uint64_t n = 0;
  for (size_t i = 0; i <= bucket && i < kBuckets; ++i) n += counts[i];
  return n;
}

size_t LatencyHistogram::bucketFor(std::chrono::nanoseconds latency) {
  return static_cast<size_t>(
      std::lower_bound(kBoundsNs.begin(), kBoundsNs.end(), latency.count()) - kBoundsNs.begin());
}

void LatencyHistogram::observe(std::chrono::nanoseconds latency) {
  counts_[bucketFor(latency)].fetch_add(1, std::memory_order_relaxed);
  const auto ns = latency.count() > 0 ? static_cast<uint64_t>(latency.count()) : 0;
  sumNanoseconds_.fetch_add(ns, std::memory_order_relaxed);
}

void LatencyHistogram::mergeInto(Snapshot& into) const {
  for (size_t i = 0; i < kBuckets; ++i) into.counts[i] += counts_[i].load(std::memory_order_relaxed);
  into.sumNanoseconds += sumNanoseconds_.load(std::memory_order_relaxed);
}

}  // namespace rs::server
