// The healthy group that hostile-input and fairness tests run beside an attack: two members
// doing checked fp32 all-reduces, to show that the attack leaves others' results exact and
// moving.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/local_pool.h"
#include "tests/support/wait_until.h"

namespace rs::test {

// Every member sums rank + i % 7 over `n` int32 elements; checks the exact sum.
inline Status exactAllReduce(client::Communicator& comm, int world, int rank, size_t n) {
  std::vector<int32_t> buf(n);
  for (size_t i = 0; i < n; ++i) buf[i] = rank + static_cast<int32_t>(i % 7);
  RS_RETURN_IF_ERROR(comm.allReduce(buf.data(), buf.data(), n, DataType::kInt32, ReduceOp::kSum));
  const int32_t ranks = world * (world - 1) / 2;
  for (size_t i = 0; i < n; ++i)
    if (buf[i] != ranks + world * static_cast<int32_t>(i % 7))
      return internalError("wrong sum at element " + std::to_string(i));
  return Status::ok();
}

struct HealthyRun {
  int rounds = 0;                             // this many all-reduces, or, if 0, until *stop
  const std::atomic<bool>* stop = nullptr;    // checked before each round (rank 0 decides)
  std::atomic<int>* done = nullptr;           // rounds completed, counted by rank 0
  uint32_t timeoutMs = 60000;                 // the members' collective timeout
  std::string secret = {};                    // for a reducer with a secret: the job's (or pool's)
  std::string job = {};                       // RS_JOB, with a job's derived secret
};

// Runs a fresh two-member group on `reducers` and returns the first failure, or OK.
inline Status runHealthyGroup(const std::vector<Endpoint>& reducers, const HealthyRun& run) {
  const GroupId id = GroupId::random();
  return runRanks(2, [&](int rank) -> Status {
    auto options = testClientOptions(reducers, 2);
    options.collectiveTimeout = std::chrono::milliseconds(run.timeoutMs);
    options.minChunkBytes = 4 << 10;
    options.maxChunkBytes = 16 << 10;
    options.secret = run.secret;
    options.jobName = run.job;
    auto comm = client::Communicator::connect(options, {id, 2, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    std::vector<float> buf(30000);
    for (int k = 0; run.rounds == 0 || k < run.rounds; ++k) {
      if (run.stop != nullptr) {
        // Both members run the same number of rounds: rank 0 decides, and tells rank 1 through
        // an all-reduce of a flag.
        float flag = (rank == 0 && run.stop->load()) ? 1.0f : 0.0f;
        RS_RETURN_IF_ERROR(
            (*comm)->allReduce(&flag, &flag, 1, DataType::kFloat32, ReduceOp::kMax));
        if (flag > 0) return Status::ok();
      }
      for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(rank + (i + k) % 7);
      RS_RETURN_IF_ERROR((*comm)->allReduce(buf.data(), buf.data(), buf.size(),
                                            DataType::kFloat32, ReduceOp::kSum));
      for (size_t i = 0; i < buf.size(); ++i)
        if (buf[i] != static_cast<float>(1 + 2 * ((i + k) % 7)))
          return internalError(fmt::format("healthy group: round {} element {} wrong", k, i));
      if (rank == 0 && run.done != nullptr) ++*run.done;
    }
    return Status::ok();
  });
}

// A healthy group run on a thread of its own beside a test's attack, until finish(). Catch2's
// assertions belong on the test's own thread, so it only reports.
class HealthyGroupBeside {
 public:
  explicit HealthyGroupBeside(const std::vector<Endpoint>& reducers)
      : thread_([this, reducers] {
          outcome_ = runHealthyGroup(reducers, {.stop = &stop_, .done = &rounds_});
        }) {}
  ~HealthyGroupBeside() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // Whether it completed a round (waited for).
  bool running() { return waitUntil([&] { return rounds_.load() >= 1; }); }
  // Two more rounds (waited for), then it stops: OK if every round was exact.
  Status finish() {
    const int before = rounds_.load();
    const bool moving = waitUntil([&] { return rounds_.load() >= before + 2; });
    stop_ = true;
    thread_.join();
    if (!moving) return internalError("the healthy group stopped making progress");
    return outcome_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> rounds_{0};
  Status outcome_;
  std::thread thread_;  // last: it starts once the rest is built
};

}  // namespace rs::test
