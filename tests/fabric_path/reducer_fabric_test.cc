// The reducer's side of the fabric path (proto/FABRIC.md, proto/WIRE.md "The fabric"), spoken
// by raw members: the TCP frames by hand, the payloads on a channel of a FabricHub of their own
// (a thread each, as a worker's io thread runs one). The reducer offers its channel after
// HELLO_ACK, sums the payloads that come on it and writes each RESULT part's payload back on
// it; a member that declines stays on TCP beside one that took it; a frame or grant that breaks
// the agreement fails the stream with the reason. On the provider under test (tcp by default).
#include <catch2/catch.hpp>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/transport/fabric/payload_over_fabric.h"
#include "core/wire/fabric_frames.h"
#include "tests/support/fabric_channel_ends.h"
#include "tests/support/fabric_choice.h"
#include "tests/support/fabric_hub_thread.h"
#include "tests/support/local_pool.h"
#include "tests/support/log_capture.h"
#include "tests/support/raw_member.h"
#include "tests/support/text_contains.h"
#include "tests/support/wait_until.h"

namespace fab = rs::transport::fabric;

namespace rs::test {
namespace {

server::ServerConfig fabricServerConfig() {
  server::ServerConfig c = testServerConfig();
  const fab::FabricChoice choice = fabricUnderTest();
  c.fabricProvider = choice.provider;
  c.fabricNode = choice.node;
  return c;
}

// One member of a world of `world` on one stream to reducer 0: HELLO with the fabric flag, the
// reducer's answer read, and (unless it declines) its own channel connected and accepted.
class FabricMember {
 public:
  FabricMember(asio::io_context& io, uint16_t port, const GroupId& group, uint32_t world,
               uint32_t rank)
      : socket_(rawSocket(io, port)), group_(group), rank_(rank) {
    const wire::ChallengePayload challenge = readChallenge(socket_);
    asio::write(socket_, asio::buffer(helloFrame(challenge, group, rank, world, 1, 1, {}, {}, 0,
                                                 wire::kFlagFabric)));
    expectHelloAck(socket_);
    const wire::FrameHeader h = readFrameHeader(socket_);
    answerType_ = h.type;
    answer_.resize(h.payloadLength);
    asio::read(socket_, asio::buffer(answer_));
  }

  // The reducer offered its channel: its grant.
  wire::FabricGrant offered() {
    REQUIRE(answerType_ == wire::FrameType::kFabricOffer);
    wire::FabricGrant g;
    REQUIRE(wire::decodeFabricGrant(answer_.data(), answer_.size(), &g).toString() == "OK");
    return g;
  }

  // Takes the offer: a channel on `hub` with a receive ring of `ring`, connected to the
  // reducer's, and FABRIC_ACCEPT with its grant (`spoil` may change that first); then, with
  // `probe`, the probes as a worker sends and takes them (WIRE.md, "The fabric").
  void accept(FabricHubThread& hub, fab::RingShape ring = {4, 64 << 10},
              void (*spoil)(wire::FabricGrant&) = nullptr, bool probe = true) {
    const wire::FabricGrant reducer = offered();
    channel_ = openTestChannel(hub, ring, "member " + std::to_string(rank_));
    REQUIRE(hub.call([&] { return channel_->connect(fab::fromWireGrant(reducer)); }).toString() ==
            "OK");
    wire::FabricGrant mine = fab::toWireGrant(hub.call([&] { return channel_->grant(); }));
    if (spoil) spoil(mine);
    auto frame = wire::fabricAcceptFrame(group_, rank_, mine);
    REQUIRE(frame.isOk());
    asio::write(socket_, asio::buffer(frame->header));
    asio::write(socket_, asio::buffer(frame->payload));
    if (!probe) return;
    sendProbe(hub, wire::fabricProbe(group_, rank_, wire::ProbeFrom::kMember));
    REQUIRE(takeProbe(hub) == wire::fabricProbe(group_, rank_, wire::ProbeFrom::kReducer));
  }

