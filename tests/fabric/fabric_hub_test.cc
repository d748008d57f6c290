// FabricHub: which progress model each provider gets, no polling while idle, the channel-id
// table's bound, and shutdown failing every channel with its reason.
#include <catch2/catch.hpp>

#include "tests/support/fabric_channel_ends.h"
#include "tests/support/fabric_hub_thread.h"
#include "tests/support/wait_until.h"

namespace fab = rs::transport::fabric;
using rs::test::FabricHubThread;
using rs::test::waitUntil;

TEST_CASE("a hub sleeps on the completion queue's wait fd where the provider gives one, else "
          "polls adaptively", "[fabric][hub]") {
  // Recorded, not required: proto/FABRIC.md says which provider got which, as measured here.
  for (const std::string& provider : {rs::test::fabricUnderTest().provider, std::string("shm")}) {
    const fab::FabricChoice choice =
        provider == "shm" ? fab::FabricChoice{"shm", ""} : rs::test::fabricUnderTest();
    asio::io_context io;
    auto hub = fab::FabricHub::open(io, choice);
    REQUIRE(hub.status().toString() == "OK");
    WARN(provider << ": " << ((*hub)->progress() == fab::FabricHub::Progress::kWaitFd
                                  ? "wait fd"
                                  : "adaptive polling"));
    fab::FabricHubOptions polled;
    polled.waitFd = false;
    auto second = fab::FabricHub::open(io, choice, polled);
    REQUIRE(second.status().toString() == "OK");
    CHECK((*second)->progress() == fab::FabricHub::Progress::kPolling);
  }
}

TEST_CASE("a hub polls only while a channel has outstanding work", "[fabric][hub]") {
  const bool waitFd = GENERATE(true, false);
  INFO("wait fd tried: " << waitFd);
  rs::Status handed;
  bool ran = false;
  fab::FabricHubOptions options;
  options.waitFd = waitFd;
  FabricHubThread hub("idle hub", options);
  auto ch = rs::test::openTestChannel(hub, {2, 4096}, "idle");
  hub.call([] { return 0; });
  CHECK(hub.hub().polls() == 0);
  CHECK(!hub.hub().isPolling());
  // A waiting handler is work: the hub polls until it is gone.
  hub.call([&] {
    ch->asyncNextPiece(10, [&](const rs::Status& s, std::span<const uint8_t>) {
      handed = s;
      ran = true;
    });
    return 0;
  });
  REQUIRE(waitUntil([&] { return hub.hub().polls() > 0; }));
  CHECK(hub.hub().isPolling());
  hub.call([&] { ch->close(rs::abortedError("test closed it")); });
  REQUIRE(waitUntil([&] { return hub.call([&] { return ran; }); }));
  CHECK(hub.call([&] { return handed.toString(); }) == "ABORTED: test closed it");
  REQUIRE(waitUntil([&] { return !hub.hub().isPolling(); }));
  const uint64_t polls = hub.hub().polls();
  for (int i = 0; i < 3; ++i) hub.call([] { return 0; });
  CHECK(hub.hub().polls() == polls);
  CHECK(!hub.hub().isPolling());
}

TEST_CASE("a hub opens 4096 channels and refuses the 4097th, and a closed id is free again",
          "[fabric][hub]") {
  FabricHubThread hub("full hub");
  const fab::RingShape ring{1, 4096};
  std::vector<std::shared_ptr<fab::FabricChannel>> open;
  const rs::Status last = hub.call([&] {
    for (uint32_t i = 0; i < fab::kMaxChannels; ++i) {
      auto ch = hub.hub().openChannel(ring, "channel " + std::to_string(i));
      if (!ch.isOk()) return ch.status();
      open.push_back(*ch);
    }
    return hub.hub().openChannel(ring, "one too many").status();
  });
  CHECK(open.size() == fab::kMaxChannels);
  CHECK(last.code() == rs::StatusCode::kResourceExhausted);
  CHECK_THAT(last.message(), Catch::Matchers::Contains("all 4096 channel ids in use"));
  CHECK(hub.hub().openChannels() == fab::kMaxChannels);
  const rs::Status again = hub.call([&] {
    open[17]->close(rs::Status::ok());
    auto ch = hub.hub().openChannel(ring, "again");
    if (!ch.isOk()) return ch.status();
    return (*ch)->id() == 17 ? rs::Status::ok() : rs::internalError("not id 17");
  });
  CHECK(again.toString() == "OK");
  hub.call([&] {
    for (auto& ch : open) ch->close(rs::Status::ok());
  });
  CHECK(hub.hub().openChannels() == 1);
}

