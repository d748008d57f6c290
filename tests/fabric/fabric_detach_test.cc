// A channel whose owner lets go (FabricChannel::detach; a member moving away from a live
// reducer hands its channel to the Farewell): the unsent rest of its payloads goes on from
// copies, the owner's handlers end with the reason at once, and the peer's writes still land;
// with the payload's memory registered too (its first pieces written from it, zero-copy).
#include <catch2/catch.hpp>

#include <cstring>
#include <optional>

#include "core/transport/user_memory.h"
#include "tests/support/fabric_channel_ends.h"
#include "tests/support/fabric_hub_thread.h"
#include "tests/support/wait_until.h"

using rs::Status;
using rs::StatusCode;
using rs::test::ChannelReader;
using rs::test::FabricHubThread;
using rs::test::waitUntil;

TEST_CASE("a detached channel sends the rest of its payloads from copies, ends its owner's "
          "handlers with the reason, and keeps taking the peer's writes",
          "[fabric][channel]") {
  constexpr uint32_t kSlot = 4096;
  constexpr size_t kPayload = 5 * kSlot + 100;  // 6 pieces; B's 2 credits hold back 4
  std::vector<uint8_t> source(kPayload);
  for (size_t i = 0; i < kPayload; ++i) source[i] = static_cast<uint8_t>(i * 7 + 3);
  const std::vector<uint8_t> sent = source;
  const std::vector<uint8_t> reply(3 * kSlot, 0x5a);
  ChannelReader readerB, readerA;
  std::optional<Status> sendDone, pieceDone;
  std::vector<Status> replyDone;
  // The payload's memory registered (zero-copy: the first pieces are written from it) or not.
  const bool registered = GENERATE(false, true);
  INFO("registered: " << registered);
  FabricHubThread hubA("detaching hub"), hubB("peer hub");
  auto userMemory = std::make_shared<rs::transport::UserMemory>();
  if (registered) userMemory->add(source.data(), source.size());
  hubA.call([&] { hubA.hub().followUserMemory(userMemory); });
  auto c = rs::test::connectTestChannels(hubA, {2, kSlot}, hubB, {2, kSlot});

  hubB.call([&] { readerB.start(c.b, {kPayload}, /*autoRelease=*/false); });
  hubA.call([&] {
    c.a->send(source.data(), source.size(), [&](const Status& s) { sendDone = s; });
    // The owner waits for a piece the peer has not sent yet.
    c.a->asyncNextPiece(kSlot, [&](const Status& s, std::span<const uint8_t>) { pieceDone = s; });
  });
  REQUIRE(waitUntil([&] { return hubB.call([&] { return readerB.held; }) == 2; }));

  hubA.call([&] {
    c.a->detach(rs::abortedError("the owner moved away"));
    // The caller's memory is free once detach returned, unregistered; registered, once the
    // send's done ran (its writes from it completed).
    if (!registered) std::memset(source.data(), 0xee, source.size());
  });
  REQUIRE(waitUntil([&] { return hubA.call([&] { return sendDone && pieceDone; }); }));
  if (registered) hubA.call([&] { std::memset(source.data(), 0xee, source.size()); });
  hubA.call([&] {
    CHECK(sendDone->code() == StatusCode::kAborted);
    CHECK(sendDone->message() == "the owner moved away");
    CHECK(pieceDone->code() == StatusCode::kAborted);
    CHECK(c.a->failure().toString() == "OK");
  });

  // The peer releases what it holds, then takes the rest as it comes: the original bytes.
  hubB.call([&] {
    REQUIRE(c.b->release().toString() == "OK");
    REQUIRE(c.b->release().toString() == "OK");
  });
  REQUIRE(waitUntil([&] { return hubB.call([&] { return readerB.held; }) == 4; }));
  hubB.call([&] {
    for (int i = 0; i < 2; ++i) REQUIRE(c.b->release().toString() == "OK");
  });
  REQUIRE(waitUntil([&] { return hubB.call([&] { return readerB.finished; }); }));
  hubB.call([&] {
    CHECK(readerB.error.toString() == "OK");
    CHECK(readerB.bytes == sent);
    for (size_t i = 0; i < readerB.held - 4; ++i) (void)c.b->release();
  });
  CHECK(hubA.call([&] { return c.a->bytesPosted(); }) == kPayload);
  // Registered: the two pieces posted before detach went from the caller's memory.
  CHECK(hubA.call([&] { return hubA.hub().bytesFromUserMemory(); }) ==
        (registered ? 2 * kSlot : 0));

  // The peer's writes still land in the detached channel's ring, for a new reader of it.
  hubA.call([&] { readerA.start(c.a, {reply.size()}); });
  hubB.call([&] {
    c.b->send(reply.data(), reply.size(), [&](const Status& s) { replyDone.push_back(s); });
  });
  REQUIRE(waitUntil(
      [&] { return hubA.call([&] { return readerA.finished || !readerA.error.isOk(); }); }));
  REQUIRE(waitUntil([&] { return hubB.call([&] { return replyDone.size(); }) == 1; }));
  hubA.call([&] {
    CHECK(readerA.error.toString() == "OK");
    CHECK(readerA.bytes == reply);
  });
  hubB.call([&] { CHECK(replyDone[0].toString() == "OK"); });
  hubA.call([&] { c.a->close(Status::ok()); });
  hubB.call([&] { c.b->close(Status::ok()); });
}
