// The cut-through step: 1/16 of a chunk within [4 KiB, the configured size], and with a known
// link rate no more than 10 ms of one stream's share.
#include "server/cut_through.h"

#include <catch2/catch.hpp>

using rs::server::cutThroughStep;
using rs::server::streamShare;

TEST_CASE("cut-through step: a sixteenth of the chunk, between 4 KiB and the configured size") {
  CHECK(cutThroughStep(1 << 20, 64 << 10, 0) == (64u << 10));   // 1 MiB chunk: 64 KiB
  CHECK(cutThroughStep(1 << 20, 32 << 10, 0) == (32u << 10));   // capped by the part size
  CHECK(cutThroughStep(512 << 10, 64 << 10, 0) == (32u << 10));  // 16 MiB over 32 reducers
  CHECK(cutThroughStep(16 << 10, 64 << 10, 0) == (4u << 10));    // never finer than 4 KiB
}

TEST_CASE("cut-through step: with the link rate, at most 10 ms of one stream's share") {
  // 25 Mbit/s shared by 32 members x 1 stream: 97 kB/s, 10 ms of it is below 4 KiB.
  const uint64_t slow = streamShare(25'000'000 / 8, 32, 1);
  CHECK(slow == 97656);
  CHECK(cutThroughStep(512 << 10, 64 << 10, slow) == (4u << 10));
  // 100 Mbit/s over 8 x 2 streams: 781 kB/s, 10 ms is 7812 bytes.
  const uint64_t mid = streamShare(100'000'000 / 8, 8, 2);
  CHECK(cutThroughStep(1 << 20, 64 << 10, mid) == 7812);
  // 1 Gbit/s over 4 x 4 streams: 7.8 MB/s, 10 ms is 78 kB: the 64 KiB wake is unchanged.
  CHECK(cutThroughStep(1 << 20, 64 << 10, streamShare(1'000'000'000 / 8, 4, 4)) == (64u << 10));
  // 32 Gbit/s over 32 x 1: 125 MB/s, 10 ms is 1.25 MB: the sixteenth of the chunk stays smaller.
  const uint64_t fast = streamShare(32'000'000'000ull / 8, 32, 1);
  CHECK(cutThroughStep(1 << 20, 64 << 10, fast) == (64u << 10));
}

TEST_CASE("cut-through step: an unknown rate or group size does not divide by zero") {
  CHECK(streamShare(0, 32, 1) == 0);
  CHECK(streamShare(1000, 0, 0) == 1000);
  CHECK(cutThroughStep(1 << 20, 64 << 10, streamShare(0, 8, 2)) == (64u << 10));
}
