// The member's side of a data stream's handshake (client/handshake.h) on its own, against fake
// reducers on real loopback sockets (tests/support/fake_reducer.h): the HELLO it sends proves
// the secret for the reducer's nonce, and the stream it hands over carries what was read past
// the HELLO_ACK; a reducer's refusal and a reducer that wants a secret this member lacks each
// end it with a status that names the stream; the loss bound asked and granted; cancel() ends
// it once, aborted, closing the stream. Each handshake reports exactly once.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "client/handshake.h"
#include "core/wire/auth.h"
#include "core/wire/crc32c.h"
#include "tests/support/fake_reducer.h"
#include "tests/support/local_pool.h"
#include "tests/support/run_until.h"
#include "tests/support/wait_until.h"

namespace rs::test {
namespace {

using Catch::Matchers::Contains;
using client::Handshake;

constexpr const char* kClientHandshakeSecret = "client-handshake-secret-0123456789";

std::string streamName(const Endpoint& where) {
  return "reducer 0 (" + where.toString() + ") stream 0";
}

// A CHALLENGE asking for the job secret, with `nonce`.
std::vector<uint8_t> securedChallengeFrame(const wire::Nonce& nonce) {
  wire::FrameHeader h;
  h.type = wire::FrameType::kChallenge;
  h.payloadLength = wire::kChallengePayloadSize;
  const wire::HeaderBytes header = wire::encodeHeader(h);
  wire::ChallengePayload c;
  c.mode = wire::AuthMode::kJobSecret;
  c.nonce = nonce;
  const auto payload = wire::encodeChallenge(c);
  std::vector<uint8_t> frame(header.begin(), header.end());
  frame.insert(frame.end(), payload.begin(), payload.end());
  return frame;
}

// A fake reducer's conversation that sends `challenge`, then records whether a HELLO header
// followed before the member closed, and shuts the socket down (a member waiting for more
// learns at once); `closed` is set last.
FakeReducer::Serve challengeOnly(std::vector<uint8_t> challenge, std::atomic<bool>& gotHello,
                                 std::atomic<bool>& closed) {
  return [challenge = std::move(challenge), &gotHello, &closed](FakeReducer::Socket& s) {
    writeBytes(s, challenge.data(), challenge.size());
    wire::HeaderBytes bytes;
    std::error_code ec;
    asio::read(s, asio::buffer(bytes), ec);
    gotHello = !ec;
    closed = true;
    s.shutdown(asio::socket_base::shutdown_both, ec);
  };
}

// One handshake, run on the test's thread, that records its reports. It keeps the options and
// the group, which the handshake holds by reference.
class HandshakeRun {
 public:
  HandshakeRun(asio::io_context& io, client::ClientOptions options, client::GroupSpec group,
               const Endpoint& where)
      : options_(std::move(options)),
        group_(group),
        handshake_(
            std::make_shared<Handshake>(options_, group_, io, 0, 0, where, streamName(where))) {
    handshake_->start([this](Result<Handshake::Handshaken> outcome) {
      ++reports_;
      outcome_.emplace(std::move(outcome));
    });
  }

  // Runs `io` until the handshake reported, then once more: a second report would show.
  Result<Handshake::Handshaken>& outcome(asio::io_context& io) {
    REQUIRE(runUntil(io, [&] { return reports_ > 0; }));
    io.poll();
    io.restart();
    CHECK(reports_ == 1);
    return *outcome_;
  }

  Handshake& handshake() { return *handshake_; }

