// Lanes and routes under a dead set: every chunk of a lost reducer travels on exactly one
// lane, a lane carries the chunks of one (lost reducer, stream) to one survivor, and its
// numbering on a survivor is dense and invertible.
#include "core/cluster/lane.h"

#include <map>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "core/cluster/chunk_owner.h"
#include "core/cluster/sharding.h"
#include "tests/support/dead_sets.h"

namespace rs::cluster {
namespace {

using test::deadSet;

ChunkRoute route(uint64_t chunk, const DeadSet& dead, uint32_t streams) {
  Result<ChunkRoute> r = chunkRoute(chunk, dead, streams);
  REQUIRE(r.isOk());
  return *r;
}

TEST_CASE("lane: no lane has an index past what a HELLO's 16-bit stream index holds") {
  // K (1 + |D|) stream indices: at K = 256, 255 lost reducers fit (65536), 256 do not. Before
  // this check the index of lane (last lost, 255) was 65791, which a HELLO sent as 255: a
  // normal stream's index.
  std::vector<uint32_t> lost(256);
  std::iota(lost.begin(), lost.end(), 1u);
  const DeadSet fits = deadSet(300, std::vector<uint32_t>(lost.begin(), lost.end() - 1));
  const DeadSet over = deadSet(300, lost);
  CHECK(lanesFit(fits, 256).isOk());
  CHECK(*laneIndex({255, 255}, fits, 256) == 65535);
  const Status tooMany = lanesFit(over, 256);
  CHECK(tooMany.code() == StatusCode::kResourceExhausted);
  CHECK(tooMany.message().find("16-bit stream index") != std::string::npos);
  const Result<uint32_t> index = laneIndex({256, 255}, over, 256);
  REQUIRE_FALSE(index.isOk());
  CHECK(index.status().message() == tooMany.message());
  CHECK_FALSE(chunkRoute(256, over, 256).isOk());  // chunk 256's home is reducer 256
  CHECK(lanesFit(over, 255).isOk());
}

TEST_CASE("lane: a survivor's lanes follow its streams, K per lost reducer in index order") {
  const DeadSet dead = deadSet(8, {6, 1, 3});
  const uint32_t streams = 4;
  CHECK(streamIndicesUnder(dead, streams) == 16);
  CHECK(*laneIndex({1, 0}, dead, streams) == 4);
  CHECK(*laneIndex({1, 3}, dead, streams) == 7);
  CHECK(*laneIndex({3, 2}, dead, streams) == 10);
  CHECK(*laneIndex({6, 3}, dead, streams) == 15);
  std::set<uint32_t> seen;
  for (uint32_t home : {1u, 3u, 6u}) {
    for (uint32_t s = 0; s < streams; ++s) {
      const uint32_t index = *laneIndex({home, s}, dead, streams);
      CHECK(seen.insert(index).second);
      const Result<Lane> back = laneAt(index, dead, streams);
      REQUIRE(back.isOk());
      CHECK(*back == Lane{home, s});
    }
  }
  CHECK(seen == std::set<uint32_t>{4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
}

TEST_CASE("lane: indices that name no lane, and lanes of live reducers, are errors") {
  const DeadSet dead = deadSet(8, {2});
  for (uint32_t index : {0u, 3u, 8u, 9u, 70000u}) {
    const Result<Lane> lane = laneAt(index, dead, 4);
    REQUIRE_FALSE(lane.isOk());
    CHECK(lane.status().code() == StatusCode::kProtocolError);
    CHECK_THAT(lane.status().message(), Catch::Matchers::Contains("is not a lane"));
  }
  CHECK_FALSE(laneAt(4, dead, 0).isOk());
  CHECK_FALSE(laneAt(4, deadSet(8, {}), 4).isOk());  // no reducer lost: no lanes at all
  const Result<uint32_t> live = laneIndex({3, 0}, dead, 4);
  REQUIRE_FALSE(live.isOk());
  CHECK_THAT(live.status().message(), Catch::Matchers::Contains("not lost"));
  CHECK_FALSE(laneIndex({2, 4}, dead, 4).isOk());
  CHECK_FALSE(chunkRoute(0, dead, 0).isOk());
  const Result<ChunkRoute> none = chunkRoute(2, deadSet(2, {0, 1}), 4);
  REQUIRE_FALSE(none.isOk());
  CHECK(none.status().code() == StatusCode::kUnavailable);
}

TEST_CASE("lane: routes keep live homes on their streams and move only lost homes' chunks") {
  for (uint32_t reducers = 1; reducers <= 33; reducers += 4) {
    for (uint32_t streams : {1u, 2u, 3u, 4u, 8u}) {
      const DeadSet none = deadSet(reducers, {});
      for (uint64_t c = 0; c < 2ull * reducers * streams; ++c) {
        const ChunkRoute r = route(c, none, streams);
        CHECK(r.reducer == reducerForChunk(c, reducers));
        CHECK(r.streamIndex == streamForChunk(c, reducers, streams));
        CHECK_FALSE(r.onLane());
      }
    }
  }
}

// Every chunk of [0, count) routed under D, grouped by (reducer, stream index) in the order a
// member sends them (chunk order).
std::map<std::pair<uint32_t, uint32_t>, std::vector<uint64_t>> routed(const DeadSet& dead,
                                                                      uint32_t streams,
                                                                      uint64_t count) {
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint64_t>> on;
  for (uint64_t c = 0; c < count; ++c) {
    const ChunkRoute r = route(c, dead, streams);
    on[{r.reducer, r.streamIndex}].push_back(c);
  }
  return on;
}

TEST_CASE("lane: each lane carries one lost reducer's stream to one survivor, in chunk order") {
  for (const auto& [reducers, lost] :
       std::vector<std::pair<uint32_t, std::vector<uint32_t>>>{{2, {0}},
                                                               {3, {1}},
                                                               {5, {0, 4}},
                                                               {8, {2, 3, 7}},
                                                               {25, {3}},
                                                               {25, {0, 1, 2, 3, 4}},
                                                               {64, {5, 6, 40}}}) {
    const DeadSet dead = deadSet(reducers, lost);
    for (uint32_t streams : {1u, 3u, 4u}) {
      const uint64_t count = uint64_t{reducers} * (reducers - 1) * streams * 4;
      for (const auto& [where, chunks] : routed(dead, streams, count)) {
        const auto [reducer, index] = where;
        INFO("R=" << reducers << " D={" << dead.toString() << "} K=" << streams << " reducer "
                  << reducer << " stream index " << index);
        REQUIRE_FALSE(dead.contains(reducer));
        REQUIRE(index < streamIndicesUnder(dead, streams));
        CHECK(std::is_sorted(chunks.begin(), chunks.end()));
        if (index < streams) {  // a normal stream: only its own home's chunks, never a resent one
          for (uint64_t c : chunks) {
            CHECK(reducerForChunk(c, reducers) == reducer);
            CHECK(streamForChunk(c, reducers, streams) == index);
          }
          continue;
        }
        const Result<Lane> lane = laneAt(index, dead, streams);
        REQUIRE(lane.isOk());
        for (uint64_t c : chunks) {
          CHECK(reducerForChunk(c, reducers) == lane->deadHome);
          CHECK(streamForChunk(c, reducers, streams) == lane->stream);
          CHECK(*chunkOwner(c, dead) == reducer);
        }
      }
    }
  }
}

TEST_CASE("lane: with one loss no lane carries more than a normal stream does") {
  // A survivor j places after the lost reducer gets the chunks with t = c / R = j mod (R - 1),
  // so only the lanes s = j mod gcd(R - 1, K) carry any: K / gcd of the K lanes, each with at
  // most a stream's share (gcd / (R - 1) of it).
  for (uint32_t reducers : {2u, 3u, 5u, 9u, 25u}) {
    for (uint32_t streams : {1u, 2u, 4u, 8u}) {
      const DeadSet dead = deadSet(reducers, {0});
      const uint64_t count = uint64_t{reducers} * (reducers - 1) * streams * 2;
      std::map<uint32_t, uint64_t> normal, lanes;  // busiest stream / lane, per survivor
      std::map<uint32_t, std::set<uint32_t>> used;
      for (const auto& [where, chunks] : routed(dead, streams, count)) {
        auto& busiest = where.second < streams ? normal[where.first] : lanes[where.first];
        busiest = std::max<uint64_t>(busiest, chunks.size());
        if (where.second >= streams) used[where.first].insert(where.second);
      }
      const uint32_t g = std::gcd(reducers - 1, streams);
      for (const auto& [survivor, most] : lanes) {
        INFO("R=" << reducers << " K=" << streams << " survivor " << survivor);
        CHECK(most <= normal[survivor]);
        CHECK(used[survivor].size() == streams / g);
      }
    }
  }
}

}  // namespace
}  // namespace rs::cluster
