// Fairness between tenants: a group that stalls on a reducer (parked on its slot quota, gone
// after sending its part, not reading its results) stalls only itself. A healthy group on the
// same reducer and io thread keeps exact results, and an abandoned group's memory returns at
// once. The reducer's collective timeout is set far beyond every wait here, so that nothing
// passes by timing out.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <optional>
#include <thread>
#include <vector>

#include "core/wire/frame.h"
#include "server/failure_reason.h"
#include "tests/support/healthy_group.h"
#include "tests/support/local_pool.h"
#include "tests/support/log_capture.h"
#include "tests/support/raw_member.h"
#include "tests/support/wait_until.h"

namespace rs::test {
namespace {

constexpr uint32_t kNeverTimesOutMs = 3'600'000;
constexpr auto kGuard = std::chrono::seconds(30);  // far below the collective timeout

// One io thread, so that every group's streams share it.
server::ServerConfig sharedThreadConfig() {
  server::ServerConfig config = testServerConfig();
  config.ioThreads = 1;
  config.collectiveTimeoutMs = kNeverTimesOutMs;
  return config;
}

// A member on one raw socket (one stream, one reducer) that sends fp32 chunks by number:
// element i of chunk c from rank r is r + c + i. Its calls never throw (error codes only), so
// that a thread blocked in a write ends when the test shuts the socket down.
class RawSender {
 public:
  RawSender(uint16_t port, const GroupId& group, uint32_t world, uint32_t rank,
            int receiveBuffer = 0)
      : socket_(io_), group_(group), rank_(rank) {
    joinRaw(socket_, port, group, rank, world, receiveBuffer);
  }
  ~RawSender() { shutdown(); }

  // Chunk `chunk`'s REDUCE header and, if `withPayload`, all of its `count` elements.
  bool sendChunk(uint64_t chunk, uint32_t count, bool withPayload = true) {
    std::error_code ec;
    asio::write(socket_, asio::buffer(fp32ReduceHeader(group_, rank_, chunk, count)), ec);
    if (ec || !withPayload) return !ec;
    std::vector<float> values(count);
    for (uint32_t i = 0; i < count; ++i) values[i] = static_cast<float>(rank_ + chunk + i);
    asio::write(socket_, asio::buffer(values), ec);
    return !ec;
  }
  // The next frame's header, or nothing if the read failed (timed out or closed).
  std::optional<wire::FrameHeader> readHeader() {
    // Asio's blocking read ignores SO_RCVTIMEO (it polls on EAGAIN): wait here, bounded.
    pollfd ready{socket_.native_handle(), POLLIN, 0};
    if (::poll(&ready, 1, 10000) != 1) return std::nullopt;
    wire::HeaderBytes bytes;
    std::error_code ec;
    asio::read(socket_, asio::buffer(bytes), ec);
    wire::FrameHeader h;
    if (ec || !wire::decodeHeader(bytes.data(), bytes.size(), {}, &h).isOk()) return std::nullopt;
    return h;
  }
  // Reads one RESULT part and checks it is the sum of ranks 0 and 1 (world 2).
  bool readResultPart() {
    auto h = readHeader();
    if (!h || h->type != wire::FrameType::kResult) return false;
    std::vector<float> values(h->elemCount);
    std::error_code ec;
    asio::read(socket_, asio::buffer(values), ec);
    if (ec) return false;
    for (uint32_t i = 0; i < h->elemCount; ++i) {
      const auto base = static_cast<float>(h->chunk + h->elemOffset + i);
      if (values[i] != (0 + base) + (1 + base)) return false;
    }
    return true;
  }
  // The reason of the ABORT that must come next, or nothing if another frame (or none) came.
  std::optional<std::string> readAbortReason() {
    auto h = readHeader();
    if (!h || h->type != wire::FrameType::kAbort) return std::nullopt;
    std::string reason(h->payloadLength, '\0');
    std::error_code ec;
    asio::read(socket_, asio::buffer(reason), ec);
    if (ec) return std::nullopt;
    return reason;
  }
  // Closes the connection cleanly (FIN at a frame boundary), as a member that leaves.
  void close() {
    std::error_code ec;
    socket_.close(ec);
  }
  // Closes with an RST (SO_LINGER 0), as a host whose connection breaks.
  void reset() {
    const linger abortive{1, 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_LINGER, &abortive, sizeof(abortive));
    close();
  }
  asio::ip::tcp::socket& socket() { return socket_; }
  // Wakes a thread blocked on the socket (its call fails) and keeps the descriptor open.
  void shutdown() { ::shutdown(socket_.native_handle(), SHUT_RDWR); }