TEST_CASE("a hub's shutdown fails every channel's waiting handler and pending send with its "
          "reason", "[fabric][hub]") {
  rs::test::ChannelReader reader, readerB;
  rs::test::ChannelWriter writer;
  FabricHubThread hubA("hub A"), hubB("hub B");
  auto c = rs::test::connectTestChannels(hubA, {2, 4096}, hubB, {2, 4096});
  // B takes two pieces and releases neither: A's third piece waits for a credit.
  hubB.call([&] { readerB.start(c.b, {3 * 4096}, /*autoRelease=*/false); });
  hubA.call([&] {
    reader.start(c.a, {100});
    writer.start(c.a, {std::vector<uint8_t>(3 * 4096, 7)});
  });
  REQUIRE(waitUntil([&] { return hubB.call([&] { return readerB.held; }) == 2; }));
  CHECK(hubA.call([&] { return c.a->bytesPosted(); }) == 2 * 4096);
  hubA.call([&] { hubA.hub().shutdown(rs::unavailableError("the reducer is going away")); });
  REQUIRE(waitUntil([&] {
    return hubA.call([&] { return !reader.error.isOk() && writer.results.size() == 1; });
  }));
  hubA.call([&] {
    CHECK(reader.error.toString() == "UNAVAILABLE: fabric hub 'hub A': the reducer is going away");
    CHECK(writer.results[0].toString() ==
          "UNAVAILABLE: fabric hub 'hub A': the reducer is going away");
    CHECK(c.a->failure().code() == rs::StatusCode::kUnavailable);
    CHECK(hubA.hub().openChannel({1, 4096}, "late").status().code() ==
          rs::StatusCode::kUnavailable);
  });
  hubB.call([&] { c.b->close(rs::Status::ok()); });
}

TEST_CASE("a hub keeps a receive posted for every ring slot where writes use them up, within "
          "the provider's receive queue", "[fabric][hub]") {
  // tcp does not ask for FI_RX_CQ_DATA; the option makes it count as verbs does.
  fab::FabricHubOptions options;
  options.receivesForWrites = true;
  FabricHubThread hub("verbs-like hub", options);
  CHECK(hub.call([&] { return hub.hub().receivesPosted(); }) == 2 * 64);
  auto first = rs::test::openTestChannel(hub, {100, 4096}, "first");
  CHECK(hub.call([&] { return hub.hub().receivesPosted(); }) == 2 * 64 + 100);
  const size_t queue = rs::test::fabricUnderTest().provider == "tcp" ? 2048 : 0;
  if (queue != 0) {
    auto second = rs::test::openTestChannel(hub, {1000, 4096}, "second");
    CHECK(hub.call([&] { return hub.hub().receivesPosted(); }) == 2 * 64 + 1100);
    // 128 + 1100 + 1000 > 2048: refused, nothing posted for it.
    const rs::Status refused =
        hub.call([&] { return hub.hub().openChannel({1000, 4096}, "too many").status(); });
    CHECK(refused.code() == rs::StatusCode::kResourceExhausted);
    CHECK_THAT(refused.message(), Catch::Matchers::Contains("1000 more ring slots"));
    CHECK(hub.call([&] { return hub.hub().receivesPosted(); }) == 2 * 64 + 1100);
    hub.call([&] { second->close(rs::Status::ok()); });
  }
  hub.call([&] { first->close(rs::Status::ok()); });
}
