// What a member accepts from a reducer, tried against fake reducers that misbehave on real
// loopback sockets (tests/support/fake_reducer.h): one that accepts and then stalls the
// handshake, one that sends results ahead of the member's own upload, one that writes
// control characters into its reasons, and a survivor that commits on a lane what no member
// sent. The member must fail, promptly and saying why, and a healthy group on a real reducer
// beside it stays exact.
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/fake_reducer.h"
#include "tests/support/healthy_group.h"
#include "tests/support/local_pool.h"
#include "tests/support/log_capture.h"
#include "tests/support/wait_until.h"

namespace rs::test {
namespace {

using Catch::Matchers::Contains;

// Communicator::connect on a thread of its own, so that a connect that never returns fails the
// test (after the state deadline) instead of hanging it: `fake`'s destruction then closes its
// connections under the member, which ends the connect.
Status connectOnce(const client::ClientOptions& options, std::unique_ptr<FakeReducer>& fake) {
  std::promise<Status> outcome;
  std::future<Status> done = outcome.get_future();
  std::thread member([&] {
    auto comm = client::Communicator::connect(options, {GroupId::random(), 1, 0});
    outcome.set_value(comm ? Status::ok() : comm.status());
  });
  const bool returned = waitUntil(
      [&] { return done.wait_for(std::chrono::seconds(0)) == std::future_status::ready; });
  fake.reset();
  member.join();
  if (!returned) return internalError("Communicator::connect did not return (hung)");
  return done.get();
}

bool printable(const std::string& text) {
  for (unsigned char c : text)
    if (c < 0x20 || c >= 0x7F) return false;
  return true;
}

}  // namespace

TEST_CASE("a reducer that accepts and then stalls the handshake fails connect within "
          "RS_CONNECT_TIMEOUT_MS, naming the reducer and the step",
          "[untrusted-reducer]") {
  struct Stall {
    const char* what;
    const char* step;  // as the error names it
    FakeReducer::Serve serve;
  };
  const std::vector<uint8_t> challenge = challengeFrame();
  const std::vector<uint8_t> ack = helloAckFrame(8u << 20);
  const Stall stall = GENERATE_COPY(
      Stall{"sends nothing", "waiting for CHALLENGE", readUntilClosed},
      Stall{"sends half a CHALLENGE header", "waiting for CHALLENGE",
            [challenge](FakeReducer::Socket& s) {
              writeBytes(s, challenge.data(), wire::kHeaderSize / 2);
              readUntilClosed(s);
            }},
      Stall{"sends a CHALLENGE header and part of its payload", "reading CHALLENGE",
            [challenge](FakeReducer::Socket& s) {
              writeBytes(s, challenge.data(), wire::kHeaderSize + 10);
              readUntilClosed(s);
            }},
      Stall{"never answers the HELLO", "waiting for HELLO_ACK",
            [challenge](FakeReducer::Socket& s) {
              writeBytes(s, challenge.data(), challenge.size());
              readHello(s);
              readUntilClosed(s);
            }},
      Stall{"sends a HELLO_ACK header without its payload", "reading HELLO_ACK",
            [challenge, ack](FakeReducer::Socket& s) {
              writeBytes(s, challenge.data(), challenge.size());
              readHello(s);
              writeBytes(s, ack.data(), wire::kHeaderSize);
              readUntilClosed(s);
            }});
  CAPTURE(stall.what);
  auto fake = std::make_unique<FakeReducer>(stall.serve);
  const Endpoint where = fake->endpoint();
  auto options = testClientOptions({where}, 2);
  options.connectTimeout = std::chrono::milliseconds(1000);
  const Status s = connectOnce(options, fake);
  CHECK(s.code() == StatusCode::kTimeout);
  CHECK_THAT(s.message(), Contains("reducer 0 (" + where.toString() + ")"));
  CHECK_THAT(s.message(), Contains(stall.step));
  CHECK_THAT(s.message(), Contains("RS_CONNECT_TIMEOUT_MS"));
}

TEST_CASE("a RESULT for elements the member has not sent yet is a protocol error, and a "
          "healthy group on a reducer it shares stays exact",
          "[untrusted-reducer]") {
  LocalPool pool(1);
  HealthyGroupBeside healthy(pool.endpoints());
  REQUIRE(healthy.running());

  constexpr uint32_t kChunkBytes = 8u << 20;
  // Reads only the REDUCE header of its chunk, then sends a result for the whole chunk (made-up
  // values) and reads nothing more: the member's upload of that chunk cannot have gone out.
  auto fake = std::make_unique<FakeReducer>(
      [&](FakeReducer::Socket& s) {
        acceptMember(s, kChunkBytes);
        const wire::FrameHeader reduce = readHeaderOf(s);
        sendResultPart(s, reduce, reduce.elemOffset,
                       std::vector<uint8_t>(reduce.payloadLength, 0x42));
        readUntilClosed(s);
      },
      /*receiveBuffer=*/64 << 10);
  const Endpoint fakeEndpoint = fake->endpoint();

  // One member of its own group on [the real reducer, the fake]: two chunks of 8 MiB, chunk 1
  // the fake's. Small socket buffers, so that most of chunk 1 waits in the member's buffer.
  auto options = testClientOptions({pool.endpoints()[0], fakeEndpoint});
  options.minChunkBytes = options.maxChunkBytes = kChunkBytes;
  options.transport.tcp.sendBufferBytes = 128 << 10;
  auto comm = client::Communicator::connect(options, {GroupId::random(), 1, 0});
  REQUIRE(comm.isOk());
  std::vector<float> send(2 * kChunkBytes / sizeof(float), 1.0f), recv(send.size(), 0.0f);
  const Status s = (*comm)->allReduce(send.data(), recv.data(), send.size(), DataType::kFloat32,
                                      ReduceOp::kSum);
  CHECK(s.code() == StatusCode::kProtocolError);
  CHECK_THAT(s.message(), Contains("reducer 1 (" + fakeEndpoint.toString() + ")"));
  CHECK_THAT(s.message(), Contains("can only follow this worker's own upload"));
  comm->reset();
  fake.reset();

  // The reducer the member shared goes on serving the healthy group, exactly.
  CHECK(healthy.finish().toString() == "OK");
}

TEST_CASE("a RESULT with the fabric flag on a stream without a fabric channel is a protocol "
          "error",
          "[untrusted-reducer]") {
  // Reads the member's chunk, then answers with a RESULT header whose payload would be on a
  // fabric channel that this stream never agreed to (the member did not ask for one).
  FakeReducer fake([](FakeReducer::Socket& s) {
    acceptMember(s, 1 << 20);
    const wire::FrameHeader reduce = readHeaderOf(s);
    std::vector<uint8_t> payload(reduce.payloadLength);
    asio::read(s, asio::buffer(payload));
    wire::FrameHeader result = wire::resultHeader({.group = reduce.group,
                                                   .rank = reduce.rank,
                                                   .seq = reduce.seq,
                                                   .chunk = reduce.chunk,
                                                   .elemOffset = reduce.elemOffset,
                                                   .elemCount = reduce.elemCount,
                                                   .dtype = reduce.dtype,
                                                   .op = reduce.op});
    result.flags = wire::kFlagFabric;
    const wire::HeaderBytes header = wire::encodeHeader(result);
    writeBytes(s, header.data(), header.size());
    readUntilClosed(s);
  });
  auto options = testClientOptions({fake.endpoint()}, 1);
  auto comm = client::Communicator::connect(options, {GroupId::random(), 1, 0});
  REQUIRE(comm.isOk());
  std::vector<float> send(1000, 1.0f), recv(send.size(), 0.0f);
  const Status s = (*comm)->allReduce(send.data(), recv.data(), send.size(), DataType::kFloat32,
                                      ReduceOp::kSum);
  CHECK(s.code() == StatusCode::kProtocolError);
  CHECK_THAT(s.message(), Contains("RESULT for chunk 0 (seq 0) with the fabric flag on a stream "
                                   "without a fabric channel"));
}

TEST_CASE("result parts for what the member has already sent are accepted while the rest of "
          "the chunk is still going out (cut-through)",
          "[untrusted-reducer]") {
  constexpr uint32_t kChunkBytes = 8u << 20;
  // A reducer of a one-member group: the sum is the member's own input, so it echoes each half
  // of the chunk back as soon as it has read it, before it reads the other half.
  FakeReducer fake(
      [&](FakeReducer::Socket& s) {
        acceptMember(s, kChunkBytes);
        const wire::FrameHeader reduce = readHeaderOf(s);
        const uint32_t half = reduce.elemCount / 2 * static_cast<uint32_t>(sizeof(float));
        std::vector<uint8_t> first(half), second(reduce.payloadLength - half);
        asio::read(s, asio::buffer(first));
        sendResultPart(s, reduce, reduce.elemOffset, first);
        asio::read(s, asio::buffer(second));
        sendResultPart(s, reduce, reduce.elemOffset + half / sizeof(float), second);
        readUntilClosed(s);
      },
      /*receiveBuffer=*/64 << 10);
  auto options = testClientOptions({fake.endpoint()});
  options.minChunkBytes = options.maxChunkBytes = kChunkBytes;
  options.transport.tcp.sendBufferBytes = 128 << 10;
  auto comm = client::Communicator::connect(options, {GroupId::random(), 1, 0});
  REQUIRE(comm.isOk());
  std::vector<float> send(kChunkBytes / sizeof(float)), recv(send.size(), 0.0f);
  for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<float>(i % 1000);
  const Status s = (*comm)->allReduce(send.data(), recv.data(), send.size(), DataType::kFloat32,
                                      ReduceOp::kSum);
  CHECK(s.toString() == "OK");
  CHECK(recv == send);
}

TEST_CASE("control characters in a reducer's ERROR or ABORT reason reach neither the status "
          "nor the log unescaped",
          "[untrusted-reducer]") {
  // Terminal escapes (a title, clear screen), a C1 control in UTF-8, and forged lines.
  const std::string reason =
      "\x1b]0;pwned\x07\x1b[2J\xc2\x9b" "1m# Out of bounds values : 0 OK\r\n"
      "# Out of bounds values : 0 OK";
  LogCapture log;
  SECTION("ERROR instead of the handshake") {
    auto fake = std::make_unique<FakeReducer>([&](FakeReducer::Socket& s) {
      sendFailure(s, /*abort=*/false, reason);
      readUntilClosed(s);
    });
    const Status s = connectOnce(testClientOptions({fake->endpoint()}), fake);
    CHECK(s.code() == StatusCode::kAborted);
    CHECK(printable(s.message()));
    CHECK_THAT(s.message(),
               Contains("\\x1b[2J\\xc2\\x9b1m# Out of bounds values : 0 OK\\x0d\\x0a#"));
  }
  SECTION("ABORT in the middle of a collective") {
    FakeReducer fake([&](FakeReducer::Socket& s) {
      acceptMember(s, 1u << 20);
      readHeaderOf(s);
      sendFailure(s, /*abort=*/true, reason);
      readUntilClosed(s);
    });
    auto comm = client::Communicator::connect(testClientOptions({fake.endpoint()}),
                                              {GroupId::random(), 1, 0});
    REQUIRE(comm.isOk());
    std::vector<float> buf(1000, 1.0f);
    const Status s = (*comm)->allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                                        ReduceOp::kSum);
    CHECK(s.code() == StatusCode::kAborted);
    CHECK(printable(s.message()));
    CHECK_THAT(s.message(), Contains("aborted the group"));
  }
  CHECK_FALSE(log.contains("\x1b"));
  CHECK_FALSE(log.contains("\n# Out of bounds"));
  CHECK(log.contains("\\x1b"));
}

