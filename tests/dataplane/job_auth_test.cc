// Per-job keys on a standing pool (proto/WIRE.md, "Authentication"): a reducer holding the
// pool's secret admits each job's workers by the key derived from the job's name, binds every
// group to the job that created it, and refuses anyone else (another job, or the pool's own
// job-less identity) with "group 0123abcd belongs to another job", logged with the peer's
// address and counted as an auth failure, while the owning job keeps exact results.
#include <catch2/catch.hpp>
#include <sys/socket.h>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <atomic>
#include <optional>
#include <thread>

#include "core/wire/auth.h"
#include "server/failure_reason.h"
#include "tests/support/auth_failures.h"
#include "tests/support/healthy_group.h"
#include "tests/support/local_pool.h"
#include "tests/support/log_capture.h"
#include "tests/support/raw_member.h"
#include "tests/support/text_contains.h"
#include "tests/support/wait_until.h"

namespace rs::test {
namespace {

constexpr const char* kPoolSecret = "pool-secret-7c2e91d04b8a3f56";

std::string jobSecret(const std::string& job) { return *wire::deriveJobSecret(kPoolSecret, job); }

server::ServerConfig poolConfig() {
  server::ServerConfig c = testServerConfig();
  c.secret = kPoolSecret;
  return c;
}

// A worker of `job` (empty: the pool's own identity) holding `secret`.
client::ClientOptions jobOptions(const LocalPool& pool, const std::string& job,
                                 const std::string& secret, uint32_t streams = 2) {
  auto o = testClientOptions(pool.endpoints(), streams);
  o.jobName = job;
  o.secret = secret;
  o.minChunkBytes = 4 << 10;
  o.maxChunkBytes = 16 << 10;
  o.connectTimeout = std::chrono::milliseconds(20000);
  return o;
}

// `world` members of `job` on group `id`, each doing a few exact all-reduces.
Status runJob(const LocalPool& pool, const std::string& job, const std::string& secret,
              const GroupId& id, int world) {
  return runRanks(world, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(jobOptions(pool, job, secret),
                                              {id, static_cast<uint32_t>(world),
                                               static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    for (size_t n : {size_t{1}, size_t{1000}, size_t{50000}})
      RS_RETURN_IF_ERROR(exactAllReduce(**comm, world, rank, n));
    return Status::ok();
  });
}

}  // namespace

TEST_CASE("job auth: two jobs and the pool's own identity share a pool, each exact") {
  LocalPool pool(2, poolConfig());
  Status a, b, p;
  std::thread ta([&] { a = runJob(pool, "team-a.train-1", jobSecret("team-a.train-1"),
                                  GroupId::random(), 2); });
  std::thread tb([&] { b = runJob(pool, "team-b", jobSecret("team-b"), GroupId::random(), 3); });
  // A worker holding the pool's secret itself, naming no job, works as on a one-job reducer.
  std::thread tp([&] { p = runJob(pool, "", kPoolSecret, GroupId::random(), 2); });
  ta.join();
  tb.join();
  tp.join();
  CHECK(a.toString() == "OK");
  CHECK(b.toString() == "OK");
  CHECK(p.toString() == "OK");
  CHECK(authFailures(pool, 0) == 0);
  CHECK(authFailures(pool, 1) == 0);
}

TEST_CASE("job auth: a wrong job key is refused, naming the job") {
  LocalPool pool(1, poolConfig());
  const GroupId id = GroupId::random();
  const uint64_t before = authFailures(pool);
  // Job B's secret presented as job A's.
  auto other = client::Communicator::connect(
      jobOptions(pool, "team-a", jobSecret("team-b"), 1), {id, 1, 0});
  REQUIRE_FALSE(other.isOk());
  INFO(other.status().toString());
  CHECK(contains(other.status().message(), "auth proof is wrong for job 'team-a'"));
  // The pool's secret presented as a job's key: a job's worker never holds it.
  auto pooled = client::Communicator::connect(jobOptions(pool, "team-a", kPoolSecret, 1),
                                              {id, 1, 0});
  REQUIRE_FALSE(pooled.isOk());
  CHECK(contains(pooled.status().message(), "auth proof is wrong for job 'team-a'"));
  // A job's key without its name is not the pool's secret either.
  auto nameless = client::Communicator::connect(jobOptions(pool, "", jobSecret("team-a"), 1),
                                                {id, 1, 0});
  REQUIRE_FALSE(nameless.isOk());
  CHECK(contains(nameless.status().message(), "auth proof is wrong for this connection"));
  CHECK(waitUntil([&] { return authFailures(pool) == before + 3; }));
  // The right key for the name gets in.
  auto right = client::Communicator::connect(jobOptions(pool, "team-a", jobSecret("team-a")),
                                             {id, 1, 0});
  REQUIRE(right.isOk());
  CHECK(exactAllReduce(**right, 1, 0, 1000).toString() == "OK");
}

TEST_CASE("job auth: another job cannot join a job's group, and the owner keeps exact results") {
  // The capture comes after the pool (which configures the logger it watches) and goes after
  // the pool's threads stopped (pool.reset() below), so no thread logs while it detaches.
  std::optional<LocalPool> owned(std::in_place, 1, poolConfig());
  LocalPool& pool = *owned;
  LogCapture log;
  const uint16_t port = pool.reducer(0).dataPort();
  const std::string jobA = "team-a";
  const GroupId victim = GroupId::random();

  // Job A: exact all-reduces on `victim` until told to stop.
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  Status healthy;
  std::thread group([&] {
    healthy = runRanks(2, [&](int rank) -> Status {
      auto comm = client::Communicator::connect(jobOptions(pool, jobA, jobSecret(jobA)),
                                                {victim, 2, static_cast<uint32_t>(rank)});
      if (!comm) return comm.status();
      for (;;) {
        int32_t flag = (rank == 0 && stop.load()) ? 1 : 0;
        RS_RETURN_IF_ERROR(
            (*comm)->allReduce(&flag, &flag, 1, DataType::kInt32, ReduceOp::kMax));
        if (flag > 0) return Status::ok();
        RS_RETURN_IF_ERROR(exactAllReduce(**comm, 2, rank, 20000));
        if (rank == 0) ++rounds;
      }
    });
  });
  REQUIRE(waitUntil([&] { return rounds.load() >= 1 || !healthy.isOk(); }));
  const uint64_t before = authFailures(pool);
  const std::string named = "group " + victim.toString().substr(0, 8) + " belongs to another job";

  // Job B, properly authenticated as itself, with job A's group id: refused by name, before it
  // learns anything else about the group (not its shape, not which ranks are taken).
  for (uint32_t world : {2u, 5u}) {
    auto comm = client::Communicator::connect(jobOptions(pool, "team-b", jobSecret("team-b"), 1),
                                              {victim, world, 1});
    REQUIRE_FALSE(comm.isOk());
    INFO(comm.status().toString());
    CHECK(contains(comm.status().message(), named));
  }
  // The pool's own job-less identity does not own a job's group either.
  {
    auto comm = client::Communicator::connect(jobOptions(pool, "", kPoolSecret, 1),
                                              {victim, 2, 1});
    REQUIRE_FALSE(comm.isOk());
    CHECK(contains(comm.status().message(), named));
  }
  // A raw HELLO of job B: refused before it joins, so nothing it sends next (an ABORT) can
  // reach the group.
  {
    asio::io_context io;
    auto s = rawSocket(io, port);
    sendHello(s, victim, 0, 2, 1, 1, jobSecret("team-b"), "team-b");
    CHECK(contains(readRefusal(s), named));
  }
  CHECK(waitUntil([&] { return authFailures(pool) == before + 4; }));
  CHECK(log.contains("refused data connection from tcp://127.0.0.1:"));
  CHECK(log.contains(named));

  // Job A kept going through it all, with exact results.
  const int seen = rounds.load();
  CHECK(waitUntil([&] { return rounds.load() >= seen + 2 || !healthy.isOk(); }));
  stop = true;
  group.join();
  CHECK(healthy.toString() == "OK");
  owned.reset();
}

TEST_CASE("job auth: a job name needs its secret, and must be a valid name") {
  LocalPool pool(1);
  auto o = jobOptions(pool, "team-a", "");
  CHECK(contains(o.validate().message(), "without its secret"));
  o = jobOptions(pool, "team a", jobSecret("team-a"));
  CHECK(contains(o.validate().message(), "job name (RS_JOB) 'team a'"));
}


TEST_CASE("job auth: one job cannot take every group of a shared pool") {
  server::ServerConfig config = poolConfig();
  config.maxGroupsPerJob = 2;
  LocalPool pool(1, config);
  const std::string greedy = "greedy";
  // The greedy job holds its two groups (one member of two connected, so they stay open).
  std::vector<std::unique_ptr<client::Communicator>> held;
  for (int i = 0; i < 2; ++i) {
    auto comm = client::Communicator::connect(jobOptions(pool, greedy, jobSecret(greedy), 1),
                                              {GroupId::random(), 2, 0});
    REQUIRE(comm.isOk());
    held.push_back(std::move(*comm));
  }
  // Its third is refused, naming the limit.
  auto third = client::Communicator::connect(jobOptions(pool, greedy, jobSecret(greedy), 1),
                                             {GroupId::random(), 2, 0});
  REQUIRE_FALSE(third.isOk());
  INFO(third.status().toString());
  CHECK(contains(third.status().message(), "--max-groups-per-job"));
  // Another job, and the pool's own identity, still get groups and exact results.
  CHECK(runJob(pool, "patient", jobSecret("patient"), GroupId::random(), 2).toString() == "OK");
  CHECK(runJob(pool, "", kPoolSecret, GroupId::random(), 2).toString() == "OK");
  // Once one of its groups is gone the greedy job may make another.
  held.pop_back();
  CHECK(waitUntil([&] { return pool.reducer(0).registry().size() == 1; }));
  CHECK(runJob(pool, greedy, jobSecret(greedy), GroupId::random(), 2).toString() == "OK");
}

}  // namespace rs::test
