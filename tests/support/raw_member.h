// A member spoken as raw wire frames over a plain socket, for tests that must control exactly
// what a reducer receives: how much of a chunk, in which pieces, or a broken frame.
#pragma once

#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/wire/auth.h"
#include "core/wire/control_frames.h"
#include "core/wire/frame.h"

namespace rs::test {

// Reads and decodes one frame header (a decoding failure fails the test).
inline wire::FrameHeader readFrameHeader(asio::ip::tcp::socket& socket) {
  wire::HeaderBytes bytes;
  asio::read(socket, asio::buffer(bytes));
  wire::FrameHeader h;
  Status s = wire::decodeHeader(bytes.data(), bytes.size(), {}, &h);
  REQUIRE(s.toString() == "OK");
  return h;
}

// Reads the CHALLENGE a reducer opens every connection with.
inline wire::ChallengePayload readChallenge(asio::ip::tcp::socket& socket) {
  wire::FrameHeader h = readFrameHeader(socket);
  REQUIRE(h.type == wire::FrameType::kChallenge);
  std::array<uint8_t, wire::kChallengePayloadSize> bytes;
  asio::read(socket, asio::buffer(bytes));
  wire::ChallengePayload c;
  REQUIRE(wire::decodeChallenge(bytes.data(), bytes.size(), &c).toString() == "OK");
  return c;
}

// The HELLO frame (header and payload) for `rank` of a group of `world` members, `streams`
// streams, `reducers` reducers; proven with `secret` for `challenge` unless the secret is empty,
// naming `job` (then `secret` is that job's derived secret) unless it is empty; asking for the
// loss bound `lossDetectMs` (0: the reducer's); with the header's HELLO `flags`.
inline std::vector<uint8_t> helloFrame(const wire::ChallengePayload& challenge,
                                       const GroupId& group, uint32_t rank, uint32_t world,
                                       uint32_t streams = 1, uint32_t reducers = 1,
                                       std::string_view secret = {}, std::string_view job = {},
                                       uint32_t lossDetectMs = 0, uint16_t flags = 0) {
  wire::HelloPayload hello;
  hello.worldSize = world;
  hello.streamCount = static_cast<uint16_t>(streams);
  hello.reducerCount = static_cast<uint16_t>(reducers);
  hello.jobName = std::string(job);
  hello.lossDetectMs = lossDetectMs;
  auto made = wire::helloFrame(group, rank, std::move(hello), secret, challenge.nonce, flags);
  REQUIRE(made.isOk());
  std::vector<uint8_t> frame(wire::kHeaderSize + wire::kHelloPayloadSize);
  std::copy(made->header.begin(), made->header.end(), frame.begin());
  std::copy(made->payload.begin(), made->payload.end(), frame.begin() + wire::kHeaderSize);
  return frame;
}

// Reads the reducer's CHALLENGE, then writes a HELLO (see helloFrame).
inline void sendHello(asio::ip::tcp::socket& socket, const GroupId& group, uint32_t rank,
                      uint32_t world, uint32_t streams = 1, uint32_t reducers = 1,
                      std::string_view secret = {}, std::string_view job = {},
                      uint32_t lossDetectMs = 0) {
  const wire::ChallengePayload challenge = readChallenge(socket);
  asio::write(socket, asio::buffer(helloFrame(challenge, group, rank, world, streams, reducers,
                                              secret, job, lossDetectMs)));
}

// Reads the HELLO_ACK that must follow a HELLO.
inline void expectHelloAck(asio::ip::tcp::socket& socket) {
  wire::FrameHeader ack = readFrameHeader(socket);
  REQUIRE(ack.type == wire::FrameType::kHelloAck);
  std::array<uint8_t, wire::kHelloAckPayloadSize> payload;
  asio::read(socket, asio::buffer(payload));
}

// Opens `socket` to the reducer on 127.0.0.1:`port`, from `localAddress` (another loopback
// address, such as 127.0.0.2, to be a different peer) if given, with SO_RCVBUF =
// `receiveBuffer` if positive (set before connecting, so that the window is that small).
inline void connectRaw(asio::ip::tcp::socket& socket, uint16_t port,
                       const char* localAddress = nullptr, int receiveBuffer = 0) {
  socket.open(asio::ip::tcp::v4());
  if (receiveBuffer > 0)
    ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVBUF, &receiveBuffer,
                 sizeof(receiveBuffer));
  if (localAddress != nullptr) socket.bind({asio::ip::make_address(localAddress), 0});
  socket.connect({asio::ip::make_address("127.0.0.1"), port});
}

// A connected socket whose reads give up after 10 s, so a missing reply fails the test instead
// of hanging it.
inline asio::ip::tcp::socket rawSocket(asio::io_context& io, uint16_t port) {
  asio::ip::tcp::socket s(io);
  connectRaw(s, port);
  const timeval tv{10, 0};
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return s;
}

