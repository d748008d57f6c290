// The reducer sends a chunk's result in parts as soon as every member has contributed a prefix
// (cut-through), and holds back a member that runs too far ahead of the others (--max-lead).
// Members are raw sockets speaking the wire protocol, so the test controls exactly how much
// of a chunk each one has sent.
#include <catch2/catch.hpp>
#include <poll.h>

#include <asio/io_context.hpp>
#include <chrono>
#include <thread>

#include "tests/support/healthy_group.h"
#include "tests/support/local_pool.h"
#include "tests/support/raw_member.h"
#include "tests/support/wait_until.h"

namespace rs::test {
namespace {

constexpr uint32_t kPieceBytes = 4096;

server::ServerConfig smallPieces() {
  server::ServerConfig c = testServerConfig();
  c.ioThreads = 1;
  c.pieceBytes = kPieceBytes;
  return c;
}

// A one-reducer pool and the two members of one group, each with one stream to it.
struct TwoMembers {
  explicit TwoMembers(const server::ServerConfig& config)
      : pool(1, config),
        m0(io, pool.reducer(0).dataPort(), group, 2, 0),
        m1(io, pool.reducer(0).dataPort(), group, 2, 1) {}
  server::DataPlane& plane() { return pool.reducer(0).dataPlane(); }

  LocalPool pool;
  asio::io_context io;
  const GroupId group = GroupId::random();
  RawMember m0;
  RawMember m1;
};

// Both members read the rest of chunk 0, from element `from` on, in parts that tile it front
// to back (readResultPart checks every element's sum).
void expectRestOfChunk(TwoMembers& t, uint64_t from, uint64_t elems) {
  for (RawMember* m : {&t.m0, &t.m1}) {
    uint64_t next = from;
    while (next < elems) {
      wire::FrameHeader part = m->readResultPart();
      CHECK(part.elemOffset == next);
      next += part.elemCount;
    }
    CHECK(next == elems);
  }
}

}  // namespace

TEST_CASE("a chunk's result starts back as soon as every member has sent a prefix",
          "[cut-through]") {
  TwoMembers t(smallPieces());
  RawMember& m0 = t.m0;
  RawMember& m1 = t.m1;
  constexpr uint32_t kElems = 4 * kPieceBytes / 4;  // four pieces
  constexpr uint32_t kPieceElems = kPieceBytes / 4;

  m0.sendHeader(kElems);
  m0.sendElements(0, kElems);
  m1.sendHeader(kElems);
  m1.sendElements(0, kPieceElems);
  // Rank 1 has sent one piece of four: exactly that piece comes back, to both.
  for (RawMember* m : {&m0, &m1}) {
    wire::FrameHeader part = m->readResultPart();
    CHECK(part.chunk == 0);
    CHECK(part.elemOffset == 0);
    CHECK(part.elemCount == kPieceElems);
  }
  m1.sendElements(kPieceElems, kElems);
  // The rest follows in parts that tile the chunk front to back.
  expectRestOfChunk(t, kPieceElems, kElems);
}

TEST_CASE("a member too far ahead in a chunk is not read until the others catch up",
          "[cut-through]") {
  server::ServerConfig config = smallPieces();
  config.maxLeadBytes = 2 * kPieceBytes;
  TwoMembers t(config);
  RawMember& m0 = t.m0;
  RawMember& m1 = t.m1;
  constexpr uint32_t kElems = 16 * kPieceBytes / 4;
  auto& plane = t.plane();

  // Rank 0 sends its whole chunk (the kernel's socket buffers take it); rank 1 nothing yet.
  m0.sendHeader(kElems);
  m0.sendElements(0, kElems);
  REQUIRE(waitUntil([&] { return plane.stats().bytesIn >= config.maxLeadBytes; }));
  // A read brings at most a piece, so the reducer stops within a piece past the limit...
  const uint64_t readAhead = plane.stats().bytesIn;
  REQUIRE(readAhead >= config.maxLeadBytes);
  REQUIRE(readAhead < config.maxLeadBytes + kPieceBytes);
  // ...and stays there while rank 1 has contributed nothing.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(plane.stats().bytesIn == readAhead);

  m1.sendHeader(kElems);
  m1.sendElements(0, kElems);
  expectRestOfChunk(t, 0, kElems);
  CHECK(plane.stats().bytesIn == 2ull * kElems * 4);
}

TEST_CASE("a member held back for its lead that disconnects fails its group at once, beside a "
          "healthy group",
          "[cut-through]") {
  server::ServerConfig config = smallPieces();
  config.maxLeadBytes = 2 * kPieceBytes;
  TwoMembers t(config);
  constexpr uint32_t kElems = 16 * kPieceBytes / 4;
  auto& plane = t.plane();
  // Rank 1 is in the chunk with one element; rank 0 sends all of it and is held back, unread.
  t.m1.sendHeader(kElems);
  t.m1.sendElements(0, 1);
  t.m0.sendHeader(kElems);
  t.m0.sendElements(0, kElems);
  REQUIRE(waitUntil([&] { return plane.stats().bytesIn >= 4 + config.maxLeadBytes; }));
  REQUIRE(runHealthyGroup(t.pool.endpoints(), {.rounds = 3}).toString() == "OK");

  // Rank 0 goes away: rank 1 is told at once (within 10 s here; the collective timeout is
  // 300 s), and another group still reduces exactly.
  t.m0.socket().close();
  pollfd ready{t.m1.socket().native_handle(), POLLIN, 0};
  REQUIRE(::poll(&ready, 1, 10000) == 1);
  wire::FrameHeader h = readFrameHeader(t.m1.socket());
  CHECK(h.type == wire::FrameType::kAbort);
  CHECK(runHealthyGroup(t.pool.endpoints(), {.rounds = 3}).toString() == "OK");
}

TEST_CASE("elements split between reads are summed exactly and the parts tile the chunk",
          "[cut-through]") {
  server::ServerConfig config = smallPieces();
  config.readWakeBytes = 1;  // wake on every fragment, so that reads end inside elements
  TwoMembers t(config);
  RawMember& m0 = t.m0;
  RawMember& m1 = t.m1;
  constexpr uint32_t kElems = 3 * kPieceBytes / 4 + 5;  // not a whole number of pieces

  m0.sendHeader(kElems);
  m0.sendElements(0, kElems);
  m1.sendHeader(kElems);
  m1.sendElements(0, 64, 7);  // 7-byte writes: most reads end inside an element
  m1.sendElements(64, kElems, 1000);
  expectRestOfChunk(t, 0, kElems);
  CHECK(t.plane().stats().bytesIn == 2ull * kElems * 4);
}

}  // namespace rs::test
