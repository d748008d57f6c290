// How finely a slot cuts through: how much of a contribution a read waits for, and how much a
// RESULT part carries at least. Pure arithmetic, so that the bounds are tested on their own.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace rs::server {

// Cut-through needs several steps per chunk: a contribution's read wakes, and a RESULT part
// goes out, at least every 1/16 of the chunk (no finer than 4 KiB). With only the fixed 64 KiB
// wake, a 64 KiB chunk (1 MiB over 16 reducers) was read whole before any of it was summed,
// so its download began when its upload ended: 360 ms for 1 MiB at W=16 over 50 Mbit/s links,
// against 180 ms of link time.
inline constexpr uint64_t kCutThroughSteps = 16;
inline constexpr uint64_t kMinCutThroughStepBytes = 4 << 10;

// With the link rate known (--link-gbps), a step is also at most what one of the group's
// W x K streams carries in 10 ms at its share of the link. The first result waits for a step
// from every member and the last trails the upload by a step to every member, so a 1/16-chunk
// step cost 1/16 of the transfer at each end when a collective is one chunk per reducer:
// 16 MiB at W=R=32 over 25 Mbit/s reached 0.85 of the link, 64 MiB 0.94. On fast links the
// 1/16 bound stays the smaller (W=4 x 4 streams at 1 Gbit/s: 78 kB in 10 ms against a 64 KiB
// wake), which keeps the wake-ups per byte, and the reducer's CPU, where they were.
inline constexpr auto kCutThroughTime = std::chrono::milliseconds(10);

// `atMost`: the configured wake or part size; `streamBytesPerSecond`: one stream's share of
// the link (0: unknown, no time bound).
inline uint64_t cutThroughStep(uint64_t chunkBytes, uint64_t atMost,
                               uint64_t streamBytesPerSecond) {
  uint64_t step =
      std::min(atMost, std::max(kMinCutThroughStepBytes, chunkBytes / kCutThroughSteps));
  if (streamBytesPerSecond > 0) {
    const uint64_t timed = streamBytesPerSecond * kCutThroughTime.count() / 1000;
    step = std::min(step, std::max(kMinCutThroughStepBytes, timed));
  }
  return step;
}

// One stream's share of a link of `linkBytesPerSecond` when all W x K of a group's streams
// are busy (0 when the rate is unknown).
inline uint64_t streamShare(uint64_t linkBytesPerSecond, uint32_t worldSize, uint32_t streams) {
  return linkBytesPerSecond /
         (std::max<uint64_t>(1, worldSize) * std::max<uint64_t>(1, streams));
}

}  // namespace rs::server