// Reads the ERROR a refused handshake gets and returns its reason.
inline std::string readRefusal(asio::ip::tcp::socket& s) {
  wire::FrameHeader h = readFrameHeader(s);
  REQUIRE(h.type == wire::FrameType::kError);
  std::string text(h.payloadLength, '\0');
  asio::read(s, asio::buffer(text));
  return text;
}

// connectRaw, then the handshake of `rank` of a one-stream, one-reducer group of `world`,
// asking for the loss bound `lossDetectMs` (0: the reducer's).
inline void joinRaw(asio::ip::tcp::socket& socket, uint16_t port, const GroupId& group,
                    uint32_t rank, uint32_t world, int receiveBuffer = 0,
                    uint32_t lossDetectMs = 0) {
  connectRaw(socket, port, nullptr, receiveBuffer);
  sendHello(socket, group, rank, world, 1, 1, {}, {}, lossDetectMs);
  expectHelloAck(socket);
}

// The REDUCE header of fp32 sum chunk `chunk` with `count` elements, of collective `seq`
// (unless given, the chunk's number: one chunk a collective).
inline wire::HeaderBytes fp32ReduceHeader(const GroupId& group, uint32_t rank, uint64_t chunk,
                                          uint32_t count,
                                          std::optional<uint64_t> seq = std::nullopt) {
  wire::ChunkFields f;
  f.group = group;
  f.rank = rank;
  f.seq = seq.value_or(chunk);
  f.chunk = chunk;
  f.elemCount = count;
  f.dtype = DataType::kFloat32;
  f.op = ReduceOp::kSum;
  return wire::encodeHeader(wire::reduceHeader(f));
}

// One member's single stream to reducer 0 of a one-reducer pool, sending fp32 chunks (seq = the
// chunk's number, each at element offset 0: one chunk a collective) in which element i of rank
// r is r + i.
class RawMember {
 public:
  // `lossDetectMs`: the loss bound its HELLO asks for (0: the reducer's).
  RawMember(asio::io_context& io, uint16_t port, const GroupId& group, uint32_t world,
            uint32_t rank, uint32_t lossDetectMs = 0)
      : socket_(io), group_(group), rank_(rank) {
    connectRaw(socket_, port);
    // A bug must fail the test, not hang it: reads give up after 10 s.
    const timeval tv{10, 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sendHello(socket_, group, rank, world, 1, 1, {}, {}, lossDetectMs);
    expectHelloAck(socket_);
  }

  asio::ip::tcp::socket& socket() { return socket_; }

  // The REDUCE header of chunk `chunk` (0 unless given) with `count` elements, of collective
  // `seq` (fp32ReduceHeader).
  void sendHeader(uint32_t count, uint64_t chunk = 0, std::optional<uint64_t> seq = std::nullopt) {
    asio::write(socket_, asio::buffer(fp32ReduceHeader(group_, rank_, chunk, count, seq)));
  }
  // A whole chunk, header and elements.
  void sendChunk(uint64_t chunk, uint32_t count, std::optional<uint64_t> seq = std::nullopt) {
    sendHeader(count, chunk, seq);
    sendElements(0, count);
  }
  // RECEIVED: this member holds every result up to `chunk`.
  void sendReceived(uint64_t chunk) {
    asio::write(socket_, asio::buffer(wire::encodeHeader(wire::receivedHeader(group_, rank_, chunk))));
  }
  // Reads RESULT parts until chunk `chunk`'s `count` elements are in, checking each.
  void readResult(uint64_t chunk, uint32_t count) {
    uint64_t have = 0;
    while (have < count) {
      const wire::FrameHeader h = readResultPart();
      REQUIRE(h.chunk == chunk);
      REQUIRE(h.elemOffset == have);
      have += h.elemCount;
    }
  }
  // Reads the next frame, which must be a COMMIT, and returns its watermark.
  uint64_t readCommit() {
    const wire::FrameHeader h = readFrameHeader(socket_);
    INFO("frame type " << wire::frameTypeName(h.type));
    REQUIRE(h.type == wire::FrameType::kCommit);
    CHECK(h.rank == rank_);
    CHECK(h.group == group_);
    return h.chunk;
  }
  // Reads the next frame, which must be an ABORT, and returns its reason.
  std::string readAbort() {
    const wire::FrameHeader h = readFrameHeader(socket_);
    INFO("frame type " << wire::frameTypeName(h.type));
    REQUIRE(h.type == wire::FrameType::kAbort);
    std::string reason(h.payloadLength, '\0');
    asio::read(socket_, asio::buffer(reason));
    return reason;
  }
  // Payload elements [from, to). With `fragment` > 0 the bytes go out in writes of that many
  // bytes, each its own segment, so that the reducer's reads split elements.
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
  // Reads one RESULT part and checks it against the sum of ranks 0 and 1; returns its header.
  wire::FrameHeader readResultPart() {
    wire::FrameHeader h = readFrameHeader(socket_);
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

}  // namespace rs::test
