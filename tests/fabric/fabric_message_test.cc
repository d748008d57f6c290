// Small control messages (credits, the end of a lane) over fi_send/fi_recv: whole, in order, and
// a message larger than the posted receive is that receive's error, not a crash.
#include <catch2/catch.hpp>

#include <cstring>

#include "tests/support/fabric_side.h"

namespace fab = rs::transport::fabric;
using rs::test::FabricPoller;
using rs::test::FabricSide;

TEST_CASE("control messages arrive whole and in the order they were sent", "[fabric]") {
  constexpr size_t kWord = 8;
  constexpr int kMessages = 64;
  FabricSide receiver = rs::test::openFabricSide("receiver");
  FabricSide sender = rs::test::openFabricSide("sender");
  std::vector<uint8_t> inbox(kWord * kMessages, 0), outbox(kWord * kMessages, 0);
  fab::RegisteredMemory inboxMemory =
      rs::test::registerFabricMemory(receiver, inbox, fab::RegisteredMemory::Access::kLocal);
  fab::RegisteredMemory outboxMemory =
      rs::test::registerFabricMemory(sender, outbox, fab::RegisteredMemory::Access::kLocal);
  for (int i = 0; i < kMessages; ++i) {
    REQUIRE(receiver.endpoint->postRecv(inboxMemory, i * kWord, kWord, 1000 + i).toString() ==
            "OK");
  }
  auto peer = sender.endpoint->addPeer(receiver.endpoint->address(), "receiver");
  REQUIRE(peer.isOk());
  FabricPoller poller(*receiver.endpoint);
  for (int i = 0; i < kMessages; ++i) {
    const uint64_t word = 0xC0FFEE0000000000ull + static_cast<uint64_t>(i);
    std::memcpy(outbox.data() + i * kWord, &word, kWord);
    REQUIRE(sender.endpoint->postSend(*peer, outboxMemory, i * kWord, kWord, i).toString() == "OK");
  }
  std::vector<fab::FabricCompletion> sent;
  REQUIRE(sender.endpoint->finishPending(std::chrono::seconds(60), sent).toString() == "OK");
  for (const auto& c : sent) CHECK(c.status.toString() == "OK");
  REQUIRE(poller.waitFor([&](const auto& all) { return all.size() == kMessages; }));
  // Receives complete in the order posted, each filled by the message sent in that order.
  const auto got = poller.completions();
  for (int i = 0; i < kMessages; ++i) {
    INFO("message " << i);
    CHECK(got[i].op == fab::FabricOp::kRecv);
    CHECK(got[i].status.toString() == "OK");
    CHECK(got[i].token == static_cast<uint64_t>(1000 + i));
    CHECK(got[i].bytes == kWord);
    uint64_t word = 0;
    std::memcpy(&word, inbox.data() + i * kWord, kWord);
    CHECK(word == 0xC0FFEE0000000000ull + static_cast<uint64_t>(i));
  }
}

TEST_CASE("a message larger than the posted receive is that receive's error", "[fabric]") {
  FabricSide receiver = rs::test::openFabricSide("receiver");
  FabricSide sender = rs::test::openFabricSide("sender");
  std::vector<uint8_t> inbox(64, 0), outbox(256, 0x77);
  fab::RegisteredMemory inboxMemory =
      rs::test::registerFabricMemory(receiver, inbox, fab::RegisteredMemory::Access::kLocal);
  fab::RegisteredMemory outboxMemory =
      rs::test::registerFabricMemory(sender, outbox, fab::RegisteredMemory::Access::kLocal);
  REQUIRE(receiver.endpoint->postRecv(inboxMemory, 0, 16, 7).toString() == "OK");
  auto peer = sender.endpoint->addPeer(receiver.endpoint->address(), "receiver");
  REQUIRE(peer.isOk());
  FabricPoller poller(*receiver.endpoint);
  REQUIRE(sender.endpoint->postSend(*peer, outboxMemory, 0, 200, 1).toString() == "OK");
  std::vector<fab::FabricCompletion> sent;
  (void)sender.endpoint->finishPending(std::chrono::seconds(60), sent);
  REQUIRE(poller.waitFor([](const auto& all) { return !all.empty(); }));
  const auto got = poller.completions();
  INFO(got[0].status.toString());
  CHECK(got[0].op == fab::FabricOp::kRecv);
  CHECK(got[0].token == 7);
  CHECK(got[0].status.code() == rs::StatusCode::kProtocolError);
  CHECK_THAT(got[0].status.message(), Catch::Contains("receive of 16 bytes"));
  // Not a byte past the posted 16.
  for (size_t i = 16; i < inbox.size(); ++i) CHECK(inbox[i] == 0);
}
