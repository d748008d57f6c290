// A member that takes a live reducer for lost moves away from it (proto/FAILOVER.md, "A live
// reducer taken for lost"): it sends FAILOVER on its streams to the reducer and lingers for the
// reducer to end them. Two paths of that design, with real members and real reducers on
// loopback: a reducer that reads the word and never closes (a fake on the reducer's port), whose
// connections the member's Farewell closes by itself once their linger passes while the
// collectives go on exact on the survivors; and a live reducer that dropped the group that way
// (no tombstone), which the members' redials then take back ("A reducer comes back"). The
// members run in lock step; everything waits for states, never for times.
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <system_error>
#include <vector>

#include "client/communicator_core.h"
#include "tests/support/fake_reducer.h"
#include "tests/support/local_pool.h"
#include "tests/support/lock_step.h"
#include "tests/support/log_capture.h"
#include "tests/support/wait_until.h"

// Its own namespace: the sanitizer trees compile this file in one unit with other tests of
// tests/dataplane.
namespace rs::test::move_away {
namespace {

// The waits for a state between collectives, below the lock step's own (kStateDeadline): a
// member that never reaches one fails the case naming that state, not the lock step.
constexpr std::chrono::seconds kBetweenDeadline{60};

using Cores = std::vector<std::shared_ptr<client::CommunicatorCore>>;

Cores coresFor(const client::ClientOptions& options, int world) {
  const GroupId id = GroupId::random();
  Cores cores;
  for (int rank = 0; rank < world; ++rank)
    cores.push_back(std::make_shared<client::CommunicatorCore>(
        options, client::GroupSpec{id, static_cast<uint32_t>(world),
                                   static_cast<uint32_t>(rank)}));
  return cores;
}

// The lock step (tests/support/lock_step.h) on `cores`, each started on its rank's thread:
// `afterSubmit(rank, k)` runs on each rank's thread once it submitted collective k.
LockStep runCores(const Cores& cores, int collectives,
                  const std::function<void(int rank, int k)>& afterSubmit,
                  const std::function<void(int k)>& between) {
  return runLockStep(
      static_cast<int>(cores.size()), collectives,
      [&](int rank, LockStepMember& member) -> Status {
        client::CommunicatorCore& core = *cores[rank];
        RS_RETURN_IF_ERROR(core.start());
        member.collective = [&core, &afterSubmit, rank](int k, std::vector<float>& buf) -> Status {
          auto request = core.submit(buf.data(), buf.data(), kLockStepCount, DataType::kFloat32,
                                     ReduceOp::kSum, std::chrono::milliseconds(0));
          if (!request) return request.status();
          if (afterSubmit) afterSubmit(rank, k);
          if (!core.waitFor(**request, std::chrono::steady_clock::now() + kStateDeadline))
            return internalError("no end");
          Status st;
          (*request)->done(&st);
          return st;
        };
        return Status::ok();
      },
      between);
}

uint64_t abortsOf(const server::DataPlaneStats& stats) {
  uint64_t n = 0;
  for (uint64_t a : stats.groupAborts) n += a;
  return n;
}

// A reducer that takes every member's streams, reads whatever they send, and never ends a
// connection itself: it counts the FAILOVERs it reads, any frame after one, and the member's
// end of each connection that had one. Stream `longStream` of each member is given a loss bound
// (and so a farewell linger) far beyond the test's own deadlines, the other streams `linger`.
class HoldingReducer {
 public:
  HoldingReducer(uint16_t port, uint32_t longStream, std::chrono::milliseconds linger,
                 std::chrono::milliseconds longLinger)
      : fake_([=, this](FakeReducer::Socket& s) { serve(s, longStream, linger, longLinger); }, 0,
              port) {}
  ~HoldingReducer() { tearingDown_ = true; }

  std::atomic<int> streams{0};           // handshaken
  std::atomic<int> farewells{0};         // FAILOVERs read
  std::atomic<int> framesAfterWord{0};   // any frame after a FAILOVER on its connection
  std::atomic<int> endedAfterWord{0};    // the member's end after its FAILOVER, short linger
  std::atomic<int> longEndedAfterWord{0};  // the same, on the long-linger streams

