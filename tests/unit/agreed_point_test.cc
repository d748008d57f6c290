// The agreed point of a lane: no chunk is taken off it before every member's FAILOVER, then
// F = the largest watermark; watermarks that are not chunks of the lane are errors.
#include "core/failover/agreed_point.h"

#include <catch2/catch.hpp>

namespace rs::failover {
namespace {

// Chunk number j of reducer `home`'s stream `stream` (R reducers, K streams).
uint64_t chunkOf(uint32_t home, uint32_t stream, uint64_t j, uint32_t reducers, uint32_t streams) {
  return (stream + j * streams) * reducers + home;
}

TEST_CASE("agreed point: F is the largest watermark, once every member's is in") {
  const uint32_t reducers = 5, streams = 3;
  Result<AgreedPoint> point = AgreedPoint::create(4, {2, 1}, reducers, streams);
  REQUIRE(point.isOk());
  CHECK_FALSE(point->complete());
  CHECK(point->missingRanks() == "0,1,2,3");
  const uint64_t watermarks[] = {
      chunkOf(2, 1, 7, reducers, streams), chunkOf(2, 1, 9, reducers, streams),
      chunkOf(2, 1, 0, reducers, streams), chunkOf(2, 1, 9, reducers, streams)};
  for (uint32_t rank : {3u, 0u, 2u}) REQUIRE(point->add(rank, watermarks[rank]).isOk());
  CHECK_FALSE(point->complete());
  CHECK(point->missingRanks() == "1");
  REQUIRE(point->add(1, watermarks[1]).isOk());
  REQUIRE(point->complete());
  CHECK(point->missingRanks() == "none");
  CHECK(point->watermark() == chunkOf(2, 1, 9, reducers, streams));
  for (uint64_t j : {0u, 7u, 8u}) CHECK(point->drops(chunkOf(2, 1, j, reducers, streams)));
  for (uint64_t j : {9u, 10u, 1000u})
    CHECK_FALSE(point->drops(chunkOf(2, 1, j, reducers, streams)));
}

TEST_CASE("agreed point: bad FAILOVERs are errors, and leave the point as it was") {
  CHECK_FALSE(AgreedPoint::create(0, {0, 0}, 2, 1).isOk());
  CHECK_FALSE(AgreedPoint::create(2, {0, 0}, 2, 0).isOk());
  CHECK_FALSE(AgreedPoint::create(2, {2, 0}, 2, 1).isOk());
  CHECK_FALSE(AgreedPoint::create(2, {1, 1}, 2, 1).isOk());
  Result<AgreedPoint> point = AgreedPoint::create(2, {1, 0}, 4, 2);
  REQUIRE(point.isOk());
  const auto refused = [&](uint32_t rank, uint64_t watermark, const char* why) {
    const Status s = point->add(rank, watermark);
    INFO(s.toString());
    CHECK(s.code() == StatusCode::kProtocolError);
    CHECK_THAT(s.message(), Catch::Matchers::Contains(why));
  };
  refused(2, 1, "the group has 2 members");
  refused(0, 2, "belongs to reducer 2 stream 0");  // another reducer's chunk
  refused(0, 5, "belongs to reducer 1 stream 1");  // its other stream
  REQUIRE(point->add(0, 9).isOk());                // reducer 1, stream (9 / 4) mod 2 = 0
  refused(0, 17, "came twice");
  CHECK_FALSE(point->complete());
  REQUIRE(point->add(1, 1).isOk());
  CHECK(point->watermark() == 9);
}

}  // namespace
}  // namespace rs::failover