 private:
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
  GroupId group_;
  uint32_t rank_;
};

// A healthy group of two members doing `rounds` checked all-reduces on the pool. Its timeout
// is beyond the guard: a healthy group stuck behind another fails the test with that error.
Status healthyRounds(const LocalPool& pool, int rounds) {
  return runHealthyGroup(pool.endpoints(), {.rounds = rounds});
}

}  // namespace

TEST_CASE("a group parked on its slot quota does not hold back another group", "[fairness]") {
  server::ServerConfig config = sharedThreadConfig();
  config.maxSlotsPerGroup = 4;
  LocalPool pool(1, config);
  auto& plane = pool.reducer(0).dataPlane();
  const uint16_t port = pool.endpoints()[0].port;

  // Rank 0 of the stalled group opens its whole quota of chunks, which rank 1 never sends,
  // then asks for one more and parks on the quota.
  const GroupId stalled = GroupId::random();
  RawSender r0(port, stalled, 2, 0);
  RawSender r1(port, stalled, 2, 1);
  for (uint64_t c = 0; c <= config.maxSlotsPerGroup; ++c) REQUIRE(r0.sendChunk(c, 256));
  REQUIRE(waitUntil([&] { return plane.stats().parkedSessions == 1; }, kGuard));

  REQUIRE(healthyRounds(pool, 20).toString() == "OK");

  // The stalled group is still stuck where it was: it held back only itself. (The healthy
  // group's last slot closes just after its result went out: wait for that.)
  CHECK(waitUntil([&] { return plane.stats().slotsOpen == config.maxSlotsPerGroup; }, kGuard));
  CHECK(plane.stats().parkedSessions == 1);
}

TEST_CASE("a group that stalls holding memory leaves the rest of the pool to a group beside it",
          "[fairness][memory]") {
  server::ServerConfig config = sharedThreadConfig();
  config.maxChunkBytes = 256 << 10;   // F, the floor every group keeps: 2 x 256 KiB
  config.memoryLimitBytes = 4 << 20;  // sixteen of the stalled group's slots
  config.maxSlotsPerGroup = 64;       // the quota is not what stops the stalled group
  LocalPool pool(1, config);
  auto& plane = pool.reducer(0).dataPlane();
  const uint16_t port = pool.endpoints()[0].port;

  // Rank 0 of the stalled group sends 24 whole chunks of 256 KiB; rank 1 sends none. Alone on
  // the thread, the group may hold all but F of the pool: 14 chunks (3.5 MiB), and the 15th
  // parks.
  const GroupId stalled = GroupId::random();
  constexpr int kChunks = 24;
  constexpr uint32_t kCount = (256 << 10) / 4;
  RawSender r0(port, stalled, 2, 0);
  RawSender r1(port, stalled, 2, 1);
  std::thread send0([&] {
    for (int c = 0; c < kChunks; ++c)
      if (!r0.sendChunk(static_cast<uint64_t>(c), kCount)) return;
  });
  // Its share: the pool less F, less the little bookkeeping charged from the pool.
  constexpr uint64_t kShare = (4 << 20) - (512 << 10);
  const bool parked = waitUntil([&] { return plane.stats().parkedSessions == 1; }, kGuard);
  const uint64_t stalledBytes = plane.stats().slotBytesInUse;

  // A healthy group beside it gets the memory the stalled one left (without the share rule the
  // stalled group holds the whole pool and the healthy one waits for memory until its timeout).
  const Status healthy = runHealthyGroup(pool.endpoints(), {.rounds = 20, .timeoutMs = 20000});
  // The stalled group is still where it was: holding its share, its next chunk parked (the
  // healthy group's last slot closes just after its result went out: wait for it).
  const int64_t stalledSlots = static_cast<int64_t>(stalledBytes / (256 << 10));
  const bool stillStuck = waitUntil([&] {
    const auto now = plane.stats();
    return now.parkedSessions == 1 && now.slotsOpen == stalledSlots &&
           now.slotBytesInUse == stalledBytes;
  }, kGuard);
  r0.shutdown();
  r1.shutdown();
  send0.join();
  REQUIRE(parked);
  REQUIRE(healthy.toString() == "OK");
  CHECK(stalledBytes <= kShare);
  CHECK(stalledBytes >= kShare - (256 << 10));
  CHECK(stillStuck);
}

TEST_CASE("a member that sent its part and disconnects fails its group at once and frees its "
          "slots",
          "[fairness]") {
  LocalPool pool(1, sharedThreadConfig());
  auto& plane = pool.reducer(0).dataPlane();
  const uint16_t port = pool.endpoints()[0].port;
  const GroupId id = GroupId::random();
  RawSender r0(port, id, 2, 0);
  RawSender r1(port, id, 2, 1);
  // Rank 0 sends all of its two chunks; rank 1 has not sent yet. Then rank 0 leaves cleanly.
  REQUIRE(r0.sendChunk(0, 4096));
  REQUIRE(r0.sendChunk(1, 4096));
  REQUIRE(waitUntil([&] { return plane.stats().slotsOpen == 2; }, kGuard));
  REQUIRE(plane.stats().slotBytesInUse > 0);
  r0.close();

  // Rank 1 is told at once (its read gives up after 10 s; the collective timeout is an hour).
  auto h = r1.readHeader();
  REQUIRE(h.has_value());
  CHECK(h->type == wire::FrameType::kAbort);
  CHECK(waitUntil([&] { return plane.stats().slotsOpen == 0; }, kGuard));
  CHECK(waitUntil([&] { return plane.stats().slotBytesInUse == 0; }, kGuard));
  // And the reducer serves the next group.
  CHECK(healthyRounds(pool, 3).toString() == "OK");
}

TEST_CASE("a member parked on its group's quota that disconnects fails its group at once, "
          "beside a healthy group",
          "[fairness]") {
  server::ServerConfig config = sharedThreadConfig();
  config.maxSlotsPerGroup = 4;
  LocalPool pool(1, config);
  auto& plane = pool.reducer(0).dataPlane();
  const uint16_t port = pool.endpoints()[0].port;
  const bool reset = GENERATE(false, true);  // FIN, or RST
  CAPTURE(reset);

  // Rank 0 fills its group's quota with chunks rank 1 never sends, then sends one more, whole,
  // which parks on the quota with its payload unread.
  const GroupId stalled = GroupId::random();
  RawSender r0(port, stalled, 2, 0);
  RawSender r1(port, stalled, 2, 1);
  for (uint64_t c = 0; c <= config.maxSlotsPerGroup; ++c) REQUIRE(r0.sendChunk(c, 256));
  REQUIRE(waitUntil([&] { return plane.stats().parkedSessions == 1; }, kGuard));

  // A healthy group works on the same thread from now on. Then rank 0 goes away.
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  Status healthy;
  std::thread healthyThread([&] {
    healthy = runHealthyGroup(pool.endpoints(), {.stop = &stop, .done = &rounds});
  });
  const bool started = waitUntil([&] { return rounds.load() >= 1; }, kGuard);
  if (reset) r0.reset();
  else r0.close();

  // Rank 1 is told at once (its read gives up after 10 s; the collective timeout is an hour),
  // and the stalled group, its slots and its parked request are gone.
  const std::optional<std::string> reason = r1.readAbortReason();
  r1.close();
  const bool forgotten = waitUntil([&] {
    for (const auto& g : plane.registry().snapshot())
      if (g.group->id() == stalled) return false;
    return true;
  }, kGuard);
  // The healthy group kept going, exact, through all of it.
  const int before = rounds.load();
  const bool moving = waitUntil([&] { return rounds.load() >= before + 3; }, kGuard);
  stop = true;
  healthyThread.join();
  CHECK(started);
  REQUIRE(reason.has_value());
  CHECK(reason->find("rank 0") != std::string::npos);
  CHECK(reason->find("chunk 4") != std::string::npos);
  CHECK(forgotten);
  CHECK(waitUntil([&] {
    const auto now = plane.stats();
    return now.parkedSessions == 0 && now.slotsOpen == 0 && now.slotBytesInUse == 0;
  }, kGuard));
  CHECK(moving);
  CHECK(healthy.toString() == "OK");
}

TEST_CASE("a member that stops reading its results stalls only its own group", "[fairness]") {
  server::ServerConfig config = sharedThreadConfig();
  config.maxChunkBytes = 256 << 10;
  config.memoryLimitBytes = 4 << 20;  // sixteen of the stalled group's slots
  config.maxSlotsPerGroup = 4;
  LocalPool pool(1, config);
  auto& plane = pool.reducer(0).dataPlane();
  const uint16_t port = pool.endpoints()[0].port;

  // Both members send 64 chunks of 256 KiB; rank 0 reads its results, rank 1 (with a small
  // receive window) never does. Its unread results are far more than the pool.
  const GroupId stalled = GroupId::random();
  constexpr int kChunks = 64;
  constexpr uint32_t kCount = (256 << 10) / 4;
  RawSender r0(port, stalled, 2, 0);
  RawSender r1(port, stalled, 2, 1, 16 << 10);
  std::atomic<int> read0{0};
  std::thread send0([&] {
    for (int c = 0; c < kChunks; ++c)
      if (!r0.sendChunk(static_cast<uint64_t>(c), kCount)) return;
  });
  std::thread send1([&] {
    for (int c = 0; c < kChunks; ++c)
      if (!r1.sendChunk(static_cast<uint64_t>(c), kCount)) return;
  });
  std::thread reader0([&] {
    while (r0.readResultPart()) ++read0;
  });
  // The stalled group comes to a stop: a request of it parks (its quota is full of results
  // that rank 1 does not read).
  REQUIRE(waitUntil([&] { return plane.stats().parkedSessions >= 1; }, kGuard));

  const Status healthy = healthyRounds(pool, 20);
  const bool stillStuck = plane.stats().parkedSessions >= 1;
  r0.shutdown();
  r1.shutdown();
  send0.join();
  send1.join();
  reader0.join();
  REQUIRE(healthy.toString() == "OK");
  CHECK(stillStuck);
  CHECK(read0.load() > 0);
}

TEST_CASE("a member that never reads its results fails its group at the collective timeout",
          "[fairness]") {
  server::ServerConfig config = sharedThreadConfig();
  config.maxChunkBytes = 256 << 10;
  config.collectiveTimeoutMs = 2000;  // the bound on unread results under test
  config.maxSlotsPerGroup = 4;
  LocalPool pool(1, config);
  auto& plane = pool.reducer(0).dataPlane();
  const uint16_t port = pool.endpoints()[0].port;

  const GroupId id = GroupId::random();
  constexpr int kChunks = 64;
  constexpr uint32_t kCount = (256 << 10) / 4;
  RawSender r0(port, id, 2, 0);
  RawSender r1(port, id, 2, 1, 16 << 10);
  std::atomic<bool> aborted{false};
  std::thread send0([&] {
    for (int c = 0; c < kChunks; ++c)
      if (!r0.sendChunk(static_cast<uint64_t>(c), kCount)) return;
  });
  std::thread send1([&] {
    for (int c = 0; c < kChunks; ++c)
      if (!r1.sendChunk(static_cast<uint64_t>(c), kCount)) return;
  });
  std::thread reader0([&] {
    for (;;) {
      auto h = r0.readHeader();
      if (!h) return;
      if (h->type == wire::FrameType::kAbort) {
        aborted = true;
        return;
      }
      std::vector<char> payload(h->payloadLength);
      std::error_code ec;
      asio::read(r0.socket(), asio::buffer(payload), ec);
      if (ec) return;
    }
  });
  // Rank 0, which reads, is told; the memory the unread results held returns.
  const bool told = waitUntil([&] { return aborted.load(); }, kGuard);
  const bool freed = waitUntil([&] { return plane.stats().slotBytesInUse == 0; }, kGuard);
  r0.shutdown();
  r1.shutdown();
  send0.join();
  send1.join();
  reader0.join();
  CHECK(told);
  CHECK(freed);
  CHECK(healthyRounds(pool, 3).toString() == "OK");
}

}  // namespace rs::test

