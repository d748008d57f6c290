// FabricChannel's data path between two hubs on two io threads, over the provider under test:
// payloads byte-exact in both directions at once, pieces in order and of the sizes asked for,
// credits that stall the sender and let it resume, and a hub that does not poll when idle.
#include <catch2/catch.hpp>

#include <random>

#include "tests/support/fabric_channel_ends.h"
#include "tests/support/fabric_hub_thread.h"
#include "tests/support/wait_until.h"

namespace fab = rs::transport::fabric;
using rs::test::ChannelReader;
using rs::test::ChannelWriter;
using rs::test::FabricHubThread;
using rs::test::waitUntil;

namespace {

std::vector<std::vector<uint8_t>> channelPayloads(const std::vector<size_t>& sizes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<uint8_t>> out;
  for (size_t n : sizes) {
    std::vector<uint8_t> p(n);
    for (auto& b : p) b = static_cast<uint8_t>(rng());
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<uint8_t> concatenated(const std::vector<std::vector<uint8_t>>& payloads) {
  std::vector<uint8_t> all;
  for (const auto& p : payloads) all.insert(all.end(), p.begin(), p.end());
  return all;
}

// Where two byte strings first differ; their common length if one is a prefix of the other,
// and SIZE_MAX if they are equal (printable in a failed CHECK, unlike megabytes).
size_t channelMismatch(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  if (got == want) return SIZE_MAX;
  const size_t n = std::min(got.size(), want.size());
  for (size_t i = 0; i < n; ++i) {
    if (got[i] != want[i]) return i;
  }
  return n;
}

// Both hubs have nothing outstanding and their loops stopped; a round trip through each io
// thread then shows that no poll was left scheduled.
void requireIdleHubs(FabricHubThread& a, FabricHubThread& b) {
  REQUIRE(waitUntil([&] { return !a.hub().isPolling() && !b.hub().isPolling(); }));
  const uint64_t pollsA = a.hub().polls(), pollsB = b.hub().polls();
  for (int i = 0; i < 3; ++i) {
    a.call([] { return 0; });
    b.call([] { return 0; });
  }
  CHECK(a.hub().polls() == pollsA);
  CHECK(b.hub().polls() == pollsB);
  CHECK(!a.hub().isPolling());
  CHECK(!b.hub().isPolling());
}

}  // namespace

TEST_CASE("channel payloads of many sizes arrive byte-exact in both directions at once, in "
          "pieces of the sizes asked for", "[fabric][channel]") {
  const bool waitFd = GENERATE(true, false);
  INFO("wait fd tried: " << waitFd);
  const std::vector<size_t> sizes = {1,    3,        4095,          4096,     4097, 8191,
                                     8192, 3 * 8192 + 17, 65536 + 1, (size_t{1} << 20) + 3};
  ChannelReader readerA, readerB;
  ChannelWriter writerA, writerB;
  const auto toB = channelPayloads(sizes, 1), toA = channelPayloads(sizes, 2);
  fab::FabricHubOptions options;
  options.waitFd = waitFd;
  FabricHubThread hubA("hub A", options), hubB("hub B", options);
  if (!waitFd) CHECK(hubA.hub().progress() == fab::FabricHub::Progress::kPolling);
  // Rings of different shapes: each side cuts by the other's slot size.
  const fab::RingShape ringA{4, 4096}, ringB{3, 8192};
  auto c = rs::test::connectTestChannels(hubA, ringA, hubB, ringB);
  requireIdleHubs(hubA, hubB);  // connected, nothing asked: no polling
  hubA.call([&] {
    readerA.start(c.a, sizes);
    writerA.start(c.a, toB);
  });
  hubB.call([&] {
    readerB.start(c.b, sizes);
    writerB.start(c.b, toA);
  });
  REQUIRE(waitUntil([&] {
    return hubA.call([&] { return readerA.finished || !readerA.error.isOk(); }) &&
           hubB.call([&] { return readerB.finished || !readerB.error.isOk(); }) &&
           hubA.call([&] { return writerA.results.size(); }) == sizes.size() &&
           hubB.call([&] { return writerB.results.size(); }) == sizes.size();
  }));
  hubA.call([&] {
    CHECK(readerA.error.toString() == "OK");
    CHECK(writerA.allOk());
    CHECK(readerA.pieces == readerA.expectedPieces);
    CHECK(channelMismatch(readerA.bytes, concatenated(toA)) == SIZE_MAX);
    CHECK(c.a->bytesPosted() == concatenated(toB).size());
    CHECK(c.a->failure().toString() == "OK");
  });
  hubB.call([&] {
    CHECK(readerB.error.toString() == "OK");
    CHECK(writerB.allOk());
    CHECK(readerB.pieces == readerB.expectedPieces);
    CHECK(channelMismatch(readerB.bytes, concatenated(toB)) == SIZE_MAX);
    CHECK(c.b->failure().toString() == "OK");
  });
  // B's ring took A's 8 KiB pieces: the 1 MiB payload alone cycled its 3 credits 43 times.
  CHECK(readerB.pieces.size() > 3 * ringB.slots);
  requireIdleHubs(hubA, hubB);
  CHECK(hubA.hub().dropped() == 0);
  CHECK(hubB.hub().dropped() == 0);
  hubA.call([&] { c.a->close(rs::Status::ok()); });
  hubB.call([&] { c.b->close(rs::Status::ok()); });
}

TEST_CASE("a channel's sender stalls without credits and resumes on each release",
          "[fabric][channel]") {
  constexpr uint32_t kSlot = 4096;
  ChannelReader reader;
  ChannelWriter writer;
  const auto payload = channelPayloads({5 * kSlot}, 3);
  FabricHubThread hubA("sender hub"), hubB("receiver hub");
  auto c = rs::test::connectTestChannels(hubA, {1, kSlot}, hubB, {2, kSlot});
  hubB.call([&] { reader.start(c.b, {5 * kSlot}, /*autoRelease=*/false); });
  hubA.call([&] { writer.start(c.a, payload); });
  // Two credits: two pieces, and the sender has posted exactly those.
  REQUIRE(waitUntil([&] { return hubB.call([&] { return reader.held; }) == 2; }));
  CHECK(hubA.call([&] { return c.a->bytesPosted(); }) == 2 * kSlot);
  CHECK(hubA.call([&] { return writer.results.size(); }) == 0);
  for (size_t released = 1; released <= 3; ++released) {
    REQUIRE(hubB.call([&] { return c.b->release(); }).toString() == "OK");
    REQUIRE(waitUntil([&] { return hubB.call([&] { return reader.held; }) == 2 + released; }));
    CHECK(hubA.call([&] { return c.a->bytesPosted(); }) == (2 + released) * kSlot);
  }
  REQUIRE(waitUntil([&] { return hubA.call([&] { return writer.results.size(); }) == 1; }));
  hubA.call([&] { CHECK(writer.allOk()); });
  hubB.call([&] {
    CHECK(reader.finished);
    CHECK(channelMismatch(reader.bytes, payload[0]) == SIZE_MAX);
    // Two pieces are still held: releasing more than were handed out is refused.
    CHECK(c.b->release().toString() == "OK");
    CHECK(c.b->release().toString() == "OK");
    CHECK(c.b->release().code() == rs::StatusCode::kFailedPrecondition);
  });
  hubA.call([&] { c.a->close(rs::Status::ok()); });
  hubB.call([&] { c.b->close(rs::Status::ok()); });
}
