// The member's commit ledger without sockets: a home's COMMITs move its watermark in order; once
// it is lost, the survivors commit its chunks each on its own lane, out of order, and the
// watermark moves over the chunks committed with no gap below them.
#include "client/commit_ledger.h"

#include <catch2/catch.hpp>

#include "core/cluster/chunk_owner.h"

namespace rs::client {

TEST_CASE("commit ledger: a live home's COMMITs move the watermark of its stream") {
  CommitLedger ledger(3, 2);  // chunks of (home 1, stream 0): 1, 7, 13, ...; (1, 1): 4, 10, ...
  CHECK(ledger.watermark(1, 0) == 1);
  CHECK(ledger.watermark(1, 1) == 4);
  CHECK(ledger.streamCommitted(1, 0, 7) == 13);
  CHECK(ledger.watermark(1, 0) == 13);
  CHECK(ledger.watermark(1, 1) == 4);  // another stream's line
  CHECK_FALSE(ledger.streamCommitted(1, 0, 1));  // below the watermark: nothing moves
  CHECK(ledger.committed(7));
  CHECK_FALSE(ledger.committed(13));
  CHECK_FALSE(ledger.committed(4));
}

TEST_CASE("commit ledger: a lost home's chunks committed by its owners out of order") {
  // Four reducers, one stream: home 1's chunks are 1, 5, 9, 13, ...; with reducer 1 lost each
  // goes to one of the three others (chunk_owner.h).
  CommitLedger ledger(4, 1);
  auto dead = cluster::DeadSet::of(4, std::vector<uint32_t>{1});
  REQUIRE(dead.isOk());
  std::vector<uint32_t> owner;
  for (uint64_t c = 1; c <= 25; c += 4) owner.push_back(*cluster::chunkOwner(c, *dead));
  // The owner of chunk 5 commits everything it owns up to 25 first: the watermark stays at 1
  // unless chunk 1 is its own, and what it committed is remembered above it.
  const uint32_t second = owner[1];
  auto moved = ledger.laneCommitted(1, 0, second, *dead, 25, 26);
  REQUIRE(moved.isOk());
  CHECK(ledger.committed(5));
  if (owner[0] != second) {
    CHECK_FALSE(*moved);
    CHECK(ledger.watermark(1, 0) == 1);
    CHECK_FALSE(ledger.committed(1));
  }
  // Every owner commits up to 25: the watermark passes 25.
  for (uint32_t j : {0u, 2u, 3u}) REQUIRE(ledger.laneCommitted(1, 0, j, *dead, 25, 26).isOk());
  CHECK(ledger.watermark(1, 0) == 29);
  for (uint64_t c = 1; c <= 25; c += 4) CHECK(ledger.committed(c));
  CHECK_FALSE(ledger.committed(29));
}

TEST_CASE("commit ledger: a lane COMMIT for a chunk off its line or past every chunk numbered is "
          "an error, and moves nothing") {
  // From the network: before these checks the first walked the line to the end of the chunk
  // numbers, and one near 2^64 wrapped and walked forever.
  CommitLedger ledger(4, 1);
  auto dead = cluster::DeadSet::of(4, std::vector<uint32_t>{1});
  REQUIRE(dead.isOk());
  const uint32_t owner = *cluster::chunkOwner(1, *dead);
  for (uint64_t chunk : {UINT64_MAX - 2, uint64_t{29}}) {  // home 1, stream 0, both
    INFO("chunk " << chunk);
    auto moved = ledger.laneCommitted(1, 0, owner, *dead, chunk, 29);
    REQUIRE_FALSE(moved.isOk());
    CHECK(moved.status().code() == StatusCode::kProtocolError);
    CHECK(moved.status().message().find("numbered only chunks below 29") != std::string::npos);
  }
  auto offLine = ledger.laneCommitted(1, 0, owner, *dead, 6, 29);  // home 2
  REQUIRE_FALSE(offLine.isOk());
  CHECK(offLine.status().message().find("carries none of") != std::string::npos);
  CHECK(ledger.watermark(1, 0) == 1);
  CHECK_FALSE(ledger.committed(1));
  auto moved = ledger.laneCommitted(1, 0, owner, *dead, 1, 29);
  REQUIRE(moved.isOk());
  CHECK(ledger.watermark(1, 0) == 5);
}

}  // namespace rs::client