namespace rs::test {

namespace {

// One io thread and a handshake pool of `total`, `perPeer` from one address, in which silent
// connections stay pending throughout.
server::ServerConfig handshakePool(uint32_t total, uint32_t perPeer) {
  server::ServerConfig config = sharedThreadConfig();
  config.maxPendingHandshakes = total;
  config.maxPendingHandshakesPerPeer = perPeer;
  config.handshakeTimeoutMs = kNeverTimesOutMs;
  return config;
}

// Connections from `host` (a loopback address) that never send a HELLO.
void openSilent(std::vector<std::unique_ptr<asio::ip::tcp::socket>>& into, asio::io_context& io,
                uint16_t port, const char* host, uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) {
    into.push_back(std::make_unique<asio::ip::tcp::socket>(io));
    connectRaw(*into.back(), port, host);
  }
}

// The reducer's ERROR on `socket` (its reason), waited for at most 10 s: Asio's blocking read
// would wait for ever, so a missing reply fails the test instead of hanging it.
std::string refusalWithin10s(asio::ip::tcp::socket& socket) {
  pollfd ready{socket.native_handle(), POLLIN, 0};
  REQUIRE(::poll(&ready, 1, 10000) == 1);
  return readRefusal(socket);
}

}  // namespace

TEST_CASE("one address's silent connections cannot keep another address's workers out",
          "[fairness][handshake]") {
  LogCapture log;  // before the pool's threads
  const server::ServerConfig config = handshakePool(16, 8);
  LocalPool pool(1, config);
  auto& plane = pool.reducer(0).dataPlane();
  const uint16_t port = pool.endpoints()[0].port;
  const auto limitRefusals = [&] {
    return plane.stats().handshakeFailuresBy[static_cast<size_t>(server::HandshakeFailure::kLimit)];
  };

  // 127.0.0.2 opens connections that never send HELLO: its cap's worth, then more.
  asio::io_context io;
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> silent;
  openSilent(silent, io, port, "127.0.0.2", config.maxPendingHandshakesPerPeer);
  REQUIRE(waitUntil([&] {
    return plane.stats().handshakesPending == config.maxPendingHandshakesPerPeer;
  }, kGuard));
  constexpr uint64_t kExtra = 4;
  openSilent(silent, io, port, "127.0.0.2", kExtra);
  // The extra ones are refused at once, with an ERROR (instead of a CHALLENGE) that names the
  // flag, counted as 'limit'.
  REQUIRE(waitUntil([&] { return limitRefusals() == kExtra; }, kGuard));
  CHECK(plane.stats().handshakesPending == config.maxPendingHandshakesPerPeer);
  for (size_t i = config.maxPendingHandshakesPerPeer; i < silent.size(); ++i) {
    CHECK(refusalWithin10s(*silent[i]).find("--max-pending-handshakes-per-peer") != std::string::npos);
  }
  CHECK(log.contains("--max-pending-handshakes-per-peer"));

  // Workers from 127.0.0.1 still join (4 streams, within the global pool) and stay exact.
  CHECK(runHealthyGroup(pool.endpoints(), {.rounds = 10}).toString() == "OK");
  CHECK(limitRefusals() == kExtra);
  // The silent connections held their places all along; closing them gives the places back.
  CHECK(plane.stats().handshakesPending == config.maxPendingHandshakesPerPeer);
  silent.clear();
  CHECK(waitUntil([&] { return plane.stats().handshakesPending == 0; }, kGuard));
}

