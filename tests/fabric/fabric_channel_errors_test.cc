// FabricChannel against a misbehaving or vanished peer: forged writes and control words fail
// the channel they name (and no other on the hub), a write into a ring its receiver closed
// fails the sender's send instead of hanging, and connect() refuses malformed grants.
#include <catch2/catch.hpp>

#include <cstring>

#include "core/transport/fabric/control_word.h"
#include "core/transport/fabric/fabric_immediate.h"
#include "tests/support/fabric_channel_ends.h"
#include "tests/support/fabric_hub_thread.h"
#include "tests/support/fabric_side.h"
#include "tests/support/wait_until.h"

namespace fab = rs::transport::fabric;
using rs::test::ChannelReader;
using rs::test::ChannelWriter;
using rs::test::FabricHubThread;
using rs::test::FabricSide;
using rs::test::waitUntil;

namespace {

// A raw endpoint that writes and sends what it likes into a hub's channels.
class Forger {
 public:
  explicit Forger(const std::vector<uint8_t>& hubAddress)
      : side_(rs::test::openFabricSide("forger")), bytes_(65536, 0xAB) {
    memory_ = rs::test::registerFabricMemory(side_, bytes_, fab::RegisteredMemory::Access::kLocal);
    auto peer = side_.endpoint->addPeer(hubAddress, "hub under test");
    REQUIRE(peer.isOk());
    peer_ = *peer;
  }
  // One write of `size` bytes into the grant's slot `slot` with the given immediate; returns
  // the writer's completion status (the hub must be polling for it to complete).
  rs::Status write(const fab::ChannelGrant& grant, uint32_t slot, size_t size, uint32_t immediate) {
    RS_RETURN_IF_ERROR(side_.endpoint->postWrite(peer_, memory_, 0, size, grant.ringBuffer,
                                                 uint64_t{slot} * grant.ring.slotBytes, immediate,
                                                 ++token_));
    return completion();
  }
  rs::Status send(const fab::ControlWord& word) {
    fab::encodeControlWord(word, bytes_.data());
    RS_RETURN_IF_ERROR(
        side_.endpoint->postSend(peer_, memory_, 0, fab::kControlWordBytes, ++token_));
    return completion();
  }

 private:
  rs::Status completion() {
    auto done = side_.endpoint->next(std::chrono::seconds(60));
    if (!done.isOk()) return done.status();
    return done->status;
  }

  FabricSide side_;
  std::vector<uint8_t> bytes_;
  fab::RegisteredMemory memory_;
  fab::FabricEndpoint::PeerId peer_ = 0;
  uint64_t token_ = 0;
};

rs::Status failureOf(FabricHubThread& hub, const std::shared_ptr<fab::FabricChannel>& ch) {
  return hub.call([&] { return ch->failure(); });
}

}  // namespace

TEST_CASE("forged writes and control words fail the channel they name and no other",
          "[fabric][channel]") {
  constexpr uint32_t kSlot = 4096;
  ChannelReader keepPolling, laterReader;
  ChannelWriter laterWriter;
  FabricHubThread hubA("honest hub"), hubB("forged-at hub");
  const fab::RingShape ring{4, kSlot};
  auto window = rs::test::connectTestChannels(hubA, ring, hubB, ring, "window");
  auto twice = rs::test::connectTestChannels(hubA, ring, hubB, ring, "twice");
  auto kind = rs::test::connectTestChannels(hubA, ring, hubB, ring, "kind");
  auto credits = rs::test::connectTestChannels(hubA, ring, hubB, ring, "credits");
  auto healthy = rs::test::connectTestChannels(hubA, ring, hubB, ring, "healthy");
  // A waiting handler keeps hub B polling, so the forger's operations complete.
  hubB.call([&] { keepPolling.start(healthy.b, {kSlot}); });
  Forger forger(hubB.call([&] { return hubB.hub().address(); }));
  const auto grantOf = [&](const std::shared_ptr<fab::FabricChannel>& ch) {
    return hubB.call([&] { return ch->grant(); });
  };

  const auto windowGrant = grantOf(window.b);
  REQUIRE(forger.write(windowGrant, 1, 10, fab::encodeImmediate(windowGrant.channelId, 5))
              .toString() == "OK");
  REQUIRE(waitUntil([&] { return !failureOf(hubB, window.b).isOk(); }));
  CHECK(failureOf(hubB, window.b).toString() ==
        "PROTOCOL_ERROR: fabric channel 'window b' (id 0, peer channel 0): a piece with "
        "sequence 5 arrived; expected one in [0, 4) (mod 2^20)");

  const auto twiceGrant = grantOf(twice.b);
  const uint32_t zero = fab::encodeImmediate(twiceGrant.channelId, 0);
  REQUIRE(forger.write(twiceGrant, 0, 10, zero).toString() == "OK");
  REQUIRE(forger.write(twiceGrant, 0, 10, zero).toString() == "OK");
  REQUIRE(waitUntil([&] { return !failureOf(hubB, twice.b).isOk(); }));
  CHECK(failureOf(hubB, twice.b).toString() ==
        "PROTOCOL_ERROR: fabric channel 'twice b' (id 1, peer channel 1): the piece with "
        "sequence 0 arrived twice (slot 0); expected each once");

  REQUIRE(forger.send({grantOf(kind.b).channelId, 7, 0, 0}).toString() == "OK");
  REQUIRE(waitUntil([&] { return !failureOf(hubB, kind.b).isOk(); }));
  CHECK(failureOf(hubB, kind.b).toString() ==
        "PROTOCOL_ERROR: fabric channel 'kind b' (id 2, peer channel 2): a control word of "
        "kind 7 arrived; expected kind 1 (credit)");

  REQUIRE(forger.send({grantOf(credits.b).channelId, 1, 0, 3}).toString() == "OK");
  REQUIRE(waitUntil([&] { return !failureOf(hubB, credits.b).isOk(); }));
  CHECK(failureOf(hubB, credits.b).toString() ==
        "PROTOCOL_ERROR: fabric channel 'credits b' (id 3, peer channel 3): credits for 3 "
        "released slots arrived; 0 pieces were written, so at most 4 credits (4 slots) were "
        "expected");

  // A channel id nobody opened: dropped and counted, nothing fails.
  REQUIRE(forger.send({4000, 1, 0, 1}).toString() == "OK");
  REQUIRE(forger.write(windowGrant, 0, 10, fab::encodeImmediate(4001, 0)).toString() == "OK");
  REQUIRE(waitUntil([&] { return hubB.hub().dropped() == 2; }));

  // The hub and its other channel carry on: a stream through it, both ways.
  const std::vector<uint8_t> payload(3 * kSlot + 5, 0x5A);
  hubB.call([&] { laterWriter.start(healthy.b, {payload}); });
  hubA.call([&] { laterReader.start(healthy.a, {payload.size()}); });
  REQUIRE(waitUntil([&] {
    return hubA.call([&] { return laterReader.finished; }) &&
           hubB.call([&] { return laterWriter.results.size() == 1; });
  }));
  CHECK(hubA.call([&] { return laterReader.bytes == payload; }));
  CHECK(hubB.call([&] { return laterWriter.allOk(); }));
  CHECK(failureOf(hubB, healthy.b).toString() == "OK");
  CHECK(hubB.hub().failure().toString() == "OK");
}