TEST_CASE("a survivor that commits on a lane a chunk that no member numbered fails the member at "
          "once, naming the lane",
          "[untrusted-reducer][failover]") {
  // Two reducers with one stream each and a group of one member: reducer 1 ends its stream
  // after the handshake (lost), and reducer 0, the survivor, answers the FAILOVER on the lane
  // that carries reducer 1's chunks with a COMMIT far past every chunk numbered (no collective
  // ran yet: none is). The member walked the lane's line up to it (two million chunks here, under
  // the ledger's lock), or forever where the next chunk wrapped past 2^64.
  uint64_t chunk = 0;
  SECTION("two million chunks past") { chunk = 1 + 2'000'000; }  // home 1, as the lane's
  SECTION("where the line wraps past 2^64") { chunk = UINT64_MAX; }
  FakeReducer survivor([&](FakeReducer::Socket& s) {
    const wire::FrameHeader hello = acceptMember(s, 8u << 20);
    if ((hello.flags & wire::kFlagLane) != 0) {
      const wire::FrameHeader failover = readHeaderOf(s);
      std::vector<uint8_t> payload(failover.payloadLength);
      asio::read(s, asio::buffer(payload));
      const wire::HeaderBytes commit =
          wire::encodeHeader(wire::commitHeader(hello.group, hello.rank, chunk));
      writeBytes(s, commit.data(), commit.size());
    }
    readUntilClosed(s);
  });
  FakeReducer lost([](FakeReducer::Socket& s) {
    acceptMember(s, 8u << 20);
    ::shutdown(s.native_handle(), SHUT_RDWR);  // its end; the fake closes the socket itself
  });
  auto comm = client::Communicator::connect(
      testClientOptions({survivor.endpoint(), lost.endpoint()}, 1), {GroupId::random(), 1, 0});
  Status failure = comm ? Status::ok() : comm.status();  // the loss may come inside connect
  if (comm) {
    CHECK(waitUntil([&] { return !(*comm)->health().isOk(); }));
    failure = (*comm)->health();
  }
  INFO(failure.toString());
  CHECK(failure.code() == StatusCode::kProtocolError);
  CHECK_THAT(failure.message(), Contains("lane 1 (reducer 1 stream 0"));
  CHECK_THAT(failure.message(), Contains(fmt::format("COMMIT for chunk {}", chunk)));
}

}  // namespace rs::test
