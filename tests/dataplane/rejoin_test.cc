// A restarted reducer is taken back (proto/FAILOVER.md, "A reducer comes back"): real reducers
// in this process on loopback, real members. A reducer is stopped between collectives and a new
// one started on its port; every member redials it, and from the agreed chunk on it reduces its
// share again: every collective on every member exact, the same bits on every member, and the
// restarted reducer's own counters show the chunks it reduced; also where it comes back while
// two members are in a collective and the third is not (T is then the next collective, which
// the third reaches after one collective without it). The cancels that can be driven
// without timing: a member that never redials (the reducer's wait for it ends at the group's
// loss bound), and the restarted reducer lost again before JOIN_AT. Two of four reducers lost
// in turn, each taken back in turn (the dead set shrinks from {1,3} to {1}, then to none). The
// members' own bounds, against fakes on the stopped reducer's port: a redial target silent
// before its handshake or after it (no JOIN_OFFER), silent during the hold (between JOIN and
// JOIN_AT), and a JOIN_AT below the member's JOIN. The members run in lock step; everything
// waits for states (the reducers' and the members' counters), never for times.
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/wire/rejoin_frames.h"
#include "tests/support/fake_reducer.h"
#include "tests/support/local_pool.h"
#include "tests/support/lock_step.h"
#include "tests/support/wait_until.h"

