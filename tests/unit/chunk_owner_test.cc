// The owner of a chunk under a dead set (proto/FAILOVER.md, "Terms"), by its properties over
// every list of 1 to 64 reducers: every dead set of up to three for short lists, seeded random
// ones for long lists.
#include "core/cluster/chunk_owner.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "core/cluster/sharding.h"
#include "tests/support/dead_sets.h"

namespace rs::cluster {
namespace {

constexpr uint32_t kMaxListed = 64;       // the longest list the properties run over
constexpr uint32_t kExhaustiveUpTo = 12;  // every dead set of up to three, up to here

using test::deadSet;

uint32_t owner(uint64_t chunk, const DeadSet& dead) {
  Result<uint32_t> o = chunkOwner(chunk, dead);
  REQUIRE(o.isOk());
  return *o;
}

// Every dead set, with at least one reducer live, that the properties are checked under: for
// short lists all of size 1 to 3, for long ones seeded random sets of sizes 1, 2, 3, R/4, R/2
// and R - 1, and a run of R/2 consecutive reducers (losses of one zone or pool).
void forEachDeadSet(uint32_t reducers, const std::function<void(const DeadSet&)>& f) {
  if (reducers <= kExhaustiveUpTo) {
    for (uint32_t a = 0; a < reducers; ++a) {
      if (reducers > 1) f(deadSet(reducers, {a}));
      for (uint32_t b = a + 1; b < reducers; ++b) {
        if (reducers > 2) f(deadSet(reducers, {a, b}));
        for (uint32_t c = b + 1; c < reducers && reducers > 3; ++c) f(deadSet(reducers, {a, b, c}));
      }
    }
    return;
  }
  std::mt19937_64 rng(reducers);
  for (uint32_t size : {1u, 2u, 3u, reducers / 4, reducers / 2, reducers - 1}) {
    std::vector<uint32_t> all(reducers);
    for (uint32_t r = 0; r < reducers; ++r) all[r] = r;
    std::shuffle(all.begin(), all.end(), rng);
    f(deadSet(reducers, {all.begin(), all.begin() + size}));
  }
  std::vector<uint32_t> run;
  for (uint32_t r = 0; r < reducers / 2; ++r) run.push_back((reducers / 3 + r) % reducers);
  f(deadSet(reducers, run));
}

// Chunk numbers run on across a job's collectives: windows at the start and far into a job.
const uint64_t kStarts[] = {0, (uint64_t{1} << 40) + 12345};

TEST_CASE("chunk owner: with no reducer dead the owner is the home") {
  for (uint32_t reducers = 1; reducers <= kMaxListed; ++reducers) {
    const DeadSet none = deadSet(reducers, {});
    for (uint64_t c = 0; c < 4 * reducers; ++c)
      CHECK(owner(c, none) == reducerForChunk(c, reducers));
  }
}

TEST_CASE("chunk owner: always live, and the home while the home is live") {
  for (uint32_t reducers = 2; reducers <= kMaxListed; ++reducers) {
    forEachDeadSet(reducers, [&](const DeadSet& dead) {
      for (uint64_t start : kStarts) {
        for (uint64_t c = start; c < start + 3 * reducers * (reducers - 1); ++c) {
          const uint32_t o = owner(c, dead);
          const uint32_t home = reducerForChunk(c, reducers);
          if (o >= reducers || dead.contains(o) || (!dead.contains(home) && o != home))
            FAIL("R=" << reducers << " D={" << dead.toString() << "} chunk " << c << ": owner "
                      << o);
        }
      }
    });
  }
}

TEST_CASE("chunk owner: every reducer dead is an error that names them, for one reducer too") {
  for (uint32_t reducers : {1u, 2u, 5u}) {
    std::vector<uint32_t> all;
    for (uint32_t r = 0; r < reducers; ++r) all.push_back(r);
    const Result<uint32_t> o = chunkOwner(7, deadSet(reducers, all));
    REQUIRE_FALSE(o.isOk());
    CHECK(o.status().code() == StatusCode::kUnavailable);
    CHECK_THAT(o.status().message(),
               Catch::Matchers::Contains("every reducer of the list is lost"));
  }
  CHECK(owner(7, deadSet(5, {0, 1, 3, 4})) == 2);  // the last one standing takes everything
}

// How many chunks of [start, start + count) each reducer owns under D.
std::vector<uint64_t> ownedCounts(const DeadSet& dead, uint64_t start, uint64_t count) {
  std::vector<uint64_t> n(dead.reducers());
  for (uint64_t c = start; c < start + count; ++c) ++n[owner(c, dead)];
  return n;
}

TEST_CASE("chunk owner: one loss spreads the lost reducer's chunks exactly evenly") {
  // Proved: the lost home's chunks in any R (R - 1) consecutive chunks have R - 1 consecutive
  // values of t = c / R, so t mod (R - 1) takes each value once and each survivor gets exactly
  // one of them. Checked over four such cycles from several starts.
  for (uint32_t reducers = 2; reducers <= kMaxListed; ++reducers) {
    const uint64_t window = uint64_t{4} * reducers * (reducers - 1);
    // Every reducer lost in turn on short lists; the first, a middle and the last on long ones.
    std::vector<uint32_t> losses{0, reducers / 2, reducers - 1};
    if (reducers <= kExhaustiveUpTo) {
      losses.resize(reducers);
      std::iota(losses.begin(), losses.end(), 0);
    }
    for (uint32_t lost : losses) {
      const DeadSet dead = deadSet(reducers, {lost});
      for (uint64_t start : {kStarts[0], kStarts[1], uint64_t{lost} * 7 + 3}) {
        const std::vector<uint64_t> n = ownedCounts(dead, start, window);
        for (uint32_t r = 0; r < reducers; ++r)
          if (r != lost && n[r] != window / reducers + 4)
            FAIL("R=" << reducers << " lost " << lost << " from chunk " << start << ": reducer "
                      << r << " owns " << n[r] << " of " << window);
      }
    }
  }
}

// The busiest survivor's load (its own chunks and those it took over) over the least busy one's.
double spread(const DeadSet& dead, uint64_t start, uint64_t count) {
  const std::vector<uint64_t> n = ownedCounts(dead, start, count);
  uint64_t most = 0, least = UINT64_MAX;
  for (uint32_t r = 0; r < dead.reducers(); ++r) {
    if (dead.contains(r)) continue;
    most = std::max(most, n[r]);
    least = std::min(least, n[r]);
  }
  return static_cast<double>(most) / static_cast<double>(least);
}

TEST_CASE("chunk owner: two or three losses spread exactly evenly too") {
  // Proved: a chunk's m-th probe takes digit m of t in the mixed radix (R-1)(R-2)..., plus an
  // offset fixed by the lower digits, among the reducers not yet probed: the chunks whose first
  // m probes were the same (one class) rotate over every other reducer, one each per R-1-m of
  // them. So with k reducers lost each survivor owns exactly as many as any other in every
  // R ...(R-k) consecutive chunks. Checked for k = 2 (every pair up to R = 12, then
  // seeded pairs and a pair of neighbours) and k = 3 (every triple up to R = 10).
  for (uint32_t reducers = 3; reducers <= kMaxListed; ++reducers) {
    if (reducers > 16 && reducers != 25 && reducers != 33 && reducers != kMaxListed) continue;
    const uint64_t window = uint64_t{reducers} * (reducers - 1) * (reducers - 2);
    forEachDeadSet(reducers, [&](const DeadSet& dead) {
      if (dead.size() != 2) return;
      for (uint64_t start : kStarts)
        if (spread(dead, start, window) != 1.0)
          FAIL("R=" << reducers << " D={" << dead.toString() << "} from chunk " << start
                    << ": the busiest survivor owns " << spread(dead, start, window)
                    << " times the least busy one's chunks");
    });
    if (reducers > kExhaustiveUpTo) {
      const DeadSet neighbours = deadSet(reducers, {reducers / 2, reducers / 2 + 1});
      CHECK(spread(neighbours, kStarts[1], window) == 1.0);
    }
  }
  for (uint32_t reducers = 4; reducers <= 10; ++reducers) {
    const uint64_t window = uint64_t{reducers} * (reducers - 1) * (reducers - 2) * (reducers - 3);
    forEachDeadSet(reducers, [&](const DeadSet& dead) {
      if (dead.size() == 3 && spread(dead, kStarts[1], window) != 1.0)
        FAIL("R=" << reducers << " D={" << dead.toString() << "}: the busiest survivor owns "
                  << spread(dead, kStarts[1], window) << " times the least busy one's chunks");
    });
  }
}

TEST_CASE("chunk owner: many losses in a row do not pile onto the reducer after them") {
  // Spot capacity is lost a pool or zone at a time, and a list often names a pool's reducers
  // in a row. The survivors then share the load within a few percent (measured: at most 2%
  // here), where probing the next reducers in list order would give the first one after the
  // run 4.7 (R = 25) and 11.5 (R = 64) times the load of the others.
  std::vector<uint32_t> twelve(12), thirtyTwo(32), most(60);
  std::iota(twelve.begin(), twelve.end(), 0);
  std::iota(thirtyTwo.begin(), thirtyTwo.end(), 16);
  std::iota(most.begin(), most.end(), 2);
  for (const DeadSet& dead : {deadSet(25, twelve), deadSet(64, thirtyTwo), deadSet(64, most)}) {
    for (uint64_t start : kStarts) {
      INFO("R=" << dead.reducers() << " D={" << dead.toString() << "} from chunk " << start);
      CHECK(spread(dead, start, uint64_t{1} << 18) < 1.05);
    }
  }
}

TEST_CASE("chunk owner: a further loss moves only the chunks the newly lost reducer owned") {
  // Hence never a chunk in progress on a healthy reducer, and members that adopt the losses in
  // different orders agree at every step.
  for (uint32_t reducers = 3; reducers <= kMaxListed; ++reducers) {
    forEachDeadSet(reducers, [&](const DeadSet& dead) {
      if (dead.liveCount() < 2) return;
      std::vector<uint32_t> live;
      for (uint32_t r = 0; r < reducers; ++r)
        if (!dead.contains(r)) live.push_back(r);
      // A few next losses: the first, a middle and the last live reducer.
      for (uint32_t next : {live.front(), live[live.size() / 2], live.back()}) {
        DeadSet more = dead;
        REQUIRE(more.add(next).isOk());
        for (uint64_t c = kStarts[1]; c < kStarts[1] + 2 * reducers * (reducers - 1); ++c) {
          const uint32_t before = owner(c, dead);
          const uint32_t after = owner(c, more);
          if (before != next && after != before)
            FAIL("R=" << reducers << " D={" << dead.toString() << "} then " << next << ": chunk "
                      << c << " moved from " << before << " to " << after);
        }
      }
    });
  }
}

}  // namespace
}  // namespace rs::cluster