TEST_CASE("a newcomer host gets in while four hosts hold their share of pending handshakes",
          "[fairness][handshake]") {
  LogCapture log;  // before the pool's threads
  const server::ServerConfig config = handshakePool(32, 8);
  LocalPool pool(1, config);
  auto& plane = pool.reducer(0).dataPlane();
  const uint16_t port = pool.endpoints()[0].port;

  // Four hosts (127.0.0.2-5) each open their share of silent connections: the pool is full.
  asio::io_context io;
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> silent;
  for (const char* host : {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}) {
    openSilent(silent, io, port, host, config.maxPendingHandshakesPerPeer);
    // Each host's connections are older than the next host's.
    REQUIRE(waitUntil([&] { return plane.stats().handshakesPending == int64_t(silent.size()); },
                      kGuard));
  }

  // A healthy group from a fifth host (127.0.0.1), four streams, joins and stays exact.
  CHECK(runHealthyGroup(pool.endpoints(), {.rounds = 10}).toString() == "OK");
  // Each of its streams that found the pool full (one at least, at most its four: those that
  // came after others had joined found room) took the place of the oldest handshake of a host
  // holding the most (of those at the same count, the one whose oldest is oldest): the first
  // connection of the first host, then of the second... Each was told why after its CHALLENGE,
  // naming the flag, and counted.
  const auto stats = plane.stats();
  const uint64_t evictions = stats.handshakeEvictions;
  CHECK(evictions >= 1);
  CHECK(evictions <= 4);
  CHECK(stats.handshakeFailuresBy[static_cast<size_t>(server::HandshakeFailure::kLimit)] ==
        evictions);
  CHECK(stats.handshakesPending == static_cast<int64_t>(silent.size() - evictions));
  const auto told = [&](size_t i) {
    pollfd ready{silent[i]->native_handle(), POLLIN, 0};
    return ::poll(&ready, 1, 0) == 1;
  };
  for (auto& s : silent) (void)readChallenge(*s);  // every one got its CHALLENGE
  for (size_t i = 0; i < silent.size(); ++i) {
    INFO("connection " << i);
    if (i % config.maxPendingHandshakesPerPeer != 0 ||
        i / config.maxPendingHandshakesPerPeer >= evictions) {
      CHECK_FALSE(told(i));  // still pending
      continue;
    }
    REQUIRE(waitUntil([&] { return told(i); }, kGuard));
    CHECK(refusalWithin10s(*silent[i]).find("(--max-pending-handshakes)") != std::string::npos);
  }
  CHECK(log.contains("--max-pending-handshakes"));
  silent.clear();
  CHECK(waitUntil([&] { return plane.stats().handshakesPending == 0; }, kGuard));
}

TEST_CASE("a newcomer is refused by name when no host holds two more handshakes than it",
          "[fairness][handshake]") {
  LocalPool pool(1, handshakePool(4, 4));
  auto& plane = pool.reducer(0).dataPlane();
  const uint16_t port = pool.endpoints()[0].port;

  // Four hosts with one pending handshake each fill the pool; a fifth has none. Evicting one
  // of theirs would only move the excess around: the fifth host is refused, and told why.
  asio::io_context io;
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> silent;
  for (const char* host : {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"})
    openSilent(silent, io, port, host, 1);
  REQUIRE(waitUntil([&] { return plane.stats().handshakesPending == 4; }, kGuard));
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> newcomer;
  openSilent(newcomer, io, port, "127.0.0.6", 1);
  const std::string why = refusalWithin10s(*newcomer.back());
  CHECK(why.find("--max-pending-handshakes)") != std::string::npos);
  CHECK(plane.stats().handshakeEvictions == 0);
  CHECK(plane.stats().handshakesPending == 4);
}

}  // namespace rs::test
