// The dead set: a plain set over the reducer list, so what members learned in any order merges
// to the same set; bad indices are errors, never undefined behaviour.
#include "core/cluster/dead_set.h"

#include <algorithm>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/support/dead_sets.h"
#include "tests/support/require_invalid.h"

namespace rs::cluster {
namespace {

TEST_CASE("dead set: a list of 1 to kMaxReducers reducers, none dead at first") {
  test::requireInvalid(DeadSet::none(0), "0 reducers");
  test::requireInvalid(DeadSet::none(DeadSet::kMaxReducers + 1), "1025 reducers");
  for (uint32_t r : {1u, 2u, 64u, 65u, DeadSet::kMaxReducers}) {
    const DeadSet d = test::deadSet(r, {});
    CHECK(d.empty());
    CHECK(d.reducers() == r);
    CHECK(d.liveCount() == r);
    CHECK_FALSE(d.allDead());
    CHECK(d.toString() == "none");
  }
}

TEST_CASE("dead set: add, contains, counts, and an index past the list is an error") {
  DeadSet d = test::deadSet(70, {3, 64, 69});
  CHECK(d.contains(3));
  CHECK(d.contains(64));
  CHECK(d.contains(69));
  CHECK_FALSE(d.contains(4));
  CHECK_FALSE(d.contains(70));  // past the list: not dead, not undefined
  CHECK_FALSE(d.contains(5000));
  CHECK(d.size() == 3);
  CHECK(d.liveCount() == 67);
  CHECK(d.toString() == "3,64,69");
  REQUIRE(d.add(3).isOk());  // again: no change
  CHECK(d.size() == 3);
  const Status past = d.add(70);
  CHECK(past.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(past.message(), Catch::Matchers::Contains("reducer 70") &&
                                 Catch::Matchers::Contains("70 reducers (0..69)"));
  CHECK(d.size() == 3);
  // A list of losses from a member or a frame: in any order, with repeats; one past the list
  // refuses the whole set.
  CHECK(test::deadSet(70, {69, 3, 64, 3}) == d);
  test::requireInvalid(DeadSet::of(4, std::vector<uint32_t>{1, 4}), "reducer 4 declared lost");
  test::requireInvalid(DeadSet::of(0, {}), "0 reducers");
}

TEST_CASE("dead set: every reducer dead is seen, for one reducer too") {
  DeadSet one = test::deadSet(1, {0});
  CHECK(one.allDead());
  CHECK(one.liveCount() == 0);
  DeadSet d = test::deadSet(3, {0, 2});
  CHECK_FALSE(d.allDead());
  REQUIRE(d.add(1).isOk());
  CHECK(d.allDead());
}

TEST_CASE("dead set: the union is the same whatever the order members learned the losses in") {
  std::mt19937_64 rng(27);
  for (uint32_t reducers : {2u, 7u, 64u, 65u, 200u, DeadSet::kMaxReducers}) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<uint32_t> lost(std::uniform_int_distribution<uint32_t>(1, reducers)(rng));
      for (uint32_t& r : lost) r = static_cast<uint32_t>(rng() % reducers);
      const DeadSet inOrder = test::deadSet(reducers, lost);
      std::shuffle(lost.begin(), lost.end(), rng);
      const DeadSet shuffled = test::deadSet(reducers, lost);
      CHECK(shuffled == inOrder);
      // Two members each saw part of the losses (overlapping); either union gives the set.
      const size_t cut = rng() % (lost.size() + 1);
      DeadSet a = test::deadSet(reducers, {lost.begin(), lost.begin() + static_cast<long>(cut)});
      DeadSet b = test::deadSet(reducers, {lost.begin() + static_cast<long>(cut / 2), lost.end()});
      DeadSet ab = a, ba = b;
      REQUIRE(ab.unite(b).isOk());
      REQUIRE(ba.unite(a).isOk());
      CHECK(ab == inOrder);
      CHECK(ba == inOrder);
      std::sort(lost.begin(), lost.end());
      lost.erase(std::unique(lost.begin(), lost.end()), lost.end());
      CHECK(ab.size() == lost.size());
    }
  }
}

TEST_CASE("dead set: sets over lists of different lengths do not unite") {
  DeadSet a = test::deadSet(4, {1});
  const Status s = a.unite(test::deadSet(5, {1}));
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Matchers::Contains("same reducer list"));
  CHECK(a == test::deadSet(4, {1}));
}

TEST_CASE("dead set: deadBelow and nthDead number the dead reducers in order") {
  std::mt19937_64 rng(5);
  for (uint32_t reducers : {1u, 63u, 64u, 65u, 129u, DeadSet::kMaxReducers}) {
    std::vector<uint32_t> lost;
    for (uint32_t r = 0; r < reducers; ++r)
      if (rng() % 3 == 0) lost.push_back(r);
    const DeadSet d = test::deadSet(reducers, lost);
    for (uint32_t n = 0; n < lost.size(); ++n) {
      CHECK(d.nthDead(n) == lost[n]);
      CHECK(d.deadBelow(lost[n]) == n);
    }
    CHECK(d.nthDead(static_cast<uint32_t>(lost.size())) == reducers);  // none: past the list
    CHECK(d.deadBelow(reducers) == lost.size());
    CHECK(d.deadBelow(100000) == lost.size());
  }
}

}  // namespace
}  // namespace rs::cluster
