// The reducer's side of commits (proto/FAILOVER.md, "What each member keeps"), spoken to by raw
// members on loopback: a stream's chunks are committed to every member once every member has
// acknowledged them (RECEIVED), the lowest watermark first; an acknowledgement the protocol
// does not allow closes the sender's stream and fails its group with the reason, while a
// healthy group on the same reducer stays exact.
#include <catch2/catch.hpp>

#include <asio/error.hpp>

#include <string>

#include "tests/support/healthy_group.h"
#include "tests/support/local_pool.h"
#include "tests/support/raw_member.h"
#include "tests/support/wait_until.h"

namespace rs::test {
namespace {

using Catch::Matchers::Contains;

constexpr uint32_t kChunkCount = 1000;  // elements a chunk

}  // namespace

TEST_CASE("the reducer commits a stream's chunks to every member once every member has "
          "acknowledged them, the lowest acknowledgement first",
          "[commit]") {
  LocalPool pool(1);
  asio::io_context io;
  const GroupId group = GroupId::random();
  RawMember m0(io, pool.endpoints()[0].port, group, 2, 0);
  RawMember m1(io, pool.endpoints()[0].port, group, 2, 1);
  for (uint64_t chunk = 0; chunk < 3; ++chunk) {
    m0.sendChunk(chunk, kChunkCount);
    m1.sendChunk(chunk, kChunkCount);
  }
  for (uint64_t chunk = 0; chunk < 3; ++chunk) {
    m0.readResult(chunk, kChunkCount);
    m1.readResult(chunk, kChunkCount);
  }
  // Rank 0 holds all three, rank 1 only the first: chunk 0 is committed, to both.
  m0.sendReceived(2);
  m1.sendReceived(0);
  CHECK(m0.readCommit() == 0);
  CHECK(m1.readCommit() == 0);
  // Rank 1 catches up: the rest.
  m1.sendReceived(2);
  CHECK(m0.readCommit() == 2);
  CHECK(m1.readCommit() == 2);
  // And the stream goes on: the next chunk, acknowledged, committed.
  m0.sendChunk(3, kChunkCount);
  m1.sendChunk(3, kChunkCount);
  m0.readResult(3, kChunkCount);
  m1.readResult(3, kChunkCount);
  m1.sendReceived(3);
  m0.sendReceived(3);
  CHECK(m0.readCommit() == 3);
  CHECK(m1.readCommit() == 3);
}

TEST_CASE("a RECEIVED for a result the reducer never sent, or one that does not rise, fails "
          "the sender's group with the reason, and a healthy group on the same reducer stays "
          "exact",
          "[commit]") {
  struct Bad {
    const char* what;
    uint64_t chunksBefore;  // chunks reduced (and read) before the bad RECEIVED
    uint64_t firstAck;      // a valid RECEIVED sent first, if below chunksBefore
    uint64_t badAck;
    const char* reason;
  };
  const Bad bad = GENERATE(
      Bad{"before any result", 0, 0, 0,
          "RECEIVED for chunk 0, but this reducer has sent no result on this stream yet"},
      Bad{"ahead of the results sent", 2, 9, 2,
          "RECEIVED for chunk 2, whose result this reducer has not sent (the last it sent on "
          "this stream is chunk 1)"},
      Bad{"going back", 2, 1, 0,
          "RECEIVED for chunk 0 after RECEIVED for chunk 1: a member's acknowledgements must "
          "increase"},
      Bad{"repeated", 2, 1, 1, "RECEIVED for chunk 1 after RECEIVED for chunk 1"});
  CAPTURE(bad.what);
  LocalPool pool(1);
  HealthyGroupBeside healthy(pool.endpoints());
  REQUIRE(healthy.running());

  asio::io_context io;
  const GroupId group = GroupId::random();
  RawMember m0(io, pool.endpoints()[0].port, group, 2, 0);
  RawMember m1(io, pool.endpoints()[0].port, group, 2, 1);
  for (uint64_t chunk = 0; chunk < bad.chunksBefore; ++chunk) {
    m0.sendChunk(chunk, kChunkCount);
    m1.sendChunk(chunk, kChunkCount);
    m0.readResult(chunk, kChunkCount);
    m1.readResult(chunk, kChunkCount);
  }
  constexpr auto kOutOfOrder = static_cast<size_t>(server::FrameRejection::kOutOfOrder);
  const uint64_t rejectedBefore = pool.reducer(0).dataPlane().stats().framesRejected[kOutOfOrder];
  if (bad.firstAck < bad.chunksBefore) m1.sendReceived(bad.firstAck);
  m1.sendReceived(bad.badAck);
  // The other member is told why; the sender's stream is closed (a protocol error).
  CHECK_THAT(m0.readAbort(), Contains(std::string("rank 1 stream 0: ") + bad.reason));
  wire::HeaderBytes next;
  std::error_code ec;
  asio::read(m1.socket(), asio::buffer(next), ec);
  CHECK((ec == asio::error::eof || ec == asio::error::connection_reset));
  CHECK(pool.reducer(0).dataPlane().stats().framesRejected[kOutOfOrder] == rejectedBefore + 1);

  // The reducer goes on serving the healthy group, exactly.
  CHECK(healthy.finish().toString() == "OK");
}

}  // namespace rs::test
