// A restarted reducer is taken back (proto/FAILOVER.md, "A reducer comes back"): real reducers
// in this process on loopback, real members. A reducer is stopped between collectives and a new
// one started on its port; every member redials it, and from the agreed chunk on it reduces its
// share again: every collective on every member exact, the same bits on every member, and the
// restarted reducer's own counters show the chunks it reduced. The cancels that can be driven
// without timing: a member that never redials (the reducer's wait for it ends at the group's
// loss bound), and the restarted reducer lost again before JOIN_AT. The members run in lock
// step; everything waits for states (the reducers' and the members' counters), never for times.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/wire/rejoin_frames.h"
#include "tests/support/fake_reducer.h"
#include "tests/support/local_pool.h"
#include "tests/support/wait_until.h"

namespace rs::test {
namespace {

using client::FailoverStats;

constexpr uint64_t kCount = 200000;  // fp32: chunks on every reducer and stream

struct Plan {
  int world = 3;
  int reducers = 3;
  int collectives = 10;
  // Per rank: RS_REJOIN_MS (0: this member never redials).
  std::function<std::chrono::milliseconds(int rank)> rejoin = [](int) {
    return std::chrono::milliseconds(100);
  };
};

struct Run {
  Status status;
  std::vector<std::vector<std::vector<float>>> results;  // [rank][k]
  std::vector<FailoverStats> after;                       // [rank], at the end
};

// Every member runs plan.collectives fp32 sums in place, in lock step: once every member
// finished collective k, between(k, members) runs on rank 0's thread before any member starts
// collective k + 1.
Run runLockStep(LocalPool& pool, const Plan& plan,
                const std::function<void(int k, const std::vector<client::Communicator*>&)>&
                    between) {
  Run run;
  run.results.assign(plan.world, std::vector<std::vector<float>>(plan.collectives));
  run.after.resize(plan.world);
  const GroupId id = GroupId::random();
  std::mutex mu;
  std::vector<client::Communicator*> members(plan.world, nullptr);
  std::atomic<int> connected{0}, finished{0}, released{0};
  run.status = runRanks(plan.world, [&](int rank) -> Status {
    auto options = testClientOptions(pool.endpoints(), 2);
    options.minChunkBytes = 16 << 10;
    options.maxChunkBytes = 64 << 10;
    options.rejoin = plan.rejoin(rank);
    auto comm = client::Communicator::connect(
        options, {id, static_cast<uint32_t>(plan.world), static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    {
      std::lock_guard lock(mu);
      members[rank] = comm->get();
    }
    ++connected;
    if (!waitUntil([&] { return connected.load() == plan.world; }))
      return internalError("the other members never connected");
    std::vector<float> buf(kCount);
    Status failed;
    for (int k = 0; k < plan.collectives && failed.isOk(); ++k) {
      for (uint64_t i = 0; i < kCount; ++i)
        buf[i] = static_cast<float>(exactInput(rank, i + k, ReduceOp::kSum));
      Status s = (*comm)->allReduce(buf.data(), buf.data(), kCount, DataType::kFloat32,
                                    ReduceOp::kSum);
      if (!s.isOk()) failed = Status(s.code(), fmt::format("collective {}: {}", k, s.message()));
      else run.results[rank][k] = buf;
      ++finished;
      if (!waitUntil([&] { return finished.load() >= plan.world * (k + 1); }))
        return internalError("never saw every member finish collective " + std::to_string(k));
      if (rank == 0) {
        if (failed.isOk()) between(k, members);
        ++released;
      } else if (!waitUntil([&] { return released.load() >= k + 1; })) {
        return internalError("rank 0 never released collective " + std::to_string(k + 1));
      }
    }
    run.after[rank] = (*comm)->failover();
    // Every member stays until every member is done (a member that leaves early would fail the
    // others' last collective on the reducers).
    ++connected;
    waitUntil([&] { return connected.load() == 2 * plan.world; });
    return failed;
  });
  return run;
}

void checkExactAndAlike(const Plan& plan, const Run& run) {
  REQUIRE(run.status.toString() == "OK");
  for (int k = 0; k < plan.collectives; ++k) {
    INFO("collective " << k);
    for (int rank = 1; rank < plan.world; ++rank)
      REQUIRE(run.results[rank][k] == run.results[0][k]);
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < kCount; ++i)
      wrong += run.results[0][k][i] !=
               expectedResult(DataType::kFloat32, ReduceOp::kSum, plan.world, i + k);
    CHECK(wrong == 0);
  }
}

bool lostOne(const FailoverStats& f) { return f.lostNow == 1; }

// A state between collectives, on rank 0's thread: a failure there is that rank's error (a
// Catch2 assertion may not fail off the test's thread), which fails the run with its name.
void mustReach(bool reached, const std::string& state) {
  if (!reached) throw std::runtime_error("never reached: " + state);
}

bool everyMember(const std::vector<client::Communicator*>& members,
                 const std::function<bool(const FailoverStats&)>& pred) {
  for (client::Communicator* m : members)
    if (!pred(m->failover())) return false;
  return true;
}

// mustReach: every member's failover counters satisfy `pred`.
void everyMemberReaches(const std::vector<client::Communicator*>& members,
                        const std::function<bool(const FailoverStats&)>& pred,
                        const std::string& state) {
  mustReach(waitUntil([&] { return everyMember(members, pred); }), state);
}

// The cancel cases' start, between collectives: reducer 1 stopped after collective 0; after
// collective 1, once every member lost it, true (the case's next step comes then).
bool lostAfterFirst(LocalPool& pool, int k, const std::vector<client::Communicator*>& members) {
  if (k == 0) pool.stopReducer(1);
  if (k != 1) return false;
  everyMemberReaches(members, lostOne, "every member lost reducer 1");
  return true;
}

// Two members and two reducers; rank 1 never redials (RS_REJOIN_MS=0), so no rejoin completes.
Plan oneNeverRedials() {
  Plan plan;
  plan.world = 2;
  plan.reducers = 2;
  plan.collectives = 6;
  plan.rejoin = [](int rank) { return std::chrono::milliseconds(rank == 1 ? 0 : 100); };
  return plan;
}

server::DataPlaneStats statsOf(LocalPool& pool, int reducer) {
  return pool.reducer(reducer).dataPlane().stats();
}

}  // namespace

TEST_CASE("a reducer lost and restarted on its port is taken back: later collectives exact and "
          "alike, and it reduces its share again",
          "[rejoin]") {
  Plan plan;
  LocalPool pool(plan.reducers);
  uint64_t reducedBeforeRejoin = 0;
  const Run run = runLockStep(pool, plan, [&](int k, const auto& members) {
    if (k == 1) pool.stopReducer(1);
    if (k == 2) {
      everyMemberReaches(members, lostOne, "every member lost reducer 1");
      pool.restartReducer(1);
    }
    if (k == 3) {
      // Every member redials it, answers its JOIN_OFFER (here, between collectives, at the same
      // chunk), and it sends JOIN_AT: the next collective takes it back.
      mustReach(waitUntil([&] { return statsOf(pool, 1).rejoins == 1; }),
                "statsOf(pool, 1).rejoins == 1");
      reducedBeforeRejoin = statsOf(pool, 1).reductions;
    }
  });
  checkExactAndAlike(plan, run);
  for (int rank = 0; rank < plan.world; ++rank) {
    INFO("rank " << rank);
    CHECK(run.after[rank].rejoins == 1);
    CHECK(run.after[rank].generation == 1);
    CHECK(run.after[rank].lostNow == 0);
  }
  // It reduced nothing before JOIN_AT, and its share of every collective after it: 6
  // collectives of 13 chunks of 64 KiB (200000 fp32 over 3 reducers), 4 or 5 of each its own.
  CHECK(reducedBeforeRejoin == 0);
  const server::DataPlaneStats restarted = statsOf(pool, 1);
  CHECK(restarted.reductions >= 6 * 4);
  CHECK(restarted.rejoinsCancelled == 0);
  CHECK(restarted.protocolErrors == 0);
}

TEST_CASE("a member that never redials cancels the rejoin at the group's loss bound: the others "
          "go on without the reducer, exact",
          "[rejoin]") {
  const Plan plan = oneNeverRedials();
  LocalPool pool(plan.reducers);
  const Run run = runLockStep(pool, plan, [&](int k, const auto& members) {
    if (lostAfterFirst(pool, k, members)) {
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
  checkExactAndAlike(plan, run);
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
  const Run run = runLockStep(pool, plan, [&](int k, const auto& members) {
    if (lostAfterFirst(pool, k, members)) {
      pool.restartReducer(1);
      // Rank 0's two streams are in: the reducer waits for rank 1's, and is lost meanwhile.
      mustReach(waitUntil([&] { return members[0]->failover().redialUp; }),
                "members[0]->failover().redialUp");
      pool.stopReducer(1);
      mustReach(waitUntil([&] { return members[0]->failover().rejoinsCancelled >= 1; }),
                "members[0]->failover().rejoinsCancelled >= 1");
    }
  });
  checkExactAndAlike(plan, run);
  CHECK(run.after[0].rejoins == 0);
  CHECK(run.after[0].lostNow == 1);
}

TEST_CASE("a reducer lost after a member's JOIN, before JOIN_AT, ends that member's hold: it "
          "goes on without the reducer, exact",
          "[rejoin]") {
  // In the stopped reducer's place, on its port, a fake that offers the rejoin on every
  // redial's stream 0 at once, reads the member's JOIN and then ends the connection: lost with
  // the member holding its collectives. Each member's hold ends (a cancel), and it redials later.
  Plan plan;
  plan.world = 2;
  plan.reducers = 2;
  plan.collectives = 6;
  LocalPool pool(plan.reducers);
  std::atomic<int> joins{0};
  std::optional<FakeReducer> fake;
  const Run run = runLockStep(pool, plan, [&](int k, const auto& members) {
    if (lostAfterFirst(pool, k, members)) {
      fake.emplace(
          [&](FakeReducer::Socket& s) {
            const std::vector<uint8_t> challenge = challengeFrame();
            writeBytes(s, challenge.data(), challenge.size());
            const wire::FrameHeader hello = readHeaderOf(s);
            std::vector<uint8_t> payload(hello.payloadLength);
            asio::read(s, asio::buffer(payload));
            wire::HelloPayload p;
            if (!wire::decodeHello(payload.data(), payload.size(), &p).isOk() ||
                (hello.flags & wire::kFlagRejoin) == 0)
              throw std::runtime_error("not a rejoin HELLO");
            const std::vector<uint8_t> ack = helloAckFrame(8u << 20);
            writeBytes(s, ack.data(), ack.size());
            if (p.streamIndex != 0) return readUntilClosed(s);
            const wire::HeaderBytes offer =
                wire::encodeHeader(wire::joinOfferHeader(hello.group, hello.rank));
            writeBytes(s, offer.data(), offer.size());
            if (readHeaderOf(s).type == wire::FrameType::kJoin) ++joins;
            ::shutdown(s.native_handle(), SHUT_RDWR);  // lost before JOIN_AT
          },
          0, pool.endpoints()[1].port);
    }
    if (k == 2)
      everyMemberReaches(
          members, [](const FailoverStats& f) { return f.rejoinsCancelled >= 1; },
          "every member's hold cancelled");
  });
  checkExactAndAlike(plan, run);
  CHECK(joins.load() >= 2);
  for (int rank = 0; rank < plan.world; ++rank) {
    INFO("rank " << rank);
    CHECK(run.after[rank].rejoins == 0);
    CHECK(run.after[rank].lostNow == 1);
  }
}

}  // namespace rs::test