TEST_CASE("a write into a ring its receiver closed fails the sender's send, never lands",
          "[fabric][channel]") {
  ChannelReader keepPolling;
  ChannelWriter writer;
  FabricHubThread hubA("sender hub"), hubB("closing hub");
  auto stale = rs::test::connectTestChannels(hubA, {2, 4096}, hubB, {2, 4096}, "stale");
  auto other = rs::test::connectTestChannels(hubA, {2, 4096}, hubB, {2, 4096}, "other");
  // B is idle: A's first write cannot complete (nor, on ofi_rxm, even connect) before B polls.
  hubA.call([&] { writer.start(stale.a, {std::vector<uint8_t>(4096, 1)}); });
  hubB.call([&] { stale.b->close(rs::abortedError("stream ended")); });
  // Now B polls (a handler waits on another channel): A's write meets the stale key.
  hubB.call([&] { keepPolling.start(other.b, {1}); });
  REQUIRE(waitUntil([&] { return hubA.call([&] { return writer.results.size(); }) == 1; }));
  const rs::Status result = hubA.call([&] { return writer.results[0]; });
  INFO(result.toString());
  CHECK(!result.isOk());
  CHECK_THAT(result.message(),
             Catch::Matchers::StartsWith("fabric channel 'stale a' (id 0, peer channel 0): "));
  CHECK_THAT(result.message(), Catch::Matchers::Contains("RMA write of 4096 bytes"));
  CHECK(hubA.call([&] { return stale.a->failure().code(); }) == result.code());
  hubA.call([&] {
    stale.a->close(rs::Status::ok());
    other.a->close(rs::Status::ok());
  });
  hubB.call([&] { other.b->close(rs::Status::ok()); });
}

TEST_CASE("connect() refuses a malformed grant with the reason", "[fabric][channel]") {
  FabricHubThread hub("checking hub");
  auto ch = rs::test::openTestChannel(hub, {2, 4096}, "checked");
  const fab::ChannelGrant good = hub.call([&] { return ch->grant(); });
  CHECK(good.ringBuffer.size == 2 * 4096);
  struct Bad {
    const char* what;
    std::function<void(fab::ChannelGrant&)> breakIt;
    const char* message;
  };
  const std::vector<Bad> bad = {
      {"provider", [](auto& g) { g.provider = "verbs;ofi_rxm"; },
       "provider 'verbs;ofi_rxm', ours 'tcp;ofi_rxm'"},
      {"oversize address", [](auto& g) { g.address.resize(257); },
       "an address of 257 bytes (ours has"},
      {"empty address", [](auto& g) { g.address.clear(); }, "an address of 0 bytes"},
      {"id", [](auto& g) { g.channelId = 4096; }, "channel id 4096 (expected < 4096)"},
      {"slots", [](auto& g) { g.ring.slots = 0; }, "ring of 0 slots (expected 1..1024)"},
      {"slot bytes", [](auto& g) { g.ring.slotBytes = 4100; }, "ring slots of 4100 bytes"},
      {"size", [](auto& g) { g.ringBuffer.size += 1; },
       "a ring buffer of 8193 bytes for 2 x 4096 bytes"},
  };
  for (const Bad& b : bad) {
    INFO(b.what);
    fab::ChannelGrant g = good;
    b.breakIt(g);
    const rs::Status s = hub.call([&] { return ch->connect(g); });
    CHECK(s.code() == rs::StatusCode::kInvalidArgument);
    CHECK_THAT(s.message(), Catch::Matchers::Contains(b.message));
    CHECK_THAT(s.message(), Catch::Matchers::Contains("fabric channel 'checked' (id 0)"));
  }
  CHECK(hub.call([&] { return ch->isConnected(); }) == false);
  CHECK(hub.call([&] { return ch->connect(good); }).toString() == "OK");  // loops back to itself
  hub.call([&] { ch->close(rs::Status::ok()); });
}
