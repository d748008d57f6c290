// The tally behind a lane's agreed point and a rejoin point (core/failover/rank_tally.h): one
// answer per member, the largest kept, the missing ranks named; a rank outside the group or a
// second answer is refused and counts nothing.
#include "core/failover/rank_tally.h"

#include <catch2/catch.hpp>

namespace rs::failover {
namespace {

TEST_CASE("rank tally: complete once every member answered, with the largest answer") {
  RankTally tally(3);
  CHECK_FALSE(tally.complete());
  CHECK(tally.largest() == 0);
  CHECK(tally.missingRanks() == "0,1,2");
  tally.add(2, 40);
  tally.add(0, 70);
  CHECK_FALSE(tally.complete());
  CHECK(tally.missingRanks() == "1");
  tally.add(1, 10);
  REQUIRE(tally.complete());
  CHECK(tally.largest() == 70);
  CHECK(tally.missingRanks().empty());
  CHECK(tally.worldSize() == 3);
}

TEST_CASE("rank tally: a rank outside the group, or one that answered, is refused") {
  RankTally tally(2);
  CHECK(tally.refusal(0) == RankTally::Refusal::kNone);
  CHECK(tally.refusal(2) == RankTally::Refusal::kOutside);
  CHECK(tally.refusal(UINT32_MAX) == RankTally::Refusal::kOutside);
  tally.add(0, 5);
  CHECK(tally.refusal(0) == RankTally::Refusal::kTwice);
  CHECK(tally.refusal(1) == RankTally::Refusal::kNone);
  CHECK_FALSE(tally.complete());
}

}  // namespace
}  // namespace rs::failover
