// Zero-copy sends (transport/user_memory.h, fabric/user_regions.h): a payload from inside a
// buffer the caller registered is written to the peer straight from it, one outside any (or
// running past one's end) through the channel's send ring, byte-exact either way; a range
// removed from the list goes through the ring from the next send on; a range the domain
// refuses is logged once and copied; a detached channel's caller memory is free once detach
// returned, registered or not (fabric_detach_test.cc runs both).
#include <catch2/catch.hpp>

#include <memory>
#include <future>
#include <numeric>
#include <optional>

#include <asio/post.hpp>

#include "core/transport/user_memory.h"
#include "tests/support/fabric_channel_ends.h"
#include "tests/support/fabric_hub_thread.h"
#include "tests/support/log_capture.h"
#include "tests/support/wait_until.h"

namespace fab = rs::transport::fabric;
using rs::test::ChannelReader;
using rs::test::FabricHubThread;
using rs::test::waitUntil;

namespace {

struct Counters {
  uint64_t fromUser = 0;
  uint64_t throughRing = 0;
  bool operator==(const Counters&) const = default;
};

Counters countersOf(FabricHubThread& hub) {
  return hub.call([&] {
    return Counters{hub.hub().bytesFromUserMemory(), hub.hub().bytesThroughRing()};
  });
}

// Sends `ranges` (offset, size into `memory`) from hub A's channel in order; B reads them.
// Returns what B read.
std::vector<uint8_t> sendRanges(FabricHubThread& hubA, FabricHubThread& hubB,
                                rs::test::ConnectedChannels& c, const std::vector<uint8_t>& memory,
                                const std::vector<std::pair<size_t, size_t>>& ranges) {
  ChannelReader reader;
  std::vector<size_t> sizes;
  for (const auto& r : ranges) sizes.push_back(r.second);
  std::vector<rs::Status> done;
  hubB.call([&] { reader.start(c.b, sizes); });
  hubA.call([&] {
    for (const auto& [offset, size] : ranges)
      c.a->send(memory.data() + offset, size, [&](const rs::Status& s) { done.push_back(s); });
  });
  REQUIRE(waitUntil([&] {
    const bool sent = hubA.call([&] { return done.size() == ranges.size(); });
    return (sent && hubA.call([&] { return !c.a->failure().isOk(); })) ||
           (sent && hubB.call([&] { return reader.finished || !reader.error.isOk(); }));
  }));
  hubA.call([&] { REQUIRE(c.a->failure().toString() == "OK"); });
  hubA.call([&] {
    for (const rs::Status& s : done) CHECK(s.toString() == "OK");
  });
  return hubB.call([&] {
    CHECK(reader.error.toString() == "OK");
    return reader.bytes;
  });
}

std::vector<uint8_t> expected(const std::vector<uint8_t>& memory,
                              const std::vector<std::pair<size_t, size_t>>& ranges) {
  std::vector<uint8_t> out;
  for (const auto& [offset, size] : ranges)
    out.insert(out.end(), memory.begin() + offset, memory.begin() + offset + size);
  return out;
}

}  // namespace

TEST_CASE("payloads from inside a registered buffer are written from it, the others through the "
          "send ring, byte-exact, and a removed buffer's go through the ring",
          "[fabric][channel][zerocopy]") {
  std::vector<uint8_t> memory(256 << 10);
  for (size_t i = 0; i < memory.size(); ++i) memory[i] = static_cast<uint8_t>(i * 13 + 5);
  constexpr size_t kRegistered = 128 << 10;  // the first half
  auto list = std::make_shared<rs::transport::UserMemory>();
  const uint64_t id = list->add(memory.data(), kRegistered);
  FabricHubThread hubA("zero-copy hub"), hubB("peer hub");
  hubA.call([&] { hubA.hub().followUserMemory(list); });
  auto c = rs::test::connectTestChannels(hubA, {4, 8192}, hubB, {3, 8192});

  // Inside (several pieces, an odd start), outside, across the registered end, at its end.
  const std::vector<std::pair<size_t, size_t>> ranges = {
      {10, 50000}, {kRegistered + 7, 30000}, {kRegistered - 100, 200}, {kRegistered - 64, 64}};
  CHECK(sendRanges(hubA, hubB, c, memory, ranges) == expected(memory, ranges));
  CHECK(countersOf(hubA) == Counters{50000 + 64, 30000 + 200});

  // Removed: from the next send on, through the ring.
  REQUIRE(list->remove(id));
  const std::vector<std::pair<size_t, size_t>> again = {{10, 50000}};
  CHECK(sendRanges(hubA, hubB, c, memory, again) == expected(memory, again));
  CHECK(countersOf(hubA) == Counters{50000 + 64, 30000 + 200 + 50000});
  hubA.call([&] { c.a->close(rs::Status::ok()); });
  hubB.call([&] { c.b->close(rs::Status::ok()); });
}

