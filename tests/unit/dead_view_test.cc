// Dead sets with generations (proto/FAILOVER.md, "A reducer comes back"): a set of the held
// generation unites, a newer one replaces the view (a rejoin shrank D, then more was lost), an
// older one is stale and changes nothing: a survivor's word that r was lost, from before r came
// back, cannot put r back into D.
#include "core/cluster/dead_view.h"

#include <catch2/catch.hpp>

#include "tests/support/dead_sets.h"

namespace rs::cluster {
namespace {

DeadView view(uint64_t generation, const std::vector<uint32_t>& dead) {
  return {generation, test::deadSet(4, dead)};
}

TEST_CASE("dead view: generations order, older, same, newer") {
  CHECK(age(3, 2) == Age::kOlder);
  CHECK(age(3, 3) == Age::kSame);
  CHECK(age(3, 4) == Age::kNewer);
  CHECK(age(0, UINT64_MAX) == Age::kNewer);
}

TEST_CASE("dead view: the same generation unites, and says whether it grew") {
  DeadView held = view(1, {2});
  CHECK_FALSE(held.learn(view(1, {2})));
  CHECK(held == view(1, {2}));
  CHECK(held.learn(view(1, {0})));
  CHECK(held == view(1, {0, 2}));
  CHECK_FALSE(held.learn(view(1, {0})));
  CHECK(held.toString() == "reducers 0,2 (generation 1)");
}

TEST_CASE("dead view: a newer generation replaces the set, even a smaller one") {
  DeadView held = view(0, {1, 3});
  CHECK(held.learn(view(1, {3})));
  CHECK(held == view(1, {3}));
  // The same set under a newer generation is news too: its lanes are not the old ones.
  CHECK(held.learn(view(2, {3})));
  CHECK(held == view(2, {3}));
}

TEST_CASE("dead view: a stale set (an older generation) changes nothing") {
  DeadView held = view(1, {2});
  CHECK_FALSE(held.learn(view(0, {1})));
  CHECK_FALSE(held.learn(view(0, {1, 2, 3})));
  CHECK(held == view(1, {2}));
}

}  // namespace
}  // namespace rs::cluster
