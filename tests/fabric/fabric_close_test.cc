// Closing our libfabric objects (fabric_error.h closeFabricObject): a close libfabric refuses
// (FI_EBUSY: a child of the object is still open) is logged and counted, and a whole transfer's
// objects (hubs, channels, their rings and windows, registered memory) are closed child before
// parent, so none is refused, even with a channel held past its hub. The count is what lets the
// ASan tree suppress libfabric's own leaks (tests/lsan.supp) without hiding one of ours.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "core/transport/fabric/fabric_error.h"
#include "core/transport/user_memory.h"
#include "tests/support/fabric_channel_ends.h"
#include "tests/support/fabric_hub_thread.h"
#include "tests/support/fabric_side.h"
#include "tests/support/wait_until.h"

namespace fab = rs::transport::fabric;

TEST_CASE("a domain closed while memory it registered is open refuses the close, and the "
          "refusal is counted",
          "[fabric][close]") {
  rs::test::FabricSide side = rs::test::openFabricSide("closed too early");
  std::vector<uint8_t> bytes(4096);
  fab::RegisteredMemory memory = rs::test::registerFabricMemory(
      side, bytes, fab::RegisteredMemory::Access::kRemoteWrite);
  side.endpoint.reset();
  const uint64_t before = fab::closesRefused();
  // The domain holds the registration: libfabric keeps the domain (and so the fabric) open.
  side.domain.reset();
  CHECK(fab::closesRefused() == before + 2);
  // The registration is still valid (its domain was leaked, not freed) and closes.
  CHECK(memory.close().toString() == "OK");
}

TEST_CASE("a transfer's fabric objects, rings, windows and registered memory included, all "
          "close without a refusal",
          "[fabric][close]") {
  std::vector<uint8_t> memory(64 << 10, 0);
  const std::vector<uint8_t> payload(20000, 7);
  auto list = std::make_shared<rs::transport::UserMemory>();
  list->add(memory.data(), memory.size());
  std::vector<rs::Status> done;
  const uint64_t before = fab::closesRefused();
  {
    // The reader holds the receiving channel past both hubs, as a session may.
    rs::test::ChannelReader reader;
    rs::test::FabricHubThread hubA{"closing writer"};
    rs::test::FabricHubThread hubB{"closing owner"};
    hubB.call([&] { hubB.hub().followUserMemory(list); });
    rs::test::ConnectedChannels c =
        rs::test::connectTestChannels(hubA, {4, 8192}, hubB, {3, 8192});
    auto window = hubB.call([&] { return c.b->openWindow(memory.data(), memory.size()); });
    REQUIRE(window.status().toString() == "OK");
    hubB.call([&] { reader.start(c.b, {payload.size(), payload.size()}); });
    hubA.call([&] {
      auto record = [&](const rs::Status& s) { done.push_back(s); };
      c.a->send(payload.data(), payload.size(), record);
      c.a->sendInto(payload.data(), payload.size(), *window, 100, record);
    });
    REQUIRE(rs::test::waitUntil([&] { return hubA.call([&] { return done.size() == 2; }); }));
    REQUIRE(rs::test::waitUntil([&] { return hubB.call([&] { return reader.finished; }); }));
    hubA.call([&] { c.a->close(rs::Status::ok()); });
    hubB.call([&] { c.b->close(rs::Status::ok()); });
  }
  for (const rs::Status& s : done) CHECK(s.toString() == "OK");
  CHECK(memory[100] == 7);
  CHECK(fab::closesRefused() == before);
}
