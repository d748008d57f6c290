// The rejoin point of a restarted reducer (proto/FAILOVER.md, "A reducer comes back"): T is the
// largest answer, once every member answered, and a member's bytes that break the rule (a rank
// outside the group, a second answer) are errors, never a point.
#include "core/failover/rejoin_point.h"

#include <catch2/catch.hpp>

namespace rs::failover {
namespace {

TEST_CASE("rejoin point: T is the largest answer, known once every member answered") {
  RejoinPoint point(3);
  CHECK_FALSE(point.complete());
  CHECK(point.missingRanks() == "0,1,2");
  REQUIRE(point.add(1, 120).isOk());
  REQUIRE(point.add(0, 100).isOk());
  CHECK_FALSE(point.complete());
  CHECK(point.missingRanks() == "2");
  REQUIRE(point.add(2, 100).isOk());
  REQUIRE(point.complete());
  CHECK(point.at() == 120);
  CHECK(point.missingRanks().empty());
}

TEST_CASE("rejoin point: members that answered alike, and chunk 0 (a group that never ran)") {
  RejoinPoint zero(2);
  REQUIRE(zero.add(0, 0).isOk());
  REQUIRE(zero.add(1, 0).isOk());
  CHECK(zero.at() == 0);
  RejoinPoint one(1);
  REQUIRE(one.add(0, UINT64_MAX).isOk());
  CHECK(one.at() == UINT64_MAX);
}

TEST_CASE("rejoin point: a rank outside the group or a second answer is refused") {
  RejoinPoint point(2);
  Status outside = point.add(2, 5);
  CHECK(outside.code() == StatusCode::kProtocolError);
  CHECK(outside.message() == "JOIN from rank 2, outside the group's 2 members");
  REQUIRE(point.add(0, 5).isOk());
  Status twice = point.add(0, 9);
  CHECK(twice.code() == StatusCode::kProtocolError);
  CHECK(twice.message() == "a second JOIN from rank 0 (chunk 9)");
  CHECK_FALSE(point.complete());
  CHECK(point.at() == 5);  // the refused answer counted for nothing
}

}  // namespace
}  // namespace rs::failover
