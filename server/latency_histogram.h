// A latency histogram one io thread writes and a scrape reads: fixed buckets of relaxed atomics,
// so an observation is a bucket search and two uncontended increments (no lock, no allocation,
// no shared cache line with other threads). A scrape merges every thread's histogram into a
// Snapshot; the count is the sum of the buckets, so the +Inf bucket always equals the count even
// while observations land during the merge.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace rs::server {

class LatencyHistogram {
 public:
  // Upper bounds, in seconds, of the finite buckets (Prometheus's `le`). From 50 us (a small
  // chunk on loopback) to 10 s (a chunk stuck behind back-pressure or a slow member).
  static constexpr std::array<double, 17> kBoundsSeconds = {
      50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3,
      50e-3, 100e-3, 250e-3, 500e-3, 1.0,  2.5,    5.0,  10.0};
  static constexpr size_t kBuckets = kBoundsSeconds.size() + 1;  // the last one is +Inf

  struct Snapshot {
    std::array<uint64_t, kBuckets> counts{};  // per bucket, not cumulative
    uint64_t sumNanoseconds = 0;

    uint64_t count() const;
    double sumSeconds() const { return static_cast<double>(sumNanoseconds) * 1e-9; }
    // Observations at or below kBoundsSeconds[i] (i == kBoundsSeconds.size(): all of them).
    uint64_t cumulative(size_t bucket) const;
  };

  // The bucket an observation falls in: the first whose bound is >= it.
  static size_t bucketFor(std::chrono::nanoseconds latency);

  // Only the owning thread calls this.
  void observe(std::chrono::nanoseconds latency);
  // Adds this histogram's counts to `into`. Any thread.
  void mergeInto(Snapshot& into) const;

 private:
  std::array<std::atomic<uint64_t>, kBuckets> counts_{};
  std::atomic<uint64_t> sumNanoseconds_{0};
};

}  // namespace rs::server
