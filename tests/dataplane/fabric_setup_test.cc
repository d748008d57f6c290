// The fabric's set-up as the reducer speaks it when it has no fabric to offer (proto/WIRE.md,
// "The fabric"): a HELLO that asks gets FABRIC_DECLINE with the reason right after HELLO_ACK,
// and the stream carries its payloads over TCP; a frame that breaks the agreement (a REDUCE
// with the fabric flag after a decline, an answer to an offer never made) closes the stream.
// With a provider (the offer, the channel, payloads on it): tests/fabric.
#include <catch2/catch.hpp>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <string>
#include <vector>

#include "core/wire/fabric_frames.h"
#include "tests/support/local_pool.h"
#include "tests/support/raw_member.h"
#include "tests/support/text_contains.h"

namespace rs::test {
namespace {

// A world-of-one member's stream whose HELLO carries the fabric flag; returns after HELLO_ACK.
asio::ip::tcp::socket helloWithFabric(asio::io_context& io, uint16_t port, const GroupId& group) {
  asio::ip::tcp::socket s = rawSocket(io, port);
  const wire::ChallengePayload challenge = readChallenge(s);
  asio::write(s, asio::buffer(helloFrame(challenge, group, 0, 1, 1, 1, {}, {}, 0,
                                         wire::kFlagFabric)));
  expectHelloAck(s);
  return s;
}

// The FABRIC_DECLINE that must come next, and its reason.
std::string readDecline(asio::ip::tcp::socket& s) {
  const wire::FrameHeader h = readFrameHeader(s);
  INFO("frame type " << wire::frameTypeName(h.type));
  REQUIRE(h.type == wire::FrameType::kFabricDecline);
  std::vector<uint8_t> payload(h.payloadLength);
  asio::read(s, asio::buffer(payload));
  std::string reason;
  REQUIRE(wire::parseFabricDecline(payload.data(), payload.size(), &reason).isOk());
  return reason;
}

// Reads until the reducer closes the stream (an ERROR or ABORT may come first).
void expectClosed(asio::ip::tcp::socket& s) {
  std::vector<uint8_t> buf(4096);
  std::error_code ec;
  while (!ec) s.read_some(asio::buffer(buf), ec);
  CHECK((ec == asio::error::eof || ec == asio::error::connection_reset));
}

constexpr auto kUnexpected = static_cast<size_t>(server::FrameRejection::kUnexpectedType);

}  // namespace

TEST_CASE("fabric set-up: a reducer without a fabric declines with the reason, and the stream "
          "carries its payloads over TCP",
          "[fabric]") {
  auto config = testServerConfig();
  config.fabricProvider = "off";
  LocalPool pool(1, config);
  asio::io_context io;
  const GroupId group = GroupId::random();
  asio::ip::tcp::socket s = helloWithFabric(io, pool.reducer(0).dataPort(), group);
  CHECK(readDecline(s) == "no fabric on this reducer (--fabric-provider off)");

  // A chunk over TCP, as without the flag: 4 fp32 elements, its sum (a world of one) back.
  asio::write(s, asio::buffer(fp32ReduceHeader(group, 0, 0, 4)));
  const std::vector<float> values = {1, 2, 3, 4};
  asio::write(s, asio::buffer(values));
  const wire::FrameHeader h = readFrameHeader(s);
  REQUIRE(h.type == wire::FrameType::kResult);
  CHECK((h.flags & wire::kFlagFabric) == 0);
  std::vector<float> result(h.elemCount);
  asio::read(s, asio::buffer(result));
  CHECK(result == values);
}

TEST_CASE("fabric set-up: a frame that breaks the agreement closes the stream", "[fabric]") {
  auto config = testServerConfig();
  config.fabricProvider = "off";
  LocalPool pool(1, config);
  asio::io_context io;
  const auto before = pool.reducer(0).dataPlane().stats();

  SECTION("a REDUCE with the fabric flag after the decline") {
    const GroupId group = GroupId::random();
    asio::ip::tcp::socket s = helloWithFabric(io, pool.reducer(0).dataPort(), group);
    readDecline(s);
    wire::ChunkFields f{.group = group, .rank = 0, .seq = 0, .chunk = 0, .elemOffset = 0,
                        .elemCount = 4, .dtype = DataType::kFloat32, .op = ReduceOp::kSum};
    wire::FrameHeader reduce = wire::reduceHeader(f);
    reduce.flags = wire::kFlagFabric;
    asio::write(s, asio::buffer(wire::encodeHeader(reduce)));
    expectClosed(s);
  }
  SECTION("a FABRIC_ACCEPT on a stream that was offered nothing") {
    const GroupId group = GroupId::random();
    asio::ip::tcp::socket s = rawSocket(io, pool.reducer(0).dataPort());
    sendHello(s, group, 0, 1);
    expectHelloAck(s);
    wire::FabricGrant grant{.provider = "tcp;ofi_rxm", .address = {1, 2, 3}, .channelId = 1,
                            .slots = 1, .slotBytes = 4096, .ringAddress = 0, .ringKey = 1,
                            .ringSize = 4096};
    auto accept = wire::fabricAcceptFrame(group, 0, grant);
    REQUIRE(accept.isOk());
    asio::write(s, asio::buffer(accept->header));
    asio::write(s, asio::buffer(accept->payload));
    expectClosed(s);
  }
  const auto after = pool.reducer(0).dataPlane().stats();
  CHECK(after.framesRejected[kUnexpected] == before.framesRejected[kUnexpected] + 1);
}

}  // namespace rs::test
