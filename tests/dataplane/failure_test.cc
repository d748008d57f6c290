// Failures: each one must fail the affected group's collectives on every member with a clear
// error, never hang, never crash the reducer, and leave other groups untouched.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <atomic>
#include <thread>

#include "core/common/log.h"
#include "core/wire/frame.h"
#include "tests/support/healthy_group.h"
#include "tests/support/local_pool.h"
#include "tests/support/log_capture.h"
#include "tests/support/raw_member.h"
#include "tests/support/text_contains.h"
#include "tests/support/wait_until.h"

namespace rs::test {
namespace {

Result<std::unique_ptr<client::Communicator>> join(const LocalPool& pool, const GroupId& id,
                                                   int world, int rank, uint32_t streams = 2,
                                                   int timeoutMs = 300000,
                                                   client::ClientOptions::Progress progress =
                                                       client::ClientOptions::Progress::kIoThreads) {
  auto options = testClientOptions(pool.endpoints(), streams);
  options.progress = progress;
  options.collectiveTimeout = std::chrono::milliseconds(timeoutMs);
  options.minChunkBytes = 4 << 10;
  options.maxChunkBytes = 16 << 10;
  return client::Communicator::connect(
      options, {id, static_cast<uint32_t>(world), static_cast<uint32_t>(rank)});
}

// A healthy group doing checked all-reduces until `stop`, to show failures stay contained.
Status healthyGroup(const LocalPool& pool, std::atomic<bool>& stop, std::atomic<int>& rounds) {
  return runHealthyGroup(pool.endpoints(), {.stop = &stop, .done = &rounds, .timeoutMs = 300000});
}

// Waits until the healthy group has completed `target` rounds.
bool waitForRounds(const std::atomic<int>& rounds, int target) {
  return waitUntil([&] { return rounds.load() >= target; });
}

}  // namespace

TEST_CASE("a member that disconnects mid-collective aborts its group on every other member",
          "[failure]") {
  LocalPool pool(2);
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  Status otherStatus;  // Catch2 assertions belong on the test's own thread
  std::thread other([&] { otherStatus = healthyGroup(pool, stop, rounds); });
  REQUIRE(waitForRounds(rounds, 1));

  const GroupId id = GroupId::random();
  std::vector<Status> results(3);
  std::atomic<int> firstDone{0};
  Status st = runRanks(3, [&](int rank) -> Status {
    auto comm = join(pool, id, 3, rank);
    if (!comm) return comm.status();
    std::vector<float> buf(100000, 1.0f);
    if (rank == 2) {
      // Finish one collective, then vanish before the others can finish their second. Wait for
      // the others' first results: an abort fails everything still outstanding, and results of
      // the first collective may still be on their way to them on another stream.
      RS_RETURN_IF_ERROR((*comm)->allReduce(buf.data(), buf.data(), buf.size(),
                                            DataType::kFloat32, ReduceOp::kSum));
      if (!waitUntil([&] { return firstDone.load() == 2; }))
        return internalError("ranks 0 and 1 never finished their first collective");
      comm->reset();
      return Status::ok();
    }
    RS_RETURN_IF_ERROR((*comm)->allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                                          ReduceOp::kSum));
    ++firstDone;
    results[rank] = (*comm)->allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                                       ReduceOp::kSum);
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
  for (int r : {0, 1}) {
    INFO(results[r].toString());
    CHECK(results[r].code() == StatusCode::kAborted);
    CHECK(contains(results[r].message(), "rank 2"));
  }
  const int seen = rounds.load();
  CHECK(waitForRounds(rounds, seen + 2));  // the other group keeps going
  stop = true;
  other.join();
  CHECK(otherStatus.toString() == "OK");
}

TEST_CASE("a member that closes after its ABORT is let go at once, not after the grace",
          "[failure]") {
  LocalPool pool(1);
  LogCapture log;  // after the pool: its start configures the logger
  rs::logger().set_level(spdlog::level::debug);  // the session's close reason is a debug line
  asio::io_context io;
  const GroupId id = GroupId::random();
  RawMember stays(io, pool.reducer(0).dataPort(), id, 2, 0);
  auto leaves = std::make_unique<RawMember>(io, pool.reducer(0).dataPort(), id, 2, 1);
  // Rank 1 sent its whole chunk and vanishes; rank 0's stream waits between frames.
  leaves->sendHeader(1000);
  leaves->sendElements(0, 1000);
  leaves.reset();
  wire::FrameHeader h = readFrameHeader(stays.socket());
  CHECK(h.type == wire::FrameType::kAbort);
  stays.socket().close();
  // The read that was in flight ends with EOF: the session closes for that reason, rather than
  // reading on and holding the connection until the 2 s grace of an ABORT runs out.
  CHECK(waitUntil([&] { return log.contains("closing: the member closed after ABORT"); }));
  CHECK(waitUntil([&] { return pool.reducer(0).registry().size() == 0; }));
  rs::logger().set_level(spdlog::level::warn);
}

TEST_CASE("a member that never joins a collective times out with the missing rank named",
          "[failure]") {
  const auto progress = GENERATE(client::ClientOptions::Progress::kIoThreads,
                                 client::ClientOptions::Progress::kCaller);
  LocalPool pool(1);
  const GroupId id = GroupId::random();
  std::atomic<bool> rank0Done{false};
  Status result;
  Status st = runRanks(2, [&](int rank) -> Status {
    auto comm = join(pool, id, 2, rank, 1, /*timeoutMs=*/400, progress);
    if (!comm) return comm.status();
    std::vector<int32_t> buf(1000, 1);
    if (rank == 0) {
      result = (*comm)->allReduce(buf.data(), buf.data(), buf.size(), DataType::kInt32,
                                  ReduceOp::kSum);
      rank0Done = true;
    } else {
      if (!waitUntil([&] { return rank0Done.load(); }))
        return internalError("rank 0's collective never ended");
    }
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
  INFO(result.toString());
  CHECK((result.code() == StatusCode::kTimeout || result.code() == StatusCode::kAborted));
  // Either the reducer's verdict (names the rank that never sent) or the client's own.
  CHECK((contains(result.message(), "ranks 1 never sent") || contains(result.message(), "timed out")));
}

TEST_CASE("the reducer's --collective-timeout-ms caps the timeout a member asks for",
          "[failure]") {
  server::ServerConfig config = testServerConfig();
  config.collectiveTimeoutMs = 300;  // the operator's ceiling; the members ask for 300 s
  LocalPool pool(1, config);
  const GroupId id = GroupId::random();
  std::atomic<bool> rank0Done{false};
  Status result;
  Status st = runRanks(2, [&](int rank) -> Status {
    auto comm = join(pool, id, 2, rank, 1, /*timeoutMs=*/300000);
    if (!comm) return comm.status();
    std::vector<int32_t> buf(1000, 1);
    if (rank == 0) {
      result = (*comm)->allReduce(buf.data(), buf.data(), buf.size(), DataType::kInt32,
                                  ReduceOp::kSum);
      rank0Done = true;
    } else if (!waitUntil([&] { return rank0Done.load(); })) {
      return internalError("rank 0's collective never ended");
    }
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
  INFO(result.toString());
  // Only the reducer's verdict can have ended it: the client's own timeout is 300 s.
  CHECK(result.code() == StatusCode::kTimeout);
  CHECK(contains(result.message(), "(timeout 300 ms)"));
  CHECK(contains(result.message(), "ranks 1 never sent"));
}

TEST_CASE("members that disagree on a collective's size both fail with the reason", "[failure]") {
  LocalPool pool(1);
  const GroupId id = GroupId::random();
  std::vector<Status> results(2);
  Status st = runRanks(2, [&](int rank) -> Status {
    auto comm = join(pool, id, 2, rank, 1);
    if (!comm) return comm.status();
    std::vector<float> buf(1000, 1.0f);
    results[rank] = (*comm)->allReduce(buf.data(), buf.data(), rank == 0 ? 100 : 101,
                                       DataType::kFloat32, ReduceOp::kSum);
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
  for (const Status& r : results) {
    INFO(r.toString());
    CHECK(!r.isOk());
    CHECK(contains(r.message(), "disagree"));
  }
  // Counted under their reasons (the metrics' labels) before the members heard of it.
  const auto stats = pool.reducer(0).dataPlane().stats();
  CHECK(stats.framesRejected[static_cast<size_t>(server::FrameRejection::kDisagreement)] == 1);
  CHECK(stats.groupAborts[static_cast<size_t>(server::AbortReason::kDisagreement)] == 1);
  CHECK(stats.protocolErrors == 1);
}

TEST_CASE("members that disagree on the world size are refused at join", "[failure]") {
  LocalPool pool(1);
  const GroupId id = GroupId::random();
  auto first = join(pool, id, 2, 0);
  REQUIRE(first.isOk());
  auto second = join(pool, id, 3, 1);
  REQUIRE(!second.isOk());
  INFO(second.status().toString());
  CHECK(contains(second.status().message(), "world_size=3"));
}

TEST_CASE("no reducer listening: connect fails with the address and the reason", "[failure]") {
  asio::io_context io;
  asio::ip::tcp::acceptor probe(io, {asio::ip::make_address("127.0.0.1"), 0});
  const uint16_t port = probe.local_endpoint().port();
  probe.close();  // nothing listens there now
  auto options = testClientOptions({{"127.0.0.1", port}}, 1);
  options.connectTimeout = std::chrono::milliseconds(300);
  auto comm = client::Communicator::connect(options, {GroupId::random(), 1, 0});
  REQUIRE(!comm.isOk());
  INFO(comm.status().toString());
  CHECK(comm.status().code() == StatusCode::kUnavailable);
  CHECK(contains(comm.status().message(), "127.0.0.1:" + std::to_string(port)));
  CHECK(contains(comm.status().message(), "refused"));
}

TEST_CASE("a reducer that dies mid-run: the collectives in flight and after it complete on the "
          "survivor, exact, with either progress mode",
          "[failure]") {
  const auto progress = GENERATE(client::ClientOptions::Progress::kIoThreads,
                                 client::ClientOptions::Progress::kCaller);
  LocalPool pool(2);
  const GroupId id = GroupId::random();
  std::atomic<int> completed{0};  // collectives done, both ranks together
  std::vector<Status> results(2);
  std::thread killer([&] {
    // Mid-run: both ranks have collectives behind them and keep starting new ones.
    waitUntil([&] { return completed.load() >= 4; });
    pool.stopReducer(1);
  });
  Status st = runRanks(2, [&](int rank) -> Status {
    auto comm = join(pool, id, 2, rank, 2, 300000, progress);
    if (!comm) return comm.status();
    std::vector<float> buf(1 << 20);
    Status s;
    // Losing a reducer is not an error (proto/FAILOVER.md): its chunks go to the other.
    for (int i = 0; i < 12 && s.isOk(); ++i) {
      for (size_t e = 0; e < buf.size(); ++e) buf[e] = static_cast<float>((e + i) % 7 + rank);
      s = (*comm)->allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                             ReduceOp::kSum);
      for (size_t e = 0; e < buf.size() && s.isOk(); ++e)
        if (buf[e] != static_cast<float>(2 * ((e + i) % 7) + 1))
          s = internalError(fmt::format("collective {} element {}: {}", i, e, buf[e]));
      if (s.isOk()) ++completed;
    }
    results[rank] = s;
    return Status::ok();
  });
  killer.join();
  REQUIRE(st.toString() == "OK");
  for (const Status& r : results) CHECK(r.toString() == "OK");
}

TEST_CASE("garbage and bad frames close only the offending connection", "[failure]") {
  LocalPool pool(1);
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  Status otherStatus;  // Catch2 assertions belong on the test's own thread
  std::thread other([&] { otherStatus = healthyGroup(pool, stop, rounds); });
  REQUIRE(waitForRounds(rounds, 1));

  asio::io_context io;
  const asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"),
                                   pool.reducer(0).dataPort());
  auto expectClosed = [&](asio::ip::tcp::socket& s) {
    // The reducer answers with at most an ERROR frame and closes.
    std::vector<uint8_t> buf(4096);
    std::error_code ec;
    while (!ec) s.read_some(asio::buffer(buf), ec);
    CHECK((ec == asio::error::eof || ec == asio::error::connection_reset));
  };
  SECTION("random bytes instead of a HELLO") {
    asio::ip::tcp::socket s(io);
    s.connect(ep);
    constexpr auto kMalformed = static_cast<size_t>(server::HandshakeFailure::kMalformed);
    const auto before = pool.reducer(0).dataPlane().stats();
    std::vector<uint8_t> junk(200, 0xAB);
    asio::write(s, asio::buffer(junk));
    expectClosed(s);
    const auto after = pool.reducer(0).dataPlane().stats();
    CHECK(after.handshakeFailures == before.handshakeFailures + 1);
    CHECK(after.handshakeFailuresBy[kMalformed] == before.handshakeFailuresBy[kMalformed] + 1);
  }
  SECTION("a valid HELLO followed by a corrupted REDUCE header") {
    asio::ip::tcp::socket s(io);
    s.connect(ep);
    const GroupId group = GroupId::random();
    sendHello(s, group, 0, 1);
    expectHelloAck(s);
    wire::FrameHeader bad;
    bad.type = wire::FrameType::kReduce;
    bad.group = group;
    bad.elemCount = 4;
    bad.dtype = DataType::kFloat32;
    bad.payloadLength = 16;
    auto bb = wire::encodeHeader(bad);
    bb[40] ^= 0x01;  // flip a bit of the chunk number: the checksum no longer matches
    constexpr auto kMalformed = static_cast<size_t>(server::FrameRejection::kMalformed);
    const auto before = pool.reducer(0).dataPlane().stats();
    asio::write(s, asio::buffer(bb));
    expectClosed(s);
    const auto after = pool.reducer(0).dataPlane().stats();
    CHECK(after.protocolErrors == before.protocolErrors + 1);
    CHECK(after.framesRejected[kMalformed] == before.framesRejected[kMalformed] + 1);
  }
  SECTION("a HELLO that claims an absurd stream count is refused with a reason") {
    asio::ip::tcp::socket s(io);
    s.connect(ep);
    sendHello(s, GroupId::random(), 0, 1, /*streams=*/200);
    wire::FrameHeader rh = readFrameHeader(s);
    CHECK(rh.type == wire::FrameType::kError);
    std::string text(rh.payloadLength, '\0');
    asio::read(s, asio::buffer(text));
    CHECK(contains(text, "streams per worker"));
  }
  const int seen = rounds.load();
  CHECK(waitForRounds(rounds, seen + 2));  // the other group keeps going
  stop = true;
  other.join();
  CHECK(otherStatus.toString() == "OK");
  // The reducer is still up and serving.
  const GroupId id = GroupId::random();
  auto comm = join(pool, id, 1, 0);
  REQUIRE(comm.isOk());
  float x = 3;
  REQUIRE((*comm)->allReduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kSum).isOk());
  CHECK(x == 3);
}

}  // namespace rs::test

namespace rs::test {

TEST_CASE("a member that gives up tells the reducers and the others fail with its reason",
          "[failure]") {
  LocalPool pool(2);
  const GroupId id = GroupId::random();
  Status result;
  std::atomic<bool> submitted{false};
  Status st = runRanks(2, [&](int rank) -> Status {
    auto comm = join(pool, id, 2, rank);
    if (!comm) return comm.status();
    std::vector<float> buf(50000, 1.0f);
    if (rank == 0) {
      auto req = (*comm)->allReduceAsync(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                                         ReduceOp::kSum);
      if (!req) return req.status();
      submitted = true;
      result = (*req)->wait();
    } else {
      if (!waitUntil([&] { return submitted.load(); }))
        return internalError("rank 0 never submitted");
      (*comm)->abort(abortedError("the training loop was interrupted"));
    }
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
  INFO(result.toString());
  CHECK(result.code() == StatusCode::kAborted);
  CHECK(contains(result.message(), "rank 1 gave up: the training loop was interrupted"));
  // The reducer that told rank 0 counted the abort under its reason first.
  uint64_t aborts = 0;
  for (int r = 0; r < pool.size(); ++r)
    aborts += pool.reducer(r).dataPlane().stats().groupAborts[static_cast<size_t>(
        server::AbortReason::kMemberAborted)];
  CHECK(aborts >= 1);
}

TEST_CASE("connection caps per group and per peer refuse with an ERROR naming the limit",
          "[failure]") {
  server::ServerConfig config = testServerConfig();
  const bool perPeer = GENERATE(false, true);
  if (perPeer)
    config.maxConnectionsPerPeer = 2;  // every test connection comes from 127.0.0.1
  else
    config.maxConnectionsPerGroup = 2;
  LocalPool pool(1, config);
  asio::io_context io;
  const GroupId id = GroupId::random();
  // Two members of a group of four join (within both caps); a third is one too many.
  auto first = std::make_unique<RawMember>(io, pool.reducer(0).dataPort(), id, 4, 0);
  RawMember second(io, pool.reducer(0).dataPort(), id, 4, 1);
  auto refusedText = [&](const GroupId& group, uint32_t rank) {
    asio::ip::tcp::socket s(io);
    s.connect({asio::ip::make_address("127.0.0.1"), pool.reducer(0).dataPort()});
    sendHello(s, group, rank, 4);
    wire::FrameHeader rh = readFrameHeader(s);
    CHECK(rh.type == wire::FrameType::kError);
    std::string text(rh.payloadLength, '\0');
    asio::read(s, asio::buffer(text));
    return text;
  };
  const std::string limit =
      perPeer ? "--max-connections-per-peer" : "--max-connections-per-group";
  // Per peer, a connection to another group is refused too; per group, only to this one.
  const std::string text = refusedText(perPeer ? GroupId::random() : id, 2);
  INFO(text);
  CHECK(text.find(limit) != std::string::npos);
  CHECK(text.find("already holds 2 data connections") != std::string::npos);
  // A connection that closes gives its place back.
  const auto joinedBefore = pool.reducer(0).dataPlane().stats().streamsJoined;
  first.reset();
  REQUIRE(waitUntil([&] { return pool.reducer(0).registry().counts().members < 2; }));
  RawMember third(io, pool.reducer(0).dataPort(), id, 4, 2);
  CHECK(pool.reducer(0).dataPlane().stats().streamsJoined == joinedBefore + 1);
}

TEST_CASE("idle timeout: a joined group that sends nothing is failed with the limit named",
          "[failure]") {
  server::ServerConfig config = testServerConfig();
  config.idleTimeoutMs = 300;
  LocalPool pool(1, config);
  asio::io_context io;
  const GroupId id = GroupId::random();
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> members;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    auto s = std::make_unique<asio::ip::tcp::socket>(io);
    s->connect({asio::ip::make_address("127.0.0.1"), pool.reducer(0).dataPort()});
    const timeval tv{10, 0};  // a bug fails the read below instead of hanging it
    ::setsockopt(s->native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sendHello(*s, id, rank, 2);
    expectHelloAck(*s);
    members.push_back(std::move(s));
  }
  // Both members then send nothing: each is told why its group ended.
  for (auto& s : members) {
    wire::FrameHeader rh = readFrameHeader(*s);
    CHECK(rh.type == wire::FrameType::kAbort);
    std::string text(rh.payloadLength, '\0');
    asio::read(*s, asio::buffer(text));
    INFO(text);
    CHECK(text.find("(--idle-timeout-ms)") != std::string::npos);
  }
  // The reducer serves the next group (busy, so never idle for long).
  auto comm = join(pool, GroupId::random(), 1, 0);
  REQUIRE(comm.isOk());
  float x = 3;
  REQUIRE((*comm)->allReduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kSum).isOk());
  CHECK(x == 3);
}

}  // namespace rs::test