  // Writes `bytes` as this member's probe, and waits until they were delivered.
  void sendProbe(FabricHubThread& hub, const wire::FabricProbe& bytes) {
    probeOut_ = bytes;
    hub.call([&] {
      channel_->send(probeOut_.data(), probeOut_.size(),
                     [this](const Status& s) { probeSent_ = s; });
      return 0;
    });
    REQUIRE(waitUntil([&] { return hub.call([&] { return probeSent_.has_value(); }); }));
    REQUIRE(hub.call([&] { return probeSent_->toString(); }) == "OK");
  }

  // The reducer's probe, the first piece it writes.
  wire::FabricProbe takeProbe(FabricHubThread& hub) {
    hub.call([&] {
      probeReader_.start(channel_, {wire::kFabricProbeBytes});
      return 0;
    });
    REQUIRE(waitUntil(
        [&] {
          return hub.call([&] { return probeReader_.finished || !probeReader_.error.isOk(); });
        }));
    REQUIRE(hub.call([&] { return probeReader_.error.toString(); }) == "OK");
    wire::FabricProbe got{};
    const std::vector<uint8_t> bytes = hub.call([&] { return probeReader_.bytes; });
    REQUIRE(bytes.size() == got.size());
    std::copy(bytes.begin(), bytes.end(), got.begin());
    return got;
  }

  // Declines the offer (the stream stays on TCP); after an accept, the member's word that its
  // probe failed.
  void decline(const std::string& reason) {
    const wire::FabricFrame frame = wire::fabricDeclineFrame(group_, rank_, reason);
    asio::write(socket_, asio::buffer(frame.header));
    asio::write(socket_, asio::buffer(frame.payload));
  }

  // Chunk 0 of `count` fp32 elements, element i being rank + i: its header on the stream, with
  // the fabric flag when `onFabric`, and its payload on the channel (else after the header).
  void sendChunk(FabricHubThread* hub, uint32_t count, bool onFabric) {
    values_.resize(count);
    for (uint32_t i = 0; i < count; ++i) values_[i] = static_cast<float>(rank_ + i);
    wire::FrameHeader h;
    const wire::HeaderBytes plain = fp32ReduceHeader(group_, rank_, 0, count);
    REQUIRE(wire::decodeHeader(plain.data(), plain.size(), {}, &h).isOk());
    if (onFabric) h.flags |= wire::kFlagFabric;
    asio::write(socket_, asio::buffer(wire::encodeHeader(h)));
    if (!onFabric) {
      asio::write(socket_, asio::buffer(values_));
      return;
    }
    hub->call([&] {
      writer_.start(channel_, {std::vector<uint8_t>(
                                  reinterpret_cast<const uint8_t*>(values_.data()),
                                  reinterpret_cast<const uint8_t*>(values_.data() + count))});
      return 0;
    });
  }

  // Reads RESULT parts of chunk 0 until its `count` elements are in (payloads from the channel
  // when `onFabric`) and returns how many differ from the sum of ranks 0..world-1.
  uint32_t readResult(FabricHubThread* hub, uint32_t count, uint32_t world, bool onFabric) {
    std::vector<float> result;
    std::vector<size_t> parts;
    while (result.size() < count) {
      const wire::FrameHeader h = readFrameHeader(socket_);
      INFO("frame type " << wire::frameTypeName(h.type));
      REQUIRE(h.type == wire::FrameType::kResult);
      REQUIRE(((h.flags & wire::kFlagFabric) != 0) == onFabric);
      REQUIRE(h.elemOffset == result.size());
      std::vector<float> part(h.elemCount);
      if (onFabric) parts.push_back(h.payloadLength);
      else asio::read(socket_, asio::buffer(part));
      result.insert(result.end(), part.begin(), part.end());
    }
    if (onFabric) {
      hub->call([&] {
        reader_.start(channel_, parts);
        return 0;
      });
      REQUIRE(waitUntil([&] {
        return hub->call([&] { return reader_.finished || !reader_.error.isOk(); });
      }));
      REQUIRE(hub->call([&] { return reader_.error.toString(); }) == "OK");
      const std::vector<uint8_t> bytes = hub->call([&] { return reader_.bytes; });
      REQUIRE(bytes.size() == count * sizeof(float));
      std::memcpy(result.data(), bytes.data(), bytes.size());
    }
    uint32_t wrong = 0;
    for (uint32_t i = 0; i < count; ++i) {
      float want = 0;
      for (uint32_t r = 0; r < world; ++r) want += static_cast<float>(r + i);
      if (result[i] != want) ++wrong;
    }
    return wrong;
  }