namespace rs::test {
namespace {

using client::FailoverStats;

// The waits for a rejoin's states, below the lock step's own (kStateDeadline): a member that
// never reaches one fails the case naming that state, not the lock step.
constexpr std::chrono::seconds kRejoinDeadline{60};

struct Plan {
  int world = 3;
  int reducers = 3;
  int collectives = 10;
  // Per rank: RS_REJOIN_MS (0: this member never redials).
  std::function<std::chrono::milliseconds(int rank)> rejoin = [](int) {
    return std::chrono::milliseconds(100);
  };
  // RS_LOSS_DETECT_MS (0: the reducers'): a member's waits for a redial's JOIN_OFFER and
  // JOIN_AT are twice it.
  std::chrono::milliseconds lossDetect{0};
};

struct Run : LockStep {
  std::vector<FailoverStats> after;  // [rank], at the end
};

using Between = std::function<void(int k, const std::vector<client::Communicator*>&)>;

// The lock step (tests/support/lock_step.h) on plan.world members, each connected on its rank's
// thread, with between(k, members). rank0Late(k, members, submitted), where given, runs on rank
// 0's thread before it submits collective k, while the others may have submitted theirs:
// `submitted` counts every member's submits so far. Every member stays until every member is
// done.
Run runPlan(LocalPool& pool, const Plan& plan, const Between& between,
            const std::function<void(int k, const std::vector<client::Communicator*>&,
                                     const std::atomic<int>& submitted)>& rank0Late = {}) {
  Run run;
  run.after.resize(plan.world);
  const GroupId id = GroupId::random();
  std::mutex mu;
  std::vector<client::Communicator*> members(plan.world, nullptr);
  std::atomic<int> submitted{0};
  static_cast<LockStep&>(run) = runLockStep(
      plan.world, plan.collectives,
      [&](int rank, LockStepMember& member) -> Status {
        auto options = testClientOptions(pool.endpoints(), 2);
        options.minChunkBytes = 16 << 10;
        options.maxChunkBytes = 64 << 10;
        options.rejoin = plan.rejoin(rank);
        options.lossDetect = plan.lossDetect;
        auto connected = client::Communicator::connect(
            options, {id, static_cast<uint32_t>(plan.world), static_cast<uint32_t>(rank)});
        if (!connected) return connected.status();
        std::shared_ptr<client::Communicator> comm = std::move(*connected);
        {
          std::lock_guard lock(mu);
          members[rank] = comm.get();
        }
        member.collective = [&, rank, comm](int k, std::vector<float>& buf) -> Status {
          if (rank == 0 && rank0Late) rank0Late(k, members, submitted);
          auto request = comm->allReduceAsync(buf.data(), buf.data(), kLockStepCount,
                                              DataType::kFloat32, ReduceOp::kSum);
          ++submitted;
          return request ? (*request)->wait() : request.status();
        };
        member.done = [&run, rank, comm] { run.after[rank] = comm->failover(); };
        return Status::ok();
      },
      [&](int k) { between(k, members); }, /*stayUntilAllDone=*/true);
  return run;
}

bool lostOne(const FailoverStats& f) { return f.lostNow == 1; }

// Two members, two reducers, six collectives.
Plan twoByTwo() {
  Plan plan;
  plan.world = 2;
  plan.reducers = 2;
  plan.collectives = 6;
  return plan;
}

// As twoByTwo; rank 1 never redials (RS_REJOIN_MS=0), so no rejoin completes.
Plan oneNeverRedials() {
  Plan plan = twoByTwo();
  plan.rejoin = [](int rank) { return std::chrono::milliseconds(rank == 1 ? 0 : 100); };
  return plan;
}

// Every collective exact and alike, and every member went on without reducer 1: none taken
// back, one lost at the end.
void checkWentOnWithout(const Plan& plan, const Run& run) {
  checkExactAndAlike(run, plan.world, plan.collectives);
  for (int rank = 0; rank < plan.world; ++rank) {
    INFO("rank " << rank);
    CHECK(run.after[rank].rejoins == 0);
    CHECK(run.after[rank].lostNow == 1);
  }
}

// Waits for reducer 1's JOIN_AT (every member answered its offer); what it had reduced then.
uint64_t reducedAtJoinAt(LocalPool& pool) {
  mustReach(waitUntil([&] { return statsOf(pool, 1).rejoins == 1; }),
            "statsOf(pool, 1).rejoins == 1");
  return statsOf(pool, 1).reductions;
}

// Every collective exact and alike, and every member took reducer 1 back once and lost none;
// the reducer reduced nothing by its JOIN_AT and from T on its home chunks and no other
// (`homeChunksFromT`), with no cancel and no protocol error.
void checkTakenBack(LocalPool& pool, const Plan& plan, const Run& run, uint64_t reducedAtRejoin,
                    uint64_t homeChunksFromT) {
  checkExactAndAlike(run, plan.world, plan.collectives);
  for (int rank = 0; rank < plan.world; ++rank) {
    INFO("rank " << rank);
    CHECK(run.after[rank].rejoins == 1);
    CHECK(run.after[rank].generation == 1);
    CHECK(run.after[rank].lostNow == 0);
  }
  CHECK(reducedAtRejoin == 0);
  const server::DataPlaneStats restarted = statsOf(pool, 1);
  CHECK(restarted.reductions == homeChunksFromT);
  CHECK(restarted.rejoinsCancelled == 0);
  CHECK(restarted.protocolErrors == 0);
}

// A fake's side of a redial's handshake: CHALLENGE, the member's HELLO (which must carry the
// rejoin flag), HELLO_ACK. Returns the HELLO's header and its stream index.
struct Redialled {
  wire::FrameHeader hello;
  uint32_t stream = 0;
};
Redialled acceptRedial(FakeReducer::Socket& s) {
  const Greeted g = challengeAndReadHello(s);
  if ((g.header.flags & wire::kFlagRejoin) == 0) throw std::runtime_error("not a rejoin HELLO");
  const std::vector<uint8_t> ack = helloAckFrame(8u << 20);
  writeBytes(s, ack.data(), ack.size());
  return {g.header, g.hello.streamIndex};
}

// A fake on a stopped reducer's port, run in `between`: `serve` per redial connection, and the
// member's close of a connection counted once `serve` returns (the end of a connection that
// the fake's own teardown caused is not counted).
struct RedialFake {
  std::atomic<int> closedByMember{0};
  std::atomic<bool> tearingDown{false};
  std::optional<FakeReducer> fake;
  void start(uint16_t port, std::function<void(FakeReducer::Socket&)> serve) {
    fake.emplace(
        [this, serve = std::move(serve)](FakeReducer::Socket& s) {
          serve(s);
          readUntilClosed(s);
          if (!tearingDown) ++closedByMember;
        },
        0, port);
  }
  void stop() {
    tearingDown = true;
    fake.reset();
  }
};

bool everyMemberCancelled(const std::vector<client::Communicator*>& members) {
  return everyMember(members, [](const FailoverStats& f) { return f.rejoinsCancelled >= 1; });
}

// A fake's JOIN_OFFER on a redial's stream 0.
void offerRejoin(FakeReducer::Socket& s, const Redialled& r) {
  const wire::HeaderBytes offer =
      wire::encodeHeader(wire::joinOfferHeader(r.hello.group, r.hello.rank));
  writeBytes(s, offer.data(), offer.size());
}

// In `between` at collective 1, collective 0 having stopped reducer 1: once every member lost
// it, `fake` on its port takes every redial, offers the rejoin on each one's stream 0 and hands
// that stream on to `afterOffer`.
void offerInPlaceOfReducer1(
    RedialFake& fake, const LocalPool& pool, const std::vector<client::Communicator*>& members,
    std::function<void(FakeReducer::Socket&, const Redialled&)> afterOffer) {
  mustReach(waitUntil([&] { return everyMember(members, lostOne); }, kRejoinDeadline),
            "every member lost reducer 1");
  fake.start(pool.endpoints()[1].port,
             [afterOffer = std::move(afterOffer)](FakeReducer::Socket& s) {
               const Redialled r = acceptRedial(s);
               if (r.stream != 0) return;
               offerRejoin(s, r);
               afterOffer(s, r);
             });
}

}  // namespace

TEST_CASE("a reducer lost and restarted on its port is taken back: later collectives exact and "
          "alike, and it reduces its share again",
          "[rejoin]") {
  Plan plan;
  LocalPool pool(plan.reducers);
  uint64_t reducedAtRejoin = 0;
  const Run run = runPlan(pool, plan, [&](int k, const auto& members) {
    if (k == 1) pool.stopReducer(1);
    if (k == 2) {
      mustReach(waitUntil([&] { return everyMember(members, lostOne); }),
                "everyMember(members, lostOne)");
      pool.restartReducer(1);
      // Every member redials it (on its io threads, between collectives), answers its
      // JOIN_OFFER with collective 3's first chunk, and it sends JOIN_AT(T) for that chunk:
      // collective 3 takes it back. Waited for here, before collective 3: a JOIN_OFFER that
      // came while collective 3 ran would be answered with collective 4's chunk, and which
      // collective it reduces first would be the scheduler's to say.
      reducedAtRejoin = reducedAtJoinAt(pool);
    }
  });
  // Collectives of 13 chunks of 64 KiB (200000 fp32), so T = 39; of chunks 39..129
  // (collectives 3..9) those with c mod 3 == 1, 40 to 127: 30.
  checkTakenBack(pool, plan, run, reducedAtRejoin, 30);
}

TEST_CASE("a reducer taken back while two members are in a collective and one is not: the "
          "rejoin point is the next collective, the member below it runs its collective without "
          "it, and every member takes it back there, exact and alike",
          "[rejoin]") {
  // Ranks 1 and 2 submit collective 3 (their next chunk is collective 4's first) while rank 0
  // holds back; only then is reducer 1 restarted. Rank 0 answers JOIN with collective 3's first
  // chunk, the others with collective 4's: T is collective 4's first. Rank 0 runs collective 3
  // under the dead set (its chunks of reducer 1 on lanes, as the others' already are), and every
  // member's collective 4 waits for the commit of reducer 1's chunks below T, then switches.
  Plan plan;
  LocalPool pool(plan.reducers);
  uint64_t reducedAtRejoin = 0;
  const Run run = runPlan(
      pool, plan,
      [&](int k, const auto& members) {
        if (k == 1) pool.stopReducer(1);
        if (k == 2)
          mustReach(waitUntil([&] { return everyMember(members, lostOne); }),
                    "everyMember(members, lostOne)");
      },
      [&](int k, const auto&, const std::atomic<int>& submitted) {
        if (k != 3) return;
        mustReach(waitUntil([&] { return submitted.load() == 3 * plan.world + plan.world - 1; }),
                  "ranks 1 and 2 submitted collective 3");
        pool.restartReducer(1);
        reducedAtRejoin = reducedAtJoinAt(pool);
      });
  // T = 52 (collectives of 13 chunks); of chunks 52..129 (collectives 4..9) those with
  // c mod 3 == 1, 52 to 127: 26.
  checkTakenBack(pool, plan, run, reducedAtRejoin, 26);
}

TEST_CASE("a member that never redials cancels the rejoin at the group's loss bound: the others "
          "go on without the reducer, exact",
          "[rejoin]") {
  const Plan plan = oneNeverRedials();
  LocalPool pool(plan.reducers);
  const Run run = runPlan(pool, plan, [&](int k, const auto& members) {
    if (k == 0) pool.stopReducer(1);
    if (k == 1) {
      mustReach(waitUntil([&] { return everyMember(members, lostOne); }),
                "everyMember(members, lostOne)");
      // Its wait for rank 1 ends at the group's loss bound: this reducer's --loss-detect-ms.
      server::ServerConfig config = testServerConfig();
      config.lossDetectMs = 300;
      pool.restartReducer(1, config);
    }
    if (k == 2) {
      mustReach(waitUntil([&] { return statsOf(pool, 1).rejoinsCancelled >= 1; }),
                "statsOf(pool, 1).rejoinsCancelled >= 1");
      mustReach(waitUntil([&] { return members[0]->failover().rejoinsCancelled >= 1; }),
                "members[0]->failover().rejoinsCancelled >= 1");
    }
  });
  checkExactAndAlike(run, plan.world, plan.collectives);
  CHECK(run.after[0].rejoins == 0);
  CHECK(run.after[0].lostNow == 1);
  CHECK(run.after[1].rejoinsCancelled == 0);  // it never redialled
  CHECK(statsOf(pool, 1).rejoins == 0);
  CHECK(statsOf(pool, 1).reductions == 0);
}

TEST_CASE("the restarted reducer lost again before JOIN_AT cancels the rejoin: the members go on "
          "without it, exact",
          "[rejoin]") {
  // Rank 1 never redials, so that the rejoin cannot complete before the reducer is stopped.
  const Plan plan = oneNeverRedials();
  LocalPool pool(plan.reducers);
  const Run run = runPlan(pool, plan, [&](int k, const auto& members) {
    if (k == 0) pool.stopReducer(1);
    if (k == 1) {
      mustReach(waitUntil([&] { return everyMember(members, lostOne); }),
                "everyMember(members, lostOne)");
      pool.restartReducer(1);
      // Rank 0's two streams are in: the reducer waits for rank 1's, and is lost meanwhile.
      mustReach(waitUntil([&] { return members[0]->failover().redialUp; }),
                "members[0]->failover().redialUp");
      pool.stopReducer(1);
      mustReach(waitUntil([&] { return members[0]->failover().rejoinsCancelled >= 1; }),
                "members[0]->failover().rejoinsCancelled >= 1");
    }
  });
  checkExactAndAlike(run, plan.world, plan.collectives);
  CHECK(run.after[0].rejoins == 0);
  CHECK(run.after[0].lostNow == 1);
}

TEST_CASE("a reducer lost after a member's JOIN, before JOIN_AT, ends that member's hold: it "
          "goes on without the reducer, exact",
          "[rejoin]") {
  // In the stopped reducer's place, on its port, a fake that offers the rejoin on every
  // redial's stream 0 at once, reads the member's JOIN and then ends the connection: lost with
  // the member holding its collectives. Each member's hold ends (a cancel), and it redials later.
  const Plan plan = twoByTwo();
  LocalPool pool(plan.reducers);
  std::atomic<int> joins{0};
  std::optional<FakeReducer> fake;
  const Run run = runPlan(pool, plan, [&](int k, const auto& members) {
    if (k == 0) pool.stopReducer(1);
    if (k == 1) {
      mustReach(waitUntil([&] { return everyMember(members, lostOne); }),
                "every member lost reducer 1");
      fake.emplace(
          [&](FakeReducer::Socket& s) {
            const Redialled r = acceptRedial(s);
            if (r.stream != 0) return readUntilClosed(s);
            offerRejoin(s, r);
            if (readHeaderOf(s).type == wire::FrameType::kJoin) ++joins;
            ::shutdown(s.native_handle(), SHUT_RDWR);  // lost before JOIN_AT
          },
          0, pool.endpoints()[1].port);
    }
    if (k == 2)
      mustReach(waitUntil([&] { return everyMemberCancelled(members); }),
                "every member's hold cancelled");
  });
  checkWentOnWithout(plan, run);
  CHECK(joins.load() >= 2);
}

TEST_CASE("two of four reducers lost in turn each rejoin when restarted, in turn: every "
          "collective exact and alike, and each reduces again",
          "[rejoin]") {
  // Reducer 1 is lost, then reducer 3; 3 is restarted first and taken back while 1 is still
  // lost (the dead set shrinks from {1,3} to {1}: the lanes are numbered anew), then 1.
  Plan plan;
  plan.reducers = 4;
  plan.collectives = 10;
  LocalPool pool(plan.reducers);
  const auto lost = [](uint32_t n) {
    return [n](const FailoverStats& f) { return f.lostNow == n; };
  };
  uint64_t reduced3AtSecondRestart = 0;
  const Run run = runPlan(pool, plan, [&](int k, const auto& members) {
    if (k == 0) pool.stopReducer(1);
    if (k == 1) {
      mustReach(waitUntil([&] { return everyMember(members, lost(1)); }), "reducer 1 lost");
      pool.stopReducer(3);
    }
    if (k == 2) {
      mustReach(waitUntil([&] { return everyMember(members, lost(2)); }), "reducers 1, 3 lost");
      pool.restartReducer(3);
    }
    if (k == 3)
      mustReach(waitUntil([&] { return statsOf(pool, 3).rejoins == 1; }, kRejoinDeadline),
                "reducer 3's JOIN_AT with reducer 1 still lost");
    if (k == 4) {
      // Collective 3 or 4 (whichever started at its T) took reducer 3 back on every member:
      // reducer 1 is the only one lost.
      mustReach(everyMember(members,
                            [](const FailoverStats& f) {
                              return f.rejoins == 1 && f.generation == 1 && f.lostNow == 1;
                            }),
                "every member took reducer 3 back by collective 4");
      reduced3AtSecondRestart = statsOf(pool, 3).reductions;
      pool.restartReducer(1);
    }
    if (k == 5)
      mustReach(waitUntil([&] { return statsOf(pool, 1).rejoins == 1; }, kRejoinDeadline),
                "reducer 1's JOIN_AT");
  });
  checkExactAndAlike(run, plan.world, plan.collectives);
  for (int rank = 0; rank < plan.world; ++rank) {
    INFO("rank " << rank);
    CHECK(run.after[rank].rejoins == 2);
    CHECK(run.after[rank].generation == 2);
    CHECK(run.after[rank].lostNow == 0);
    CHECK(run.after[rank].rejoinsCancelled == 0);
  }
  // Each restarted reducer reduced its share of the collectives after it was taken back: 3 from
  // collective 3 or 4 on (with some of reducer 1's chunks while 1 was lost), 1 from collective
  // 5 or 6 on.
  for (int r : {1, 3}) {
    INFO("reducer " << r);
    const server::DataPlaneStats stats = statsOf(pool, r);
    CHECK(stats.rejoins == 1);
    CHECK(stats.rejoinsCancelled == 0);
    CHECK(stats.protocolErrors == 0);
  }
  CHECK(reduced3AtSecondRestart >= 2);  // collective 4: 13 chunks over 4 reducers
  CHECK(statsOf(pool, 3).reductions > reduced3AtSecondRestart);
  CHECK(statsOf(pool, 1).reductions >= 4 * 2);  // collectives 6..9
}

TEST_CASE("a rejoin's redial target that accepts and stays silent is given up within the "
          "member's bounds, before its handshake and after it (no JOIN_OFFER), and the members "
          "go on exact and redial",
          "[rejoin]") {
  Plan plan = twoByTwo();
  plan.lossDetect = std::chrono::milliseconds(2000);  // the wait for JOIN_OFFER: 4 s
  LocalPool pool(plan.reducers);
  RedialFake silent;
  const uint16_t port = pool.endpoints()[1].port;
  const Run run = runPlan(pool, plan, [&](int k, const auto& members) {
    if (k == 0) pool.stopReducer(1);
    if (k == 1) {
      mustReach(waitUntil([&] { return everyMember(members, lostOne); }, kRejoinDeadline),
                "every member lost reducer 1");
      // Accepts, and says nothing: no CHALLENGE. The redial's connect timeout ends it.
      silent.start(port, [](FakeReducer::Socket&) {});
      mustReach(waitUntil([&] { return silent.closedByMember.load() >= 2 * 2; },
                          kRejoinDeadline),
                "every member gave up a silent redial (before its handshake)");
      silent.stop();
      // Takes every redial's handshake, then says nothing: no JOIN_OFFER. The member's wait for
      // it (twice its loss bound) ends it, as a cancel.
      silent.closedByMember = 0;
      silent.tearingDown = false;
      silent.start(port, [](FakeReducer::Socket& s) { acceptRedial(s); });
      mustReach(waitUntil([&] { return everyMemberCancelled(members); }, kRejoinDeadline),
                "every member cancelled a redial that never had a JOIN_OFFER");
      mustReach(waitUntil([&] { return silent.closedByMember.load() >= 2 * 2; },
                          kRejoinDeadline),
                "the members closed the silent redials");
      silent.stop();
    }
  });
  checkWentOnWithout(plan, run);
}

TEST_CASE("a reducer silent between a member's JOIN and JOIN_AT: the hold ends at its bound "
          "as a cancelled rejoin, and the held collective goes on exact without it",
          "[rejoin]") {
  Plan plan = twoByTwo();
  plan.lossDetect = std::chrono::milliseconds(2000);  // the hold: 4 s
  LocalPool pool(plan.reducers);
  RedialFake silent;
  std::atomic<int> joined{0};  // a bit per rank whose JOIN the fake read
  const Run run = runPlan(pool, plan, [&](int k, const auto& members) {
    if (k == 0) pool.stopReducer(1);
    if (k == 1) {
      // Offers on every redial's stream 0, reads the JOIN, and is silent from then on.
      offerInPlaceOfReducer1(silent, pool, members,
                             [&](FakeReducer::Socket& s, const Redialled& r) {
                               if (readHeaderOf(s).type == wire::FrameType::kJoin)
                                 joined |= 1 << r.hello.rank;
                             });
      mustReach(waitUntil([&] { return joined.load() == 3; }, kRejoinDeadline),
                "every member's JOIN");
      // Both members hold now: collective 2 waits until their holds end.
    }
    if (k == 2) {
      mustReach(everyMemberCancelled(members), "every member's hold ended as a cancel");
      silent.stop();
    }
  });
  checkWentOnWithout(plan, run);
}

TEST_CASE("a JOIN_AT below the member's own JOIN (a lying reducer) is a protocol error that "
          "cancels the rejoin: the member closes the redial and goes on exact",
          "[rejoin]") {
  const Plan plan = twoByTwo();
  LocalPool pool(plan.reducers);
  RedialFake liar;
  std::atomic<int> lies{0};
  const Run run = runPlan(pool, plan, [&](int k, const auto& members) {
    if (k == 0) pool.stopReducer(1);
    if (k == 1) {
      offerInPlaceOfReducer1(liar, pool, members, [&](FakeReducer::Socket& s, const Redialled& r) {
        const wire::FrameHeader join = readHeaderOf(s);
        if (join.type != wire::FrameType::kJoin || join.chunk == 0)
          throw std::runtime_error("no JOIN past chunk 0");
        const wire::HeaderBytes at =
            wire::encodeHeader(wire::joinAtHeader(r.hello.group, r.hello.rank, join.chunk - 1));
        writeBytes(s, at.data(), at.size());
        ++lies;
      });
      mustReach(waitUntil([&] { return everyMemberCancelled(members); }, kRejoinDeadline),
                "every member cancelled at the JOIN_AT below its JOIN");
      mustReach(waitUntil([&] { return lies.load() >= 2 && liar.closedByMember.load() >= 2 * 2; },
                          kRejoinDeadline),
                "the members closed the lying reducer's redials");
      liar.stop();
    }
  });
  checkWentOnWithout(plan, run);
}

}  // namespace rs::test