TEST_CASE("a buffer the domain will not register is logged once and its payloads copied, and "
          "the others still go from their memory",
          "[fabric][channel][zerocopy]") {
  rs::test::LogCapture log;
  std::vector<uint8_t> memory(64 << 10);
  std::iota(memory.begin(), memory.end(), uint8_t{1});
  auto list = std::make_shared<rs::transport::UserMemory>();
  list->add(memory.data() + 4096, 0);  // refused: an empty registration
  list->add(memory.data(), 32 << 10);
  FabricHubThread hubA("zero-copy hub"), hubB("peer hub");
  hubA.call([&] { hubA.hub().followUserMemory(list); });
  auto c = rs::test::connectTestChannels(hubA, {4, 8192}, hubB, {3, 8192});
  const std::vector<std::pair<size_t, size_t>> ranges = {{0, 20000}, {40000, 1000}};
  CHECK(sendRanges(hubA, hubB, c, memory, ranges) == expected(memory, ranges));
  CHECK(sendRanges(hubA, hubB, c, memory, ranges) == expected(memory, ranges));
  CHECK(countersOf(hubA) == Counters{2 * 20000, 2 * 1000});
  CHECK(log.count("stays unregistered (its payloads are copied to the fabric)") == 1);
  hubA.call([&] { c.a->close(rs::Status::ok()); });
  hubB.call([&] { c.b->close(rs::Status::ok()); });
}

// A detached channel whose peer completes nothing (its thread, and with it the provider's
// progress there, held): the send's done, held while writes read the caller's registered
// memory, runs once the hub's shutdown bound passed, with one warning; never a hang.
TEST_CASE("a detached send's writes from registered memory that the peer never completes hold "
          "its done for the bound, then let go with a warning",
          "[fabric][channel][zerocopy]") {
  rs::test::LogCapture log;
  constexpr uint32_t kSlot = 64 << 10;
  std::vector<uint8_t> memory(4 * kSlot, 0x3c);
  auto list = std::make_shared<rs::transport::UserMemory>();
  list->add(memory.data(), memory.size());
  fab::FabricHubOptions options;
  options.releaseSourcesAfter = std::chrono::milliseconds(300);
  FabricHubThread hubA("zero-copy hub", options), hubB("held peer hub");
  hubA.call([&] { hubA.hub().followUserMemory(list); });
  auto c = rs::test::connectTestChannels(hubA, {4, kSlot}, hubB, {4, kSlot});
  // One payload first: the provider connects the two ends at the first write, which takes the
  // peer's progress too.
  std::vector<uint8_t> first(1000, 7);
  CHECK(sendRanges(hubA, hubB, c, first, {{0, first.size()}}) == first);
  // Peer B's thread waits here until released: nothing there makes progress meanwhile.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> holding;
  asio::post(hubB.io(), [&, released] {
    holding.set_value();
    released.wait();
  });
  holding.get_future().wait();
  std::optional<rs::Status> done;
  hubA.call([&] {
    c.a->send(memory.data(), memory.size(), [&](const rs::Status& s) { done = s; });
    return 0;
  });
  const bool completedAnyway = hubA.call([&] { return done.has_value(); });
  hubA.call([&] { c.a->detach(rs::abortedError("moved away")); });
  REQUIRE(waitUntil([&] { return hubA.call([&] { return done.has_value(); }); }));
  release.set_value();
  CHECK(done->message() == "moved away");
  CHECK(hubA.call([&] { return hubA.hub().bytesFromUserMemory(); }) == memory.size());
  CHECK(!completedAnyway);
  // Held by the writes (the peer's progress is needed to complete them), then let go.
  CHECK(log.contains("write(s) from the caller's registered memory not completed by the peer "
                     "300 ms after the channel was let go"));
  hubA.call([&] { c.a->close(rs::Status::ok()); });
  hubB.call([&] { c.b->close(rs::Status::ok()); });
}