  bool sendsDone(FabricHubThread& hub) {
    return hub.call([&] { return writer_.allOk(); });
  }
  asio::ip::tcp::socket& socket() { return socket_; }
  wire::FrameType answerType() const { return answerType_; }
  std::string declineReason() const {
    std::string reason;
    REQUIRE(wire::parseFabricDecline(answer_.data(), answer_.size(), &reason).isOk());
    return reason;
  }

 private:
  asio::ip::tcp::socket socket_;
  GroupId group_;
  uint32_t rank_;
  wire::FrameType answerType_{};
  std::vector<uint8_t> answer_;
  std::shared_ptr<fab::FabricChannel> channel_;
  ChannelWriter writer_;
  ChannelReader reader_;
  ChannelReader probeReader_;
  wire::FabricProbe probeOut_{};
  std::optional<Status> probeSent_;
  std::vector<float> values_;
};

// Reads until the reducer closes the stream and returns the ABORT's reason if one came.
std::string readUntilClosed(asio::ip::tcp::socket& s) {
  std::string reason;
  std::error_code ec;
  while (!ec) {
    wire::HeaderBytes bytes;
    asio::read(s, asio::buffer(bytes), ec);
    if (ec) break;
    wire::FrameHeader h;
    if (!wire::decodeHeader(bytes.data(), bytes.size(), {}, &h).isOk()) break;
    std::string payload(h.payloadLength, '\0');
    asio::read(s, asio::buffer(payload), ec);
    if (h.type == wire::FrameType::kAbort || h.type == wire::FrameType::kError) reason = payload;
  }
  return reason;
}

}  // namespace

TEST_CASE("reducer over the fabric: payloads summed from the channel, results written back on "
          "it, credits cycling", "[fabric]") {
  LocalPool pool(1, fabricServerConfig());
  const GroupId group = GroupId::random();
  // 4 MiB each: 16 of the reducer's 256 KiB slots (8 in its ring), 64 of the members' 64 KiB.
  constexpr uint32_t kCount = 1u << 20;
  asio::io_context io;
  FabricHubThread hub0("member 0"), hub1("member 1");
  FabricMember m0(io, pool.reducer(0).dataPort(), group, 2, 0);
  FabricMember m1(io, pool.reducer(0).dataPort(), group, 2, 1);
  CHECK(m0.offered().provider == hub0.hub().provider());
  CHECK(m0.offered().slotBytes == testServerConfig().pieceBytes);
  m0.accept(hub0);
  m1.accept(hub1);
  m0.sendChunk(&hub0, kCount, true);
  m1.sendChunk(&hub1, kCount, true);
  CHECK(m0.readResult(&hub0, kCount, 2, true) == 0);
  CHECK(m1.readResult(&hub1, kCount, 2, true) == 0);
  CHECK(waitUntil([&] { return m0.sendsDone(hub0) && m1.sendsDone(hub1); }));
  CHECK(pool.reducer(0).dataPlane().stats().fabricStreams == 2);
}

TEST_CASE("reducer over the fabric: a member that declines stays on TCP beside one that took it",
          "[fabric]") {
  LocalPool pool(1, fabricServerConfig());
  const GroupId group = GroupId::random();
  constexpr uint32_t kCount = 300000;  // not a whole number of slots
  asio::io_context io;
  FabricHubThread hub0("member 0");
  FabricMember m0(io, pool.reducer(0).dataPort(), group, 2, 0);
  FabricMember m1(io, pool.reducer(0).dataPort(), group, 2, 1);
  m0.accept(hub0);
  m1.decline("this member has no fabric today");
  m0.sendChunk(&hub0, kCount, true);
  m1.sendChunk(nullptr, kCount, false);
  CHECK(m0.readResult(&hub0, kCount, 2, true) == 0);
  CHECK(m1.readResult(nullptr, kCount, 2, false) == 0);
}

TEST_CASE("reducer over the fabric: what breaks the agreement fails the stream with the reason",
          "[fabric]") {
  LocalPool pool(1, fabricServerConfig());
  const GroupId group = GroupId::random();
  asio::io_context io;
  FabricHubThread hub0("member 0");
  SECTION("a REDUCE without the fabric flag after the accept") {
    FabricMember m(io, pool.reducer(0).dataPort(), group, 1, 0);
    m.accept(hub0);
    m.sendChunk(nullptr, 16, false);
    readUntilClosed(m.socket());
    CHECK(pool.reducer(0).dataPlane().stats().framesRejected[static_cast<size_t>(
              server::FrameRejection::kUnexpectedType)] == 1);
  }
  SECTION("a REDUCE before the answer to the offer") {
    FabricMember m(io, pool.reducer(0).dataPort(), group, 1, 0);
    REQUIRE(m.answerType() == wire::FrameType::kFabricOffer);
    m.sendChunk(nullptr, 16, false);
    readUntilClosed(m.socket());
    CHECK(pool.reducer(0).dataPlane().stats().framesRejected[static_cast<size_t>(
              server::FrameRejection::kUnexpectedType)] == 1);
  }
  SECTION("a grant of another provider") {
    FabricMember m(io, pool.reducer(0).dataPort(), group, 1, 0);
    m.accept(hub0, {4, 64 << 10}, [](wire::FabricGrant& g) { g.provider = "efa"; }, false);
    readUntilClosed(m.socket());
    // Only that stream: the reducer serves the next group over the fabric.
    FabricHubThread hub1("member of the next group");
    FabricMember next(io, pool.reducer(0).dataPort(), GroupId::random(), 1, 0);
    next.accept(hub1);
    next.sendChunk(&hub1, 16, true);
    CHECK(next.readResult(&hub1, 16, 1, true) == 0);
  }
  SECTION("a ring larger than the reducer mirrors") {
    FabricMember m(io, pool.reducer(0).dataPort(), group, 1, 0);
    m.accept(hub0, {8, 1 << 20}, nullptr, false);  // 8 MiB: the reducer mirrors 4 MiB at most
    readUntilClosed(m.socket());
    CHECK(waitUntil([&] { return pool.reducer(0).dataPlane().stats().connectionsOpen == 0; }));
  }
  SECTION("a member that goes away while its payload is on its way") {
    auto m = std::make_unique<FabricMember>(io, pool.reducer(0).dataPort(), group, 2, 0);
    FabricMember other(io, pool.reducer(0).dataPort(), group, 2, 1);
    m->accept(hub0);
    // The header promises 4 MiB; nothing comes on the channel, and the member closes.
    wire::FrameHeader h;
    const wire::HeaderBytes plain = fp32ReduceHeader(group, 0, 0, 1u << 20);
    REQUIRE(wire::decodeHeader(plain.data(), plain.size(), {}, &h).isOk());
    h.flags |= wire::kFlagFabric;
    asio::write(m->socket(), asio::buffer(wire::encodeHeader(h)));
    m->socket().close();
    // The other member hears of it at once, not at the collective timeout.
    other.decline("declined");
    const std::string reason = readUntilClosed(other.socket());
    CHECK(contains(reason, "rank 0 stream 0: the member closed the stream while chunk 0 "
                           "waited for its payload on the fabric"));
  }
}
TEST_CASE("reducer over the fabric: a member whose probe failed declines after accepting, and "
          "its stream runs over TCP beside one on the fabric",
          "[fabric]") {
  LocalPool pool(1, fabricServerConfig());
  const GroupId group = GroupId::random();
  constexpr uint32_t kCount = 100000;
  asio::io_context io;
  FabricHubThread hub0("member 0"), hub1("member 1");
  FabricMember m0(io, pool.reducer(0).dataPort(), group, 2, 0);
  FabricMember m1(io, pool.reducer(0).dataPort(), group, 2, 1);
  m0.accept(hub0);
  // As a worker does when the reducer's probe does not come: its own went, then the word.
  m1.accept(hub1, {4, 64 << 10}, nullptr, false);
  m1.sendProbe(hub1, wire::fabricProbe(group, 1, wire::ProbeFrom::kMember));
  m1.decline("the fabric channel failed its probe: the reducer's probe did not arrive");
  m0.sendChunk(&hub0, kCount, true);
  m1.sendChunk(nullptr, kCount, false);
  CHECK(m0.readResult(&hub0, kCount, 2, true) == 0);
  CHECK(m1.readResult(nullptr, kCount, 2, false) == 0);
}

TEST_CASE("reducer over the fabric: a probe that is not the member's fails its stream, and a "
          "decline after a payload on the fabric is refused",
          "[fabric]") {
  LocalPool pool(1, fabricServerConfig());
  const GroupId group = GroupId::random();
  asio::io_context io;
  FabricHubThread hub0("member 0");
  FabricMember m(io, pool.reducer(0).dataPort(), group, 1, 0);
  SECTION("other bytes than the member's probe") {
    LogCapture log;
    m.accept(hub0, {4, 64 << 10}, nullptr, false);
    m.sendProbe(hub0, wire::fabricProbe(group, 0, wire::ProbeFrom::kReducer));
    readUntilClosed(m.socket());
    // The group's failure is logged around the stream's close, not necessarily before.
    CHECK(waitUntil([&] {
      return log.contains("rank 0 stream 0: fabric probe: the member's probe differs from byte 36");
    }));
  }
  SECTION("FABRIC_DECLINE after a REDUCE on the fabric") {
    m.accept(hub0);
    m.sendChunk(&hub0, 16, true);
    CHECK(m.readResult(&hub0, 16, 1, true) == 0);
    m.decline("too late");
    readUntilClosed(m.socket());
    CHECK(pool.reducer(0).dataPlane().stats().framesRejected[static_cast<size_t>(
              server::FrameRejection::kUnexpectedType)] == 1);
  }
}

TEST_CASE("reducer over the fabric: its rings count against --memory-limit, and a stream they "
          "do not fit gets FABRIC_DECLINE and runs over TCP",
          "[fabric]") {
  auto config = fabricServerConfig();
  // 40 MiB over 2 io threads, each keeping 16 MiB (2 x --max-chunk) for slots: 8 MiB for the
  // rest, where one stream's rings (2 MiB, and up to 4 MiB mirroring the member's) fit once.
  config.memoryLimitBytes = 40ull << 20;
  LocalPool pool(1, config);
  asio::io_context io;
  FabricHubThread hub0("member 0");
  const GroupId group = GroupId::random();
  FabricMember first(io, pool.reducer(0).dataPort(), group, 2, 0);
  FabricMember second(io, pool.reducer(0).dataPort(), group, 2, 1);
  first.accept(hub0);
  REQUIRE(second.answerType() == wire::FrameType::kFabricDecline);
  CHECK(contains(second.declineReason(), "fabric memory exhausted"));
  CHECK(contains(second.declineReason(), "--memory-limit"));
  first.sendChunk(&hub0, 1000, true);
  second.sendChunk(nullptr, 1000, false);
  CHECK(first.readResult(&hub0, 1000, 2, true) == 0);
  CHECK(second.readResult(nullptr, 1000, 2, false) == 0);
}

}  // namespace rs::test