 private:
  void serve(FakeReducer::Socket& s, uint32_t longStream, std::chrono::milliseconds linger,
             std::chrono::milliseconds longLinger) {
    const Greeted greeted = challengeAndReadHello(s);
    const bool isLong = greeted.hello.streamIndex == longStream;
    const std::vector<uint8_t> ack = helloAckFrame(
        8u << 20, static_cast<uint32_t>((isLong ? longLinger : linger).count()));
    writeBytes(s, ack.data(), ack.size());
    declineFabricIfAsked(s, greeted.header);
    ++streams;
    bool said = false;
    std::vector<uint8_t> payload;
    try {
      for (;;) {
        const wire::FrameHeader h = readHeaderOf(s);
        payload.resize(h.payloadLength);
        asio::read(s, asio::buffer(payload));
        if (said) ++framesAfterWord;
        if (h.type == wire::FrameType::kFailover) {
          said = true;
          ++farewells;
        }
      }
    } catch (const std::system_error&) {
      // The connection's end (EOF, or a reset): counted where the member ended it.
      if (said && !tearingDown_) ++(isLong ? longEndedAfterWord : endedAfterWord);
    }
  }

  std::atomic<bool> tearingDown_{false};
  FakeReducer fake_;  // last: its threads stop before the counters go
};

}  // namespace

TEST_CASE("a reducer that reads a member's FAILOVER and never closes: the member's farewell "
          "ends each connection by itself at its linger, and the collectives go on exact on the "
          "survivors meanwhile",
          "[failover]") {
  // Reducer 1 is a fake that completes every handshake, reads everything and answers nothing:
  // rank 0 takes it for lost right after submitting collective 0, rank 1 moves too (the
  // survivors' LOST, or its own bound), and each sends FAILOVER on both its streams to it. The
  // fake never ends a connection. Stream 1's linger (its loss bound, from the fake's HELLO_ACK)
  // is short: the member must close it by itself while it lives. Stream 0's is longer than any
  // wait here: the collectives after the move complete while it is still open, so none of them
  // waits on it.
  constexpr int kWorld = 2;
  constexpr int kCollectives = 6;
  constexpr auto kLinger = std::chrono::milliseconds(1000);
  constexpr auto kLongLinger = std::chrono::milliseconds(3600 * 1000);
  LocalPool pool(3);
  const auto endpoints = pool.endpoints();
  pool.stopReducer(1);
  auto holding = std::make_unique<HoldingReducer>(endpoints[1].port, /*longStream=*/0, kLinger,
                                                  kLongLinger);
  LogCapture log;
  auto options = testClientOptions(endpoints, 2);
  options.minChunkBytes = 16 << 10;
  options.maxChunkBytes = 64 << 10;
  options.rejoin = std::chrono::milliseconds(0);  // no redial of the fake: its streams are all
  Cores cores = coresFor(options, kWorld);
  const LockStep run = runCores(
      cores, kCollectives,
      [&](int rank, int k) {
        if (rank == 0 && k == 0) cores[0]->takeForLostForTest(1);
      },
      [&](int k) {
        if (k != 0) return;
        mustReach(waitUntil([&] { return holding->farewells.load() == kWorld * 2; },
                            kBetweenDeadline),
                  "the fake read a FAILOVER on every stream of every member");
      });
  // Collectives 1..5 ran with every long-linger connection open (its linger is an hour).
  const int openWhenDone = kWorld - holding->longEndedAfterWord.load();
  checkExactAndAlike(run, kWorld, kCollectives);
  CHECK(openWhenDone == kWorld);
  // The short-linger connections: each member ends it by itself, while it lives (no shutdown
  // yet), with nothing after its FAILOVER.
  CHECK(waitUntil([&] { return holding->endedAfterWord.load() == kWorld; }));
  CHECK(holding->streams.load() == kWorld * 2);
  CHECK(holding->framesAfterWord.load() == 0);
  for (int rank = 0; rank < kWorld; ++rank) {
    INFO("rank " << rank);
    const client::FailoverStats f = cores[rank]->failover();
    CHECK(f.lostNow == 1);
    CHECK(f.generation == 0);
    CHECK(f.rejoins == 0);
    CHECK(cores[rank]->health().toString() == "OK");
  }
  CHECK(log.contains("reducers 1 of 3 lost"));
  // No farewell outlives its member: the hour-long ones end when the member is released (a
  // farewell's pending handlers, which hold it, go with the member's io contexts).
  for (auto& core : cores) core->shutdown();
  cores.clear();
  CHECK(waitUntil([&] { return holding->longEndedAfterWord.load() == kWorld; }));
  CHECK(statsOf(pool, 0).protocolErrors == 0);
  CHECK(statsOf(pool, 2).protocolErrors == 0);
}

TEST_CASE("a live reducer that a member took for lost drops the group without a tombstone, and "
          "the members' redials take it back: later collectives exact and alike, and it reduces "
          "its share again",
          "[failover][rejoin]") {
  // Rank 0 takes live reducer 1 for lost between collectives 1 and 2 (a stall past the loss
  // bound: the reducer owed it nothing then). Its FAILOVER makes the reducer drop the group (no
  // ABORT, no tombstone), the other members read the end of their streams and move too. Every
  // member then redials reducer 1 (RS_REJOIN_MS), which no longer knows the group: it takes the
  // rejoin HELLOs as a joining group, offers, and sends JOIN_AT; the members take it back at a
  // collective boundary.
  constexpr int kWorld = 3;
  constexpr int kCollectives = 8;
  LocalPool pool(3);
  LogCapture log;
  auto options = testClientOptions(pool.endpoints(), 2);
  options.minChunkBytes = 16 << 10;
  options.maxChunkBytes = 64 << 10;
  options.rejoin = std::chrono::milliseconds(100);
  const Cores cores = coresFor(options, kWorld);
  uint64_t reducedAtRejoin = 0;
  const LockStep run = runCores(cores, kCollectives, {}, [&](int k) {
    if (k == 1) {
      cores[0]->takeForLostForTest(1);
      mustReach(waitUntil([&] { return statsOf(pool, 1).groupsMovedAway == 1; },
                          kBetweenDeadline),
                "reducer 1 dropped the group on rank 0's FAILOVER");
      mustReach(waitUntil(
                    [&] {
                      return everyMember(
                          cores, [](const client::FailoverStats& f) { return f.lostNow == 1; });
                    },
                    kBetweenDeadline),
                "every member lost reducer 1");
    }
    if (k == 2) {
      // Every member redials it, answers its JOIN_OFFER, and it sends JOIN_AT: the next
      // collective takes it back.
      mustReach(waitUntil([&] { return statsOf(pool, 1).rejoins == 1; }, kBetweenDeadline),
                "reducer 1 sent JOIN_AT");
      reducedAtRejoin = statsOf(pool, 1).reductions;
    }
  });
  for (auto& core : cores) core->shutdown();
  checkExactAndAlike(run, kWorld, kCollectives);
  for (int rank = 0; rank < kWorld; ++rank) {
    INFO("rank " << rank);
    const client::FailoverStats f = cores[rank]->failover();
    CHECK(f.rejoins == 1);
    CHECK(f.generation == 1);
    CHECK(f.lostNow == 0);
  }
  // Collectives 3..7 after JOIN_AT: 13 chunks of 64 KiB each (200000 fp32 over 3 reducers), 4
  // or 5 of them its own.
  const server::DataPlaneStats back = statsOf(pool, 1);
  CHECK(back.reductions >= reducedAtRejoin + 5 * 4);
  CHECK(back.groupsMovedAway == 1);
  CHECK(abortsOf(back) == 0);
  CHECK(back.rejoinsCancelled == 0);
  CHECK(back.protocolErrors == 0);
  CHECK(log.contains("rank 0 moved away from this reducer"));
}

}  // namespace rs::test::move_away
