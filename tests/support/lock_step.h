// Members in lock step on real reducers (tests/dataplane's rejoin and move-away cases): every
// member runs the same fp32 sums in place, and between two collectives rank 0 drives the next
// state (a reducer stopped, restarted, taken for lost) while every member waits. Everything
// waits for states, never for times.
#pragma once

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/local_pool.h"
#include "tests/support/verify_pattern.h"
#include "tests/support/wait_until.h"

namespace rs::test {

// The elements of every lock-step collective (fp32): chunks on every reducer and stream.
inline constexpr uint64_t kLockStepCount = 200000;

// Rank `rank`'s input to collective k: exact sums, a different one per collective.
inline std::vector<float> lockStepInput(int rank, int k) {
  std::vector<float> buf(kLockStepCount);
  for (uint64_t i = 0; i < kLockStepCount; ++i)
    buf[i] = static_cast<float>(exactInput(rank, i + k, ReduceOp::kSum));
  return buf;
}

// One rank's member, made on that rank's thread by the run's `start` and gone with the thread.
struct LockStepMember {
  // Runs collective k in place on `buf` (kLockStepCount fp32, summed): its outcome.
  std::function<Status(int k, std::vector<float>& buf)> collective;
  // Where given, runs after the member's last collective (or its first failure).
  std::function<void()> done;
};

// What a lock-step run returns: its first failure (rank-prefixed), or OK, and each rank's result
// of every collective.
struct LockStep {
  Status status;
  std::vector<std::vector<std::vector<float>>> results;  // [rank][k]
};

// Runs `collectives` collectives on `world` members in lock step. Each rank's thread makes its
// member with start(rank, member) and waits for every rank's; once every member finished
// collective k, between(k) runs on rank 0's thread before any member starts collective k + 1 (a
// state it never reaches throws, which fails the run with its name). With `stayUntilAllDone`,
// a member that is done waits for every other one to be done before it goes (a member that
// leaves early would fail the others' last collective on the reducers).
inline LockStep runLockStep(int world, int collectives,
                            const std::function<Status(int rank, LockStepMember& member)>& start,
                            const std::function<void(int k)>& between,
                            bool stayUntilAllDone = false) {
  LockStep out;
  out.results.assign(world, std::vector<std::vector<float>>(collectives));
  std::atomic<int> started{0}, finished{0}, released{0}, done{0};
  out.status = runRanks(world, [&](int rank) -> Status {
    LockStepMember member;
    if (Status st = start(rank, member); !st.isOk()) return st;
    ++started;
    if (!waitUntil([&] { return started.load() == world; }))
      return internalError("the other members never started");
    Status failed;
    for (int k = 0; k < collectives && failed.isOk(); ++k) {
      std::vector<float> buf = lockStepInput(rank, k);
      const Status st = member.collective(k, buf);
      if (!st.isOk()) failed = Status(st.code(), fmt::format("collective {}: {}", k, st.message()));
      else out.results[rank][k] = std::move(buf);
      ++finished;
      if (!waitUntil([&] { return finished.load() >= world * (k + 1); }))
        return internalError("never saw every member finish collective " + std::to_string(k));
      if (rank == 0) {
        if (failed.isOk() && between) between(k);
        ++released;
      } else if (!waitUntil([&] { return released.load() >= k + 1; })) {
        return internalError("rank 0 never released collective " + std::to_string(k + 1));
      }
    }
    if (member.done) member.done();
    if (stayUntilAllDone) {
      ++done;
      waitUntil([&] { return done.load() == world; });
    }
    return failed;
  });
  return out;
}

// Every collective of the run succeeded on every member, with the same bits on each, and exact.
inline void checkExactAndAlike(const LockStep& run, int world, int collectives) {
  REQUIRE(run.status.toString() == "OK");
  for (int k = 0; k < collectives; ++k) {
    INFO("collective " << k);
    for (int rank = 1; rank < world; ++rank) REQUIRE(run.results[rank][k] == run.results[0][k]);
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < kLockStepCount; ++i)
      wrong += run.results[0][k][i] !=
               expectedResult(DataType::kFloat32, ReduceOp::kSum, world, i + k);
    CHECK(wrong == 0);
  }
}

// A state between collectives, on rank 0's thread: a failure there is that rank's error (a
// Catch2 assertion may not fail off the test's thread), which fails the run with its name.
inline void mustReach(bool reached, const std::string& state) {
  if (!reached) throw std::runtime_error("never reached: " + state);
}

// Whether `pred` holds for every member's failover counters (members: pointers, smart or not,
// to anything with failover()).
template <typename Members, typename Pred>
bool everyMember(const Members& members, const Pred& pred) {
  for (const auto& m : members)
    if (!pred(m->failover())) return false;
  return true;
}

// Reducer `reducer`'s data-plane counters.
inline server::DataPlaneStats statsOf(LocalPool& pool, int reducer) {
  return pool.reducer(reducer).dataPlane().stats();
}

}  // namespace rs::test
