// Windows (FabricChannel::openWindow/sendInto, proto/FABRIC.md "The result window"): a payload
// written into a window the receiver opened onto its registered memory lands there, byte-exact
// at the offset, its pieces counted and released as ring pieces; a window revoked (closed, or
// its channel detached) fails a later write at the writer and never lands; a payload that does
// not fit in its window, and a window onto memory nobody registered, are refused.
#include <catch2/catch.hpp>

#include <memory>
#include <optional>

#include "core/transport/user_memory.h"
#include "tests/support/fabric_channel_ends.h"
#include "tests/support/fabric_hub_thread.h"
#include "tests/support/text_contains.h"
#include "tests/support/wait_until.h"

namespace fab = rs::transport::fabric;
using rs::test::ChannelReader;
using rs::test::FabricHubThread;
using rs::test::waitUntil;
using Catch::Matchers::Contains;

namespace {

constexpr uint32_t kSlot = 8192;

std::vector<uint8_t> pattern(size_t bytes, uint8_t seed) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<uint8_t>(i * 31 + seed);
  return v;
}

// Hub B's memory, registered through its list, and a channel pair between hub A and hub B.
struct WindowFixture {
  std::vector<uint8_t> memory = std::vector<uint8_t>(256 << 10, 0);
  std::shared_ptr<rs::transport::UserMemory> list = std::make_shared<rs::transport::UserMemory>();
  // Before the hubs: a hub's shutdown may still run their handlers.
  ChannelReader reader;
  ChannelReader waiting;
  FabricHubThread hubA{"window writer"};
  FabricHubThread hubB{"window owner"};
  rs::test::ConnectedChannels c;
  uint64_t registered = 0;

  WindowFixture() {
    registered = list->add(memory.data(), memory.size());
    hubB.call([&] { hubB.hub().followUserMemory(list); });
    c = rs::test::connectTestChannels(hubA, {4, kSlot}, hubB, {3, kSlot});
  }
  ~WindowFixture() {
    hubA.call([&] { c.a->close(rs::Status::ok()); });
    hubB.call([&] { c.b->close(rs::Status::ok()); });
  }
  fab::RemoteBuffer open(size_t offset, size_t bytes) {
    auto window = hubB.call([&] { return c.b->openWindow(memory.data() + offset, bytes); });
    REQUIRE(window.status().toString() == "OK");
    return *window;
  }
};

}  // namespace

TEST_CASE("pieces written into a window land in the owner's memory at the offset, counted and "
          "released as ring pieces, between ring payloads",
          "[fabric][channel][window]") {
  WindowFixture f;
  constexpr size_t kAt = 1000, kSize = 100000, kOffset = 5000, kBytes = 60000;
  const fab::RemoteBuffer window = f.open(kAt, kSize);
  CHECK(window.size == kSize);
  // A second window in the same buffer uses the channel's one registration of it.
  (void)f.open(200000, 4096);
  CHECK(f.hubB.call([&] { return f.c.b->windowRegions(); }) == 1);

  const std::vector<uint8_t> before = pattern(3000, 1), into = pattern(kBytes, 2),
                             after = pattern(7000, 3);
  std::vector<rs::Status> done;
  f.hubB.call([&] { f.reader.start(f.c.b, {before.size(), into.size(), after.size()}); });
  f.hubA.call([&] {
    auto record = [&](const rs::Status& s) { done.push_back(s); };
    f.c.a->send(before.data(), before.size(), record);
    f.c.a->sendInto(into.data(), into.size(), window, kOffset, record);
    f.c.a->send(after.data(), after.size(), record);
  });
  REQUIRE(waitUntil([&] {
    return f.hubB.call([&] { return f.reader.finished || !f.reader.error.isOk(); });
  }));
  f.hubB.call([&] { CHECK(f.reader.error.toString() == "OK"); });
  REQUIRE(waitUntil([&] { return f.hubA.call([&] { return done.size() == 3; }); }));
  f.hubA.call([&] {
    for (const rs::Status& s : done) CHECK(s.toString() == "OK");
  });

  // The window's bytes are where the window said, and nowhere else in the memory.
  std::vector<uint8_t> expected(f.memory.size(), 0);
  std::copy(into.begin(), into.end(), expected.begin() + kAt + kOffset);
  CHECK(f.hubB.call([&] { return f.memory == expected; }));
  // Its pieces were counted in the ring's sequence, cut as ring pieces are, and the ring
  // payloads around it arrived whole.
  const std::vector<size_t> pieces = f.hubB.call([&] { return f.reader.pieces; });
  CHECK(pieces == f.hubB.call([&] { return f.reader.expectedPieces; }));
  CHECK(pieces.size() == 1 + (kBytes + kSlot - 1) / kSlot + 1);
  const std::vector<uint8_t> got = f.hubB.call([&] { return f.reader.bytes; });
  REQUIRE(got.size() == before.size() + kBytes + after.size());
  CHECK(std::equal(before.begin(), before.end(), got.begin()));
  CHECK(std::equal(after.begin(), after.end(), got.end() - static_cast<long>(after.size())));
  CHECK(f.hubA.call([&] { return f.hubA.hub().bytesIntoWindows(); }) == kBytes);
}