 private:
  const client::ClientOptions options_;
  const client::GroupSpec group_;
  std::shared_ptr<Handshake> handshake_;
  int reports_ = 0;
  std::optional<Result<Handshake::Handshaken>> outcome_;
};

}  // namespace

TEST_CASE("client handshake: a proven HELLO, and the stream handed over with what was read "
          "past the HELLO_ACK") {
  const wire::Nonce nonce = *wire::randomNonce();
  std::atomic<bool> proven{false};
  auto options = testClientOptions({}, 1);
  const auto maxChunk = static_cast<uint32_t>(options.maxChunkBytes);
  // The HELLO_ACK and an ABORT behind it in one write: they arrive together, and the handshake's
  // read of the HELLO_ACK takes the ABORT with it into its reader's buffer.
  FakeReducer fake([&nonce, &proven, maxChunk](FakeReducer::Socket& s) {
    const std::vector<uint8_t> challenge = securedChallengeFrame(nonce);
    writeBytes(s, challenge.data(), challenge.size());
    const wire::FrameHeader h = readHeaderOf(s);
    std::array<uint8_t, wire::kHelloPayloadSize> bytes;
    asio::read(s, asio::buffer(bytes));
    wire::HelloPayload hello;
    if (wire::decodeHello(bytes.data(), bytes.size(), &hello).isOk())
      proven = wire::proofsEqual(wire::helloProof(kClientHandshakeSecret, nonce, h, hello),
                                 hello.authProof);
    std::vector<uint8_t> reply = helloAckFrame(maxChunk);
    const wire::ErrorFrame abort =
        wire::abortFrame({}, 0, abortedError("another member gave up"));
    reply.insert(reply.end(), abort.header.begin(), abort.header.end());
    reply.insert(reply.end(), abort.reason.begin(), abort.reason.end());
    writeBytes(s, reply.data(), reply.size());
    readUntilClosed(s);
  });
  options.reducers = {fake.endpoint()};
  options.secret = kClientHandshakeSecret;
  asio::io_context io;
  HandshakeRun run(io, options, {GroupId::random(), 2, 1}, fake.endpoint());
  auto& outcome = run.outcome(io);
  REQUIRE(outcome.status().toString() == "OK");
  CHECK(proven);
  Handshake::Handshaken& stream = *outcome;
  CHECK(stream.stream->bytesSent() == wire::kHeaderSize + wire::kHelloPayloadSize);

  // The connection reads on through the handed reader: the ABORT is the next frame.
  bool read = false;
  std::error_code readError;
  stream.reader->readHeader(*stream.stream, [&](const std::error_code& ec, size_t) {
    read = true;
    readError = ec;
  });
  REQUIRE(runUntil(io, [&] { return read; }));
  REQUIRE_FALSE(readError);
  wire::FrameHeader next;
  REQUIRE(wire::decodeHeader(stream.reader->header().data(), wire::kHeaderSize, {}, &next)
              .toString() == "OK");
  CHECK(next.type == wire::FrameType::kAbort);
  stream.stream->close();
  io.poll();
}

TEST_CASE("client handshake: a reducer's refusal ends it with the reducer's code and reason, "
          "naming the stream") {
  FakeReducer fake([](FakeReducer::Socket& s) {
    const std::vector<uint8_t> challenge = challengeFrame();
    writeBytes(s, challenge.data(), challenge.size());
    readHello(s);
    const wire::ErrorFrame refusal =
        wire::errorFrame({}, 0, failedPrecondition("group 0123abcd belongs to another job"));
    writeBytes(s, refusal.header.data(), refusal.header.size());
    writeBytes(s, refusal.reason.data(), refusal.reason.size());
    readUntilClosed(s);
  });
  asio::io_context io;
  HandshakeRun run(io, testClientOptions({fake.endpoint()}, 1), {GroupId::random(), 2, 0},
                   fake.endpoint());
  auto& outcome = run.outcome(io);
  REQUIRE_FALSE(outcome.isOk());
  CHECK(outcome.status().code() == StatusCode::kFailedPrecondition);
  CHECK(outcome.status().message() ==
        streamName(fake.endpoint()) + " refused: group 0123abcd belongs to another job");
}

// The loss bound: the HELLO carries what the member asks (RS_LOSS_DETECT_MS), the HELLO_ACK
// what the reducer grants, which the stream keeps; a reducer may lower an ask, never raise it.
TEST_CASE("client handshake: the HELLO asks for the member's loss bound, the HELLO_ACK's is the "
          "stream's, and a reducer may not raise it") {
  struct Case {
    uint32_t asked, granted;
    bool accepted;
  };
  for (const Case c : {Case{1500, 700, true}, Case{0, 5000, true}, Case{1000, 0, true},
                       Case{1000, 5000, false}}) {
    INFO("asked " << c.asked << " granted " << c.granted);
    std::atomic<uint32_t> seen{UINT32_MAX};
    FakeReducer fake([&seen, granted = c.granted](FakeReducer::Socket& s) {
      const std::vector<uint8_t> challenge = challengeFrame();
      writeBytes(s, challenge.data(), challenge.size());
      readHeaderOf(s);
      std::array<uint8_t, wire::kHelloPayloadSize> bytes;
      asio::read(s, asio::buffer(bytes));
      wire::HelloPayload hello;
      if (wire::decodeHello(bytes.data(), bytes.size(), &hello).isOk()) seen = hello.lossDetectMs;
      const std::vector<uint8_t> ack = helloAckFrame(1 << 20, granted);
      writeBytes(s, ack.data(), ack.size());
      readUntilClosed(s);
    });
    auto options = testClientOptions({fake.endpoint()}, 1);
    options.lossDetect = std::chrono::milliseconds(c.asked);
    asio::io_context io;
    HandshakeRun run(io, options, {GroupId::random(), 2, 0}, fake.endpoint());
    auto& outcome = run.outcome(io);
    CHECK(seen == c.asked);
    if (c.accepted) {
      REQUIRE(outcome.status().toString() == "OK");
      CHECK(outcome->lossBound == std::chrono::milliseconds(c.granted));
      outcome->stream->close();
    } else {
      CHECK(outcome.status().code() == StatusCode::kProtocolError);
      CHECK(outcome.status().message() ==
            streamName(fake.endpoint()) + " announced a loss bound of 5000 ms, above the 1000 ms "
                                          "this member asked for (RS_LOSS_DETECT_MS): a reducer "
                                          "may only lower it");
    }
    io.poll();
  }
}

TEST_CASE("client handshake: a reducer of another wire version is refused at its CHALLENGE, "
          "with a message that says so and sends no HELLO") {
  std::atomic<bool> closed{false};
  std::atomic<bool> gotHello{false};
  // The CHALLENGE of the release before: its version byte, with the checksum made anew.
  std::vector<uint8_t> challenge = challengeFrame();
  challenge[4] = wire::kProtocolVersion - 1;
  const uint32_t crc = wire::crc32c(challenge.data(), wire::kHeaderSize - 4);
  for (int i = 0; i < 4; ++i)
    challenge[wire::kHeaderSize - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
  FakeReducer fake(challengeOnly(challenge, gotHello, closed));
  asio::io_context io;
  HandshakeRun run(io, testClientOptions({fake.endpoint()}, 1), {GroupId::random(), 2, 0},
                   fake.endpoint());
  auto& outcome = run.outcome(io);
  REQUIRE_FALSE(outcome.isOk());
  CHECK(outcome.status().code() == StatusCode::kProtocolError);
  const std::string old = std::to_string(wire::kProtocolVersion - 1);
  CHECK_THAT(outcome.status().message(),
             Contains(streamName(fake.endpoint()) + ": frame header: unsupported version " + old +
                      " (expected " + std::to_string(wire::kProtocolVersion) +
                      "): the peer runs another release of the Reduction Server, and reducers "
                      "and workers must speak one wire version"));
  REQUIRE(waitUntil([&] { return closed.load(); }));
  CHECK_FALSE(gotHello);
}

TEST_CASE("client handshake: a member without the secret stops at a reducer that wants one, "
          "sending no HELLO") {
  std::atomic<bool> closed{false};
  std::atomic<bool> gotHello{false};
  FakeReducer fake(challengeOnly(securedChallengeFrame(*wire::randomNonce()), gotHello, closed));
  asio::io_context io;
  HandshakeRun run(io, testClientOptions({fake.endpoint()}, 1), {GroupId::random(), 2, 0},
                   fake.endpoint());
  auto& outcome = run.outcome(io);
  REQUIRE_FALSE(outcome.isOk());
  CHECK(outcome.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(outcome.status().message(),
             Contains(streamName(fake.endpoint()) +
                      " requires the job secret, and this worker has none"));
  REQUIRE(waitUntil([&] { return closed.load(); }));
  CHECK_FALSE(gotHello);
}

TEST_CASE("client handshake: cancel ends it once, aborted, and closes the stream") {
  std::atomic<bool> helloIn{false};
  std::atomic<bool> closed{false};
  FakeReducer fake([&](FakeReducer::Socket& s) {
    const std::vector<uint8_t> challenge = challengeFrame();
    writeBytes(s, challenge.data(), challenge.size());
    readHello(s);
    helloIn = true;
    readUntilClosed(s);  // never answers
    closed = true;
  });
  asio::io_context io;
  HandshakeRun run(io, testClientOptions({fake.endpoint()}, 1), {GroupId::random(), 2, 0},
                   fake.endpoint());
  REQUIRE(runUntil(io, [&] { return helloIn.load(); }));
  run.handshake().cancel();
  auto& outcome = run.outcome(io);
  REQUIRE_FALSE(outcome.isOk());
  CHECK(outcome.status().code() == StatusCode::kAborted);
  CHECK(waitUntil([&] { return closed.load(); }));
}

}  // namespace rs::test
