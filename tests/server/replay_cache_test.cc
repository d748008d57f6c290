// The per-caller replay cache of the gRPC call proofs (server/replay_cache.h), on its own clock:
// shares, the jobs' total, replays, and expiry that returns a share and forgets the caller.
#include <catch2/catch.hpp>

#include <chrono>

#include "server/replay_cache.h"
#include "tests/support/nonce_of.h"

namespace rs::server {
namespace {

using Clock = ReplayCache::Clock;
constexpr auto kKeep = std::chrono::minutes(10);

using test::nonceOf;

}  // namespace

TEST_CASE("replay cache: a nonce counts once per caller, within that caller's share") {
  ReplayCache cache(kKeep, {.pool = 2, .job = 2, .jobsTotal = 4});
  const auto t = Clock::now();
  CHECK(*cache.remember("team-a", nonceOf(1), t));
  CHECK_FALSE(*cache.remember("team-a", nonceOf(1), t));  // a replay
  CHECK(*cache.remember("team-b", nonceOf(1), t));        // another caller's
  CHECK(*cache.remember("", nonceOf(1), t));              // the pool's identity
  CHECK(*cache.remember("team-a", nonceOf(2), t));
  auto full = cache.remember("team-a", nonceOf(3), t);
  REQUIRE_FALSE(full.isOk());
  CHECK(full.status().code() == StatusCode::kResourceExhausted);
  CHECK(full.status().message().find("job 'team-a' made 2 calls") != std::string::npos);
  // A replay is still told apart from a full share.
  CHECK_FALSE(*cache.remember("team-a", nonceOf(2), t));
  CHECK(cache.callers() == 3);
  CHECK(cache.size() == 4);
}

TEST_CASE("replay cache: the jobs' total bounds every job together, never the pool's share") {
  ReplayCache cache(kKeep, {.pool = 2, .job = 2, .jobsTotal = 3});
  const auto t = Clock::now();
  CHECK(*cache.remember("a", nonceOf(1), t));
  CHECK(*cache.remember("b", nonceOf(1), t));
  CHECK(*cache.remember("c", nonceOf(1), t));
  auto total = cache.remember("d", nonceOf(1), t);
  REQUIRE_FALSE(total.isOk());
  CHECK(total.status().message().find("the jobs on this reducer made 3 calls") !=
        std::string::npos);
  CHECK(total.status().message().find("job 'd'") != std::string::npos);
  CHECK(*cache.remember("", nonceOf(1), t));
  CHECK(*cache.remember("", nonceOf(2), t));
}

TEST_CASE("replay cache: expiry returns the share and forgets callers with nothing current") {
  ReplayCache cache(kKeep, {.pool = 1, .job = 1, .jobsTotal = 2});
  const auto t = Clock::now();
  CHECK(*cache.remember("a", nonceOf(1), t));
  CHECK(*cache.remember("b", nonceOf(1), t + std::chrono::minutes(1)));
  CHECK_FALSE(cache.remember("a", nonceOf(2), t + kKeep - std::chrono::seconds(1)).isOk());
  // At t + keep, a's nonce is forgotten (a may call again, and could replay that nonce only
  // with a timestamp the window no longer admits); b's is still current.
  CHECK(*cache.remember("a", nonceOf(2), t + kKeep));
  CHECK(cache.callers() == 2);
  CHECK(cache.size() == 2);
  // Much later everything expired: the callers themselves are gone.
  CHECK(*cache.remember("", nonceOf(1), t + 3 * kKeep));
  CHECK(cache.callers() == 1);
  CHECK(cache.size() == 1);
}

}  // namespace rs::server