TEST_CASE("a revoked window fails a later write at the writer, and it never lands",
          "[fabric][channel][window]") {
  const bool detached = GENERATE(false, true);
  INFO((detached ? "the owner detached its channel" : "the owner closed its windows"));
  WindowFixture f;
  const fab::RemoteBuffer window = f.open(0, 64 << 10);
  // One payload first: the provider connects the two ends at the first write.
  const std::vector<uint8_t> first = pattern(1000, 4), late = pattern(20000, 5);
  std::vector<rs::Status> done;
  f.hubB.call([&] { f.reader.start(f.c.b, {first.size()}); });
  f.hubA.call([&] {
    f.c.a->send(first.data(), first.size(), [&](const rs::Status& s) { done.push_back(s); });
  });
  REQUIRE(waitUntil([&] { return f.hubB.call([&] { return f.reader.finished; }); }));

  f.hubB.call([&] {
    if (detached) f.c.b->detach(rs::abortedError("moved away"));
    else f.c.b->closeWindows();
    CHECK(f.c.b->windowRegions() == 0);
  });
  // The owner keeps awaiting pieces (a detached channel's Farewell does): its hub polls, so
  // the writer's write is answered.
  f.hubB.call([&] { f.waiting.start(f.c.b, {late.size()}); });
  f.hubA.call([&] {
    f.c.a->sendInto(late.data(), late.size(), window, 0,
                    [&](const rs::Status& s) { done.push_back(s); });
  });
  REQUIRE(waitUntil([&] { return f.hubA.call([&] { return done.size() == 2; }); }));
  f.hubA.call([&] {
    CHECK(done[0].toString() == "OK");
    CHECK_FALSE(done[1].isOk());
    CHECK_THAT(f.c.a->failure().message(), Contains("RMA write of"));
  });
  CHECK(f.hubB.call([&] { return std::all_of(f.memory.begin(), f.memory.end(),
                                             [](uint8_t b) { return b == 0; }); }));
  CHECK(f.hubB.call([&] { return f.waiting.pieces.empty(); }));
}

TEST_CASE("a payload that does not fit in its window fails the channel before any of it is "
          "posted, and a window onto memory nobody registered is refused",
          "[fabric][channel][window]") {
  WindowFixture f;
  const fab::RemoteBuffer window = f.open(0, 10000);
  const std::vector<uint8_t> payload = pattern(8000, 6);
  std::optional<rs::Status> done;
  f.hubA.call([&] {
    f.c.a->sendInto(payload.data(), payload.size(), window, 4000,
                    [&](const rs::Status& s) { done = s; });
  });
  REQUIRE(waitUntil([&] { return f.hubA.call([&] { return done.has_value(); }); }));
  f.hubA.call([&] {
    CHECK(done->code() == rs::StatusCode::kInvalidArgument);
    CHECK_THAT(f.c.a->failure().message(),
               Contains("a payload of 8000 bytes at offset 4000 of the peer's window of 10000 "
                        "bytes does not fit in it"));
    CHECK(f.c.a->bytesPosted() == 0);
  });

  std::vector<uint8_t> elsewhere(4096);
  auto outside = f.hubB.call([&] { return f.c.b->openWindow(elsewhere.data(), 100); });
  CHECK(outside.status().code() == rs::StatusCode::kInvalidArgument);
  CHECK_THAT(outside.status().message(), Contains("no registered buffer holds the window of 100 "
                                                  "bytes"));
  // Across the registered buffer's end.
  auto across = f.hubB.call([&] {
    return f.c.b->openWindow(f.memory.data() + f.memory.size() - 10, 20);
  });
  CHECK(across.status().code() == rs::StatusCode::kInvalidArgument);
  // Taken off the list: no new window there, and the channel lets go of its registration.
  REQUIRE(f.list->remove(f.registered));
  auto removed = f.hubB.call([&] { return f.c.b->openWindow(f.memory.data(), 100); });
  CHECK(removed.status().code() == rs::StatusCode::kInvalidArgument);
  CHECK(f.hubB.call([&] { return f.c.b->windowRegions(); }) == 0);
}
