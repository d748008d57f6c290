// Bookkeeping sized by world size counts against --memory-limit: a HELLO for a world-size-heavy
// group is refused with the limit named while a healthy group beside it keeps exact results,
// and the bookkeeping charged returns to zero once the groups end.
#include <catch2/catch.hpp>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <string>
#include <vector>

#include "core/wire/control_frames.h"
#include "server/failure_reason.h"
#include "server/memory_budget.h"
#include "tests/support/healthy_group.h"
#include "tests/support/local_pool.h"
#include "tests/support/raw_member.h"
#include "tests/support/wait_until.h"

namespace rs::test {

TEST_CASE("a world-size-heavy group is refused once its bookkeeping would pass --memory-limit",
          "[memory]") {
  server::ServerConfig config = testServerConfig();
  config.ioThreads = 1;
  config.memoryLimitBytes = 64ull << 20;  // 16 MiB kept for slots (2 x --max-chunk): 48 for state
  LocalPool pool(1, config);
  auto& plane = pool.reducer(0).dataPlane();
  const uint16_t port = pool.endpoints()[0].port;
  REQUIRE(server::bookkeepingBytes(wire::kMaxWorldSize, 16) > (48ull << 20));
  CHECK(plane.stats().bookkeepingBytes == 0);

  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  Status healthy;
  std::thread group([&] {
    healthy = runHealthyGroup(pool.endpoints(), {.stop = &stop, .done = &rounds});
  });
  REQUIRE(waitUntil([&] { return rounds.load() >= 1; }));
  CHECK(plane.stats().bookkeepingBytes > 0);  // the healthy group's

  // The attacker: a HELLO for the largest world, 16 streams per member.
  asio::io_context io;
  asio::ip::tcp::socket attacker(io);
  connectRaw(attacker, port);
  sendHello(attacker, GroupId::random(), 0, wire::kMaxWorldSize, 16);
  const wire::FrameHeader h = readFrameHeader(attacker);
  REQUIRE(h.type == wire::FrameType::kError);
  std::vector<uint8_t> payload(h.payloadLength);
  asio::read(attacker, asio::buffer(payload));
  wire::PeerError error;
  REQUIRE(wire::parseErrorFrame(h, payload.data(), payload.size(), &error).toString() == "OK");
  CHECK(error.code == StatusCode::kResourceExhausted);
  CHECK(error.reason.find("--memory-limit") != std::string::npos);
  CHECK(plane.stats().handshakeFailuresBy[static_cast<size_t>(server::HandshakeFailure::kLimit)] ==
        1);

  // The healthy group kept going, exact.
  const int seen = rounds.load();
  CHECK(waitUntil([&] { return rounds.load() >= seen + 2; }));
  stop = true;
  group.join();
  CHECK(healthy.toString() == "OK");
  // Every group ended: the bookkeeping charged is back to zero, and the slots' memory too.
  CHECK(waitUntil([&] { return plane.stats().bookkeepingBytes == 0; }));
  CHECK(waitUntil([&] { return plane.stats().slotBytesInUse == 0; }));
}

}  // namespace rs::test
