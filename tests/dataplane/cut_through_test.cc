// The reducer sends a chunk's result in parts as soon as every member has contributed a prefix
// (cut-through), and holds back a member that runs too far ahead of the others (--max-lead).
// Members are raw sockets speaking the wire protocol, so the test controls exactly how much
// of a chunk each one has sent.
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "core/wire/frame.h"
#include "tests/support/local_pool.h"

namespace rs::test {
namespace {

constexpr uint32_t kPieceBytes = 4096;

// One member's single stream to reducer 0 of a one-reducer pool.
class RawMember {
 public:
  RawMember(asio::io_context& io, uint16_t port, const GroupId& group, uint32_t world,
            uint32_t rank)
      : socket_(io), group_(group), rank_(rank) {
    socket_.connect({asio::ip::make_address("127.0.0.1"), port});
    // A bug must fail the test, not hang it: reads give up after 10 s.
    const timeval tv{10, 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    wire::FrameHeader h;
    h.type = wire::FrameType::kHello;
    h.group = group;
    h.rank = rank;
    h.payloadLength = wire::kHelloPayloadSize;
    wire::HelloPayload hello;
    hello.worldSize = world;
    hello.streamCount = 1;
    hello.reducerCount = 1;
    asio::write(socket_, asio::buffer(wire::encodeHeader(h)));
    asio::write(socket_, asio::buffer(wire::encodeHello(hello)));
    wire::FrameHeader ack = readHeader();
    REQUIRE(ack.type == wire::FrameType::kHelloAck);
    std::array<uint8_t, wire::kHelloAckPayloadSize> payload;
    asio::read(socket_, asio::buffer(payload));
  }

  // The REDUCE header of chunk 0 (seq 0) with `count` fp32 elements.
  void sendHeader(uint32_t count) {
    wire::FrameHeader h;
    h.type = wire::FrameType::kReduce;
    h.group = group_;
    h.rank = rank_;
    h.elemCount = count;
    h.dtype = DataType::kFloat32;
    h.op = ReduceOp::kSum;
    h.payloadLength = count * 4;
    asio::write(socket_, asio::buffer(wire::encodeHeader(h)));
  }
  // Payload elements [from, to): element i is rank + i. With `fragment` > 0 the bytes go out
  // in writes of that many bytes, each its own segment, so reads split elements.
  void sendElements(uint32_t from, uint32_t to, size_t fragment = 0) {
    std::vector<float> values(to - from);
    for (uint32_t i = from; i < to; ++i) values[i - from] = static_cast<float>(rank_ + i);
    if (fragment == 0) {
      asio::write(socket_, asio::buffer(values));
      return;
    }
    const int one = 1;
    ::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    const auto* bytes = reinterpret_cast<const uint8_t*>(values.data());
    const size_t total = values.size() * sizeof(float);
    for (size_t at = 0; at < total; at += fragment) {
      asio::write(socket_, asio::buffer(bytes + at, std::min(fragment, total - at)));
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  wire::FrameHeader readHeader() {
    wire::HeaderBytes bytes;
    asio::read(socket_, asio::buffer(bytes));
    wire::FrameHeader h;
    Status s = wire::decodeHeader(bytes.data(), bytes.size(), {}, &h);
    REQUIRE(s.toString() == "OK");
    return h;
  }
  // Reads one RESULT part and checks it against two members' sum; returns it.
  wire::FrameHeader readResultPart() {
    wire::FrameHeader h = readHeader();
    REQUIRE(h.type == wire::FrameType::kResult);
    std::vector<float> values(h.elemCount);
    asio::read(socket_, asio::buffer(values));
    uint32_t wrong = 0;
    for (uint32_t i = 0; i < h.elemCount; ++i) {
      const auto at = static_cast<float>(h.elemOffset + i);
      if (values[i] != (0 + at) + (1 + at)) ++wrong;
    }
    CHECK(wrong == 0);
    return h;
  }

 private:
  asio::ip::tcp::socket socket_;
  GroupId group_;
  uint32_t rank_;
};

server::ServerConfig smallPieces() {
  server::ServerConfig c = testServerConfig();
  c.ioThreads = 1;
  c.pieceBytes = kPieceBytes;
  return c;
}

}  // namespace

TEST_CASE("a chunk's result starts back as soon as every member has sent a prefix",
          "[cut-through]") {
  LocalPool pool(1, smallPieces());
  asio::io_context io;
  const GroupId group = GroupId::random();
  const uint16_t port = pool.reducer(0).dataPort();
  RawMember m0(io, port, group, 2, 0);
  RawMember m1(io, port, group, 2, 1);
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
  for (RawMember* m : {&m0, &m1}) {
    uint64_t next = kPieceElems;
    while (next < kElems) {
      wire::FrameHeader part = m->readResultPart();
      CHECK(part.elemOffset == next);
      next += part.elemCount;
    }
    CHECK(next == kElems);
  }
}

TEST_CASE("a member too far ahead in a chunk is not read until the others catch up",
          "[cut-through]") {
  server::ServerConfig config = smallPieces();
  config.maxLeadBytes = 2 * kPieceBytes;
  LocalPool pool(1, config);
  asio::io_context io;
  const GroupId group = GroupId::random();
  const uint16_t port = pool.reducer(0).dataPort();
  RawMember m0(io, port, group, 2, 0);
  RawMember m1(io, port, group, 2, 1);
  constexpr uint32_t kElems = 16 * kPieceBytes / 4;
  auto& plane = pool.reducer(0).dataPlane();

  // Rank 0 sends its whole chunk (the kernel's socket buffers take it); rank 1 nothing yet.
  m0.sendHeader(kElems);
  m0.sendElements(0, kElems);
  for (int i = 0; i < 500 && plane.stats().bytesIn < config.maxLeadBytes; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // A read brings at most a piece, so the reducer stops within a piece past the limit...
  const uint64_t readAhead = plane.stats().bytesIn;
  REQUIRE(readAhead >= config.maxLeadBytes);
  REQUIRE(readAhead < config.maxLeadBytes + kPieceBytes);
  // ...and stays there while rank 1 has contributed nothing.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(plane.stats().bytesIn == readAhead);

  m1.sendHeader(kElems);
  m1.sendElements(0, kElems);
  for (RawMember* m : {&m0, &m1}) {
    uint64_t next = 0;
    while (next < kElems) {
      wire::FrameHeader part = m->readResultPart();
      CHECK(part.elemOffset == next);
      next += part.elemCount;
    }
    CHECK(next == kElems);
  }
  CHECK(plane.stats().bytesIn == 2ull * kElems * 4);
}

TEST_CASE("elements split between reads are summed exactly and the parts tile the chunk",
          "[cut-through]") {
  server::ServerConfig config = smallPieces();
  config.readWakeBytes = 1;  // wake on every fragment, so that reads end inside elements
  LocalPool pool(1, config);
  asio::io_context io;
  const GroupId group = GroupId::random();
  const uint16_t port = pool.reducer(0).dataPort();
  RawMember m0(io, port, group, 2, 0);
  RawMember m1(io, port, group, 2, 1);
  constexpr uint32_t kElems = 3 * kPieceBytes / 4 + 5;  // not a whole number of pieces
  auto& plane = pool.reducer(0).dataPlane();

  m0.sendHeader(kElems);
  m0.sendElements(0, kElems);
  m1.sendHeader(kElems);
  m1.sendElements(0, 64, 7);  // 7-byte writes: most reads end inside an element
  m1.sendElements(64, kElems, 1000);
  for (RawMember* m : {&m0, &m1}) {
    uint64_t next = 0;
    while (next < kElems) {
      wire::FrameHeader part = m->readResultPart();  // checks every element's sum
      CHECK(part.elemOffset == next);
      next += part.elemCount;
    }
    CHECK(next == kElems);
  }
  CHECK(plane.stats().bytesIn == 2ull * kElems * 4);
}

}  // namespace rs::test
