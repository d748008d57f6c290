// Authentication with the job secret over loopback (proto/WIRE.md, "Authentication"): members
// with the secret join and reduce exactly; a wrong secret, a replayed proof, or no proof is
// refused with a named reason, logged with the peer's address and counted, while a healthy
// group beside the attacks keeps exact results; a worker and a reducer that disagree on
// whether there is a secret both fail with a clear message.
#include <catch2/catch.hpp>
#include <sys/socket.h>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <thread>

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

constexpr const char* kTestJobSecret = "test-job-secret-3b1f0c9e5a7d2468";

server::ServerConfig securedConfig() {
  server::ServerConfig c = testServerConfig();
  c.secret = kTestJobSecret;
  return c;
}

client::ClientOptions optionsWith(const LocalPool& pool, const std::string& secret,
                                  uint32_t streams = 2) {
  auto o = testClientOptions(pool.endpoints(), streams);
  o.secret = secret;
  o.minChunkBytes = 4 << 10;
  o.maxChunkBytes = 16 << 10;
  o.connectTimeout = std::chrono::milliseconds(20000);
  return o;
}

}  // namespace

TEST_CASE("auth: members with the job secret join and all-reduce exactly") {
  LocalPool pool(2, securedConfig());
  const GroupId id = GroupId::random();
  const int world = 3;
  Status s = runRanks(world, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(optionsWith(pool, kTestJobSecret),
                                              {id, world, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    for (size_t n : {size_t{1}, size_t{1000}, size_t{100000}})
      RS_RETURN_IF_ERROR(exactAllReduce(**comm, world, rank, n));
    return Status::ok();
  });
  CHECK(s.toString() == "OK");
  CHECK(authFailures(pool) == 0);
}

TEST_CASE("auth: wrong, replayed and missing proofs are refused while a healthy group runs") {
  LogCapture log;  // before the pool's threads
  LocalPool pool(1, securedConfig());
  const uint16_t port = pool.reducer(0).dataPort();

  // The healthy group: exact all-reduces until told to stop.
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  Status healthy;
  std::thread group([&] {
    const GroupId id = GroupId::random();
    healthy = runRanks(2, [&](int rank) -> Status {
      auto comm = client::Communicator::connect(optionsWith(pool, kTestJobSecret),
                                                {id, 2, static_cast<uint32_t>(rank)});
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

  asio::io_context io;
  const uint64_t before = authFailures(pool);
  const GroupId victim = GroupId::random();

  // A client with the wrong secret: refused with the reducer's reason. (One stream each, so
  // that the count below is exact.)
  {
    auto comm = client::Communicator::connect(optionsWith(pool, "not-the-job-secret-0000", 1),
                                              {victim, 2, 0});
    REQUIRE_FALSE(comm.isOk());
    INFO(comm.status().toString());
    CHECK(contains(comm.status().message(), "auth proof is wrong"));
  }
  // A client without a secret: it learns from the CHALLENGE that one is needed.
  {
    auto comm = client::Communicator::connect(optionsWith(pool, "", 1), {victim, 2, 0});
    REQUIRE_FALSE(comm.isOk());
    INFO(comm.status().toString());
    CHECK(contains(comm.status().message(), "requires the job secret"));
  }
  // A raw HELLO without a proof.
  {
    auto s = rawSocket(io, port);
    sendHello(s, victim, 0, 2);
    CHECK(contains(readRefusal(s), "HELLO carries no auth proof"));
  }
  // A raw HELLO proven with another secret.
  {
    auto s = rawSocket(io, port);
    sendHello(s, victim, 0, 2, 1, 1, "another-secret-entirely-42");
    CHECK(contains(readRefusal(s), "auth proof is wrong"));
  }
  // A replay: one connection's correct answer, sent on a new connection (new challenge).
  {
    auto first = rawSocket(io, port);
    const wire::ChallengePayload c = readChallenge(first);
    const std::vector<uint8_t> answer = helloFrame(c, victim, 0, 2, 1, 1, kTestJobSecret);
    asio::write(first, asio::buffer(answer));
    expectHelloAck(first);  // the genuine use is accepted
    auto second = rawSocket(io, port);
    readChallenge(second);
    asio::write(second, asio::buffer(answer));
    CHECK(contains(readRefusal(second), "replayed from another connection"));
  }
  // Four refusals by proof (the client without a secret closes before it sends a HELLO).
  CHECK(waitUntil([&] { return authFailures(pool) == before + 4; }));
  CHECK(log.contains("refused data connection from tcp://127.0.0.1:"));
  CHECK(log.contains("auth proof"));

  // The healthy group kept going through the attacks, with exact results.
  const int seen = rounds.load();
  CHECK(waitUntil([&] { return rounds.load() >= seen + 2 || !healthy.isOk(); }));
  stop = true;
  group.join();
  CHECK(healthy.toString() == "OK");
}

TEST_CASE("auth: a worker with a secret refuses a reducer that has none") {
  LocalPool pool(1);  // open
  auto comm =
      client::Communicator::connect(optionsWith(pool, kTestJobSecret), {GroupId::random(), 1, 0});
  REQUIRE_FALSE(comm.isOk());
  INFO(comm.status().toString());
  CHECK(contains(comm.status().message(), "does not require authentication"));
  // Without a secret on either side the open reducer serves as before.
  auto open = client::Communicator::connect(optionsWith(pool, ""), {GroupId::random(), 1, 0});
  REQUIRE(open.isOk());
  CHECK(exactAllReduce(**open, 1, 0, 1000).toString() == "OK");
}

}  // namespace rs::test
