// The member's side of a stream's fabric set-up (client/handshake.h; proto/WIRE.md, "The
// fabric"), against fake reducers on loopback sockets and, for the offer taken, a real channel on
// a hub of the fake's own (libfabric's tcp provider, tests/support/fabric_choice.h): the HELLO
// asks with the fabric flag, an offer is answered with FABRIC_ACCEPT and the connected channel
// carries bytes both ways; a FABRIC_DECLINE, an offer this member cannot take and a reducer that
// refuses the flag each leave the stream on TCP, saying why; anything else after HELLO_ACK is a
// protocol error. A channel that fails its probe is given up for TCP. A lane never asks. On the
// stream that took an offer, a RESULT without the flag is a protocol error.
#if RS_HAVE_FABRIC
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <future>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "client/handshake.h"
#include "rs/client.h"
#include "core/transport/fabric/fabric_hub.h"
#include "core/transport/fabric/payload_over_fabric.h"
#include "core/wire/fabric_frames.h"
#include "tests/support/fabric_choice.h"
#include "tests/support/fabric_hub_thread.h"
#include "tests/support/fake_reducer.h"
#include "tests/support/local_pool.h"
#include "tests/support/run_until.h"

namespace rs::test {
namespace {

using Catch::Matchers::Contains;
using client::Handshake;
using transport::fabric::FabricChannel;
using transport::fabric::FabricHub;

// A worker's hub on the test's io_context, which the test thread runs (runUntil).
std::unique_ptr<FabricHub> workerHubOn(asio::io_context& io) {
  transport::fabric::FabricHubOptions options;
  options.name = "worker io";
  auto hub = FabricHub::open(io, fabricUnderTest(), options);
  REQUIRE(hub.status().toString() == "OK");
  return std::move(*hub);
}

// One handshake with the fabric asked for (stream `stream` of 1), run on the test's thread,
// with the worker's hub on the test's io_context.
class FabricHandshakeRun {
 public:
  // `connectTimeout`, `probeTimeout`: the member's RS_CONNECT_TIMEOUT_MS and
  // RS_FABRIC_PROBE_TIMEOUT_MS (0: testClientOptions' hang guards).
  explicit FabricHandshakeRun(const Endpoint& where, uint32_t stream = 0,
                              std::chrono::milliseconds connectTimeout = {},
                              std::chrono::milliseconds probeTimeout = {})
      : options_(optionsFor(where, connectTimeout, probeTimeout)),
        group_{GroupId::random(), 2, 1},
        hub_(workerHubOn(io_)),
        handshake_(std::make_shared<Handshake>(
            options_, group_, io_, 0, stream, where,
            "reducer 0 (" + where.toString() + ") stream " + std::to_string(stream),
            std::nullopt, hub_.get())) {
    handshake_->start([this](Result<Handshake::Handshaken> outcome) {
      ++reports_;
      outcome_.emplace(std::move(outcome));
    });
  }
  ~FabricHandshakeRun() {
    if (outcome_ && outcome_->isOk()) (*outcome_)->stream->close();
    io_.poll();
  }
  Result<Handshake::Handshaken>& outcome() {
    REQUIRE(runUntil(io_, [&] { return reports_ > 0; }));
    io_.poll();
    io_.restart();
    CHECK(reports_ == 1);
    return *outcome_;
  }
  asio::io_context& io() { return io_; }
  FabricHub& hub() { return *hub_; }

 private:
  static client::ClientOptions optionsFor(const Endpoint& where,
                                          std::chrono::milliseconds connectTimeout,
                                          std::chrono::milliseconds probeTimeout) {
    client::ClientOptions o = testClientOptions({where}, 1);
    if (connectTimeout.count() > 0) o.connectTimeout = connectTimeout;
    if (probeTimeout.count() > 0) o.fabricProbeTimeout = probeTimeout;
    return o;
  }

  const client::ClientOptions options_;
  const client::GroupSpec group_;
  asio::io_context io_;
  std::unique_ptr<FabricHub> hub_;
  std::shared_ptr<Handshake> handshake_;
  int reports_ = 0;
  std::optional<Result<Handshake::Handshaken>> outcome_;
};

// A fake reducer's handshake with a member that asks for the fabric: CHALLENGE, its HELLO,
// HELLO_ACK; the fabric's frames are the caller's.
Greeted greetAndAck(FakeReducer::Socket& s) {
  const Greeted g = challengeAndReadHello(s);
  const std::vector<uint8_t> ack = helloAckFrame(1 << 20);
  writeBytes(s, ack.data(), ack.size());
  return g;
}

// A frame of the set-up (header and payload) from a fake reducer.
void writeFabricFrame(FakeReducer::Socket& s, const wire::FabricFrame& f) {
  writeBytes(s, f.header.data(), f.header.size());
  writeBytes(s, f.payload.data(), f.payload.size());
}

// The worker's answer to an offer: its header, and its payload.
struct FabricAnswer {
  wire::FrameHeader header;
  std::vector<uint8_t> payload;
};
FabricAnswer readFabricAnswer(FakeReducer::Socket& s) {
  FabricAnswer a{readHeaderOf(s), {}};
  a.payload.resize(a.header.payloadLength);
  asio::read(s, asio::buffer(a.payload));
  return a;
}

std::string declineReason(const FabricAnswer& a) {
  std::string reason;
  if (!wire::parseFabricDecline(a.payload.data(), a.payload.size(), &reason).isOk()) return {};
  return reason;
}

// Takes `bytes` bytes of pieces from `channel` on its hub's thread, releasing each; throws when
// the channel fails or nothing comes.
std::vector<uint8_t> receiveOnHub(FabricHubThread& hub, FabricChannel& channel, size_t bytes) {
  std::vector<uint8_t> got;
  std::promise<Status> done;
  std::function<void()> next = [&] {
    channel.asyncNextPiece(bytes - got.size(),
                           [&](const Status& s, std::span<const uint8_t> piece) {
                             if (!s.isOk()) return done.set_value(s);
                             got.insert(got.end(), piece.begin(), piece.end());
                             if (Status r = channel.release(); !r.isOk())
                               return done.set_value(r);
                             if (got.size() < bytes) return next();
                             done.set_value(Status::ok());
                           });
  };
  hub.call([&] { next(); });
  // Off the test's thread (a fake's, an async's): no Catch2 assertion here, an exception instead.
  auto result = done.get_future();
  if (result.wait_for(std::chrono::seconds(60)) != std::future_status::ready)
    throw std::runtime_error("receiveOnHub: no piece within 60 s");
  if (Status st = result.get(); !st.isOk()) throw std::runtime_error(st.toString());
  return got;
}

// The fake reducer's side of the probes (WIRE.md, "The fabric"): its own written, the member's
// taken and checked; throws as receiveOnHub does.
void fakeReducerProbes(FabricHubThread& hub, FabricChannel& channel,
                       const wire::FrameHeader& hello) {
  auto probe = std::make_shared<wire::FabricProbe>(
      wire::fabricProbe(hello.group, hello.rank, wire::ProbeFrom::kReducer));
  hub.call([&] { channel.send(probe->data(), probe->size(), [probe](const Status&) {}); });
  const std::vector<uint8_t> got = receiveOnHub(hub, channel, wire::kFabricProbeBytes);
  if (Status st = wire::checkFabricProbe(got.data(), got.size(), hello.group, hello.rank,
                                         wire::ProbeFrom::kMember);
      !st.isOk())
    throw std::runtime_error(st.toString());
}

// A fake reducer's offer of a channel on `hub` and, once the member accepted, that channel
// connected to the member's: null, with `problem` saying why, when the member did not accept.
std::shared_ptr<FabricChannel> offerAndConnect(FakeReducer::Socket& s, FabricHubThread& hub,
                                               const Greeted& g, std::string* problem) {
  auto channel = *hub.call([&] { return hub.hub().openChannel({4, 64 << 10}, "fake"); });
  const auto grant = hub.call([&] { return channel->grant(); });
  writeFabricFrame(s, *wire::fabricOfferFrame(g.header.group, g.header.rank,
                                              transport::fabric::toWireGrant(grant)));
  const FabricAnswer accept = readFabricAnswer(s);
  wire::FabricGrant worker;
  if (accept.header.type != wire::FrameType::kFabricAccept ||
      !wire::decodeFabricGrant(accept.payload.data(), accept.payload.size(), &worker).isOk()) {
    *problem = "no FABRIC_ACCEPT";
  } else if (Status st = hub.call(
                 [&] { return channel->connect(transport::fabric::fromWireGrant(worker)); });
             !st.isOk()) {
    *problem = "the fake could not connect: " + st.toString();
  } else {
    return channel;
  }
  hub.call([&] { channel->close(abortedError(*problem)); });
  return nullptr;
}

}  // namespace

TEST_CASE("client fabric handshake: an offer is taken with FABRIC_ACCEPT, and the channel handed "
          "over with the stream carries bytes both ways") {
  FabricHubThread reducerHub("fake reducer io");
  std::shared_ptr<FabricChannel> reducerChannel;
  std::promise<std::string> fakeOutcome;  // empty: all as expected
  FakeReducer fake([&](FakeReducer::Socket& s) {
    const Greeted g = challengeAndReadHello(s);
    if ((g.header.flags & wire::kFlagFabric) == 0) return fakeOutcome.set_value("no fabric flag");
    const std::vector<uint8_t> ack = helloAckFrame(1 << 20);
    writeBytes(s, ack.data(), ack.size());
    auto ch = reducerHub.call([&] { return reducerHub.hub().openChannel({4, 64 << 10}, "fake"); });
    if (!ch) return fakeOutcome.set_value(ch.status().toString());
    reducerChannel = *ch;
    const auto grant = reducerHub.call([&] { return reducerChannel->grant(); });
    auto offer = wire::fabricOfferFrame(g.header.group, g.header.rank,
                                        transport::fabric::toWireGrant(grant));
    writeFabricFrame(s, *offer);
    const FabricAnswer a = readFabricAnswer(s);
    if (a.header.type != wire::FrameType::kFabricAccept)
      return fakeOutcome.set_value(std::string(wire::frameTypeName(a.header.type)) + ": " +
                                   declineReason(a));
    wire::FabricGrant worker;
    if (Status st = wire::decodeFabricGrant(a.payload.data(), a.payload.size(), &worker);
        !st.isOk())
      return fakeOutcome.set_value(st.toString());
    const Status connected = reducerHub.call(
        [&] { return reducerChannel->connect(transport::fabric::fromWireGrant(worker)); });
    if (!connected.isOk()) return fakeOutcome.set_value(connected.toString());
    fakeReducerProbes(reducerHub, *reducerChannel, g.header);
    fakeOutcome.set_value("");
    readUntilClosed(s);
  });
  FabricHandshakeRun run(fake.endpoint());
  auto& outcome = run.outcome();
  REQUIRE(outcome.status().toString() == "OK");
  CHECK(fakeOutcome.get_future().get() == "");
  Handshake::Handshaken& h = *outcome;
  REQUIRE(h.channel != nullptr);
  CHECK(h.fabricNotUsed.empty());

  // Worker to reducer: more than the reducer's ring, so credits must come back.
  std::vector<uint8_t> up(1 << 20);
  std::iota(up.begin(), up.end(), uint8_t{7});
  std::optional<Status> sent;
  h.channel->send(up.data(), up.size(), [&](const Status& s) { sent = s; });
  std::future<std::vector<uint8_t>> received = std::async(std::launch::async, [&] {
    return receiveOnHub(reducerHub, *reducerChannel, up.size());
  });
  REQUIRE(runUntil(run.io(), [&] { return sent.has_value(); }));
  CHECK(sent->toString() == "OK");
  CHECK(h.channel->bytesPosted() == wire::kFabricProbeBytes + up.size());
  CHECK(received.get() == up);

  // Reducer to worker: pieces of the worker's slot size at most.
  std::vector<uint8_t> down(300 << 10, 0x5a);
  std::promise<Status> downSent;
  reducerHub.call([&] {
    reducerChannel->send(down.data(), down.size(), [&](const Status& s) { downSent.set_value(s); });
  });
  std::vector<uint8_t> got;
  bool failed = false;
  std::function<void()> next = [&] {
    h.channel->asyncNextPiece(down.size() - got.size(),
                              [&](const Status& s, std::span<const std::byte> piece) {
                                if (!s.isOk()) return void(failed = true);
                                const auto* p = reinterpret_cast<const uint8_t*>(piece.data());
                                got.insert(got.end(), p, p + piece.size());
                                h.channel->release();
                                if (got.size() < down.size()) next();
                              });
  };
  next();
  REQUIRE(runUntil(run.io(), [&] { return failed || got.size() == down.size(); }));
  CHECK_FALSE(failed);
  CHECK(got == down);
  CHECK(downSent.get_future().get().toString() == "OK");

  h.channel->close(abortedError("test over"));
  reducerHub.call([&] { reducerChannel->close(abortedError("test over")); });
}

TEST_CASE("client fabric handshake: a FABRIC_DECLINE leaves the stream on TCP with the reducer's "
          "reason") {
  FakeReducer fake([](FakeReducer::Socket& s) {
    const Greeted g = greetAndAck(s);
    writeFabricFrame(s, wire::fabricDeclineFrame(g.header.group, g.header.rank,
                                                 "no fabric on this reducer"));
    readUntilClosed(s);
  });
  FabricHandshakeRun run(fake.endpoint());
  auto& outcome = run.outcome();
  REQUIRE(outcome.status().toString() == "OK");
  CHECK(outcome->channel == nullptr);
  CHECK(outcome->fabricNotUsed == "the reducer declined: no fabric on this reducer");
  CHECK(run.hub().openChannels() == 0);
}

TEST_CASE("client fabric handshake: an offer this member cannot take is declined with the "
          "reason, and the stream goes on over TCP") {
  std::promise<std::string> declined;
  FakeReducer fake([&declined](FakeReducer::Socket& s) {
    const Greeted g = greetAndAck(s);
    wire::FabricGrant grant;  // a well-formed grant of a provider the worker does not run
    grant.provider = "efa";
    grant.address.assign(32, 1);
    grant.channelId = 3;
    grant.slots = 4;
    grant.slotBytes = 64 << 10;
    grant.ringSize = uint64_t{4} * (64 << 10);
    writeFabricFrame(s, *wire::fabricOfferFrame(g.header.group, g.header.rank, grant));
    const FabricAnswer a = readFabricAnswer(s);
    declined.set_value(a.header.type == wire::FrameType::kFabricDecline ? declineReason(a)
                                                                        : "not a decline");
    readUntilClosed(s);
  });
  FabricHandshakeRun run(fake.endpoint());
  auto& outcome = run.outcome();
  REQUIRE(outcome.status().toString() == "OK");
  CHECK(outcome->channel == nullptr);
  const std::string reason = declined.get_future().get();
  CHECK_THAT(reason, Contains("provider 'efa'"));
  CHECK(outcome->fabricNotUsed == reason);
  // The channel opened for the offer is closed again.
  CHECK(runUntil(run.io(), [&] { return run.hub().openChannels() == 0; }));
}

TEST_CASE("client fabric handshake: a reducer that refuses the fabric flag (an older one) is "
          "dialled again without it") {
  std::atomic<int> hellos{0}, flagged{0};
  FakeReducer fake([&](FakeReducer::Socket& s) {
    const Greeted g = challengeAndReadHello(s);
    ++hellos;
    if ((g.header.flags & wire::kFlagFabric) != 0) {
      ++flagged;
      // What a reducer that predates the flag answers (its decodeHeader's words).
      const wire::ErrorFrame refusal = wire::errorFrame(
          {}, 0,
          protocolError("frame header: unknown flag bits 0x0010 in flags 0x0010 (known bits "
                        "0x000f)"));
      writeBytes(s, refusal.header.data(), refusal.header.size());
      writeBytes(s, refusal.reason.data(), refusal.reason.size());
      return readUntilClosed(s);
    }
    const std::vector<uint8_t> ack = helloAckFrame(1 << 20);
    writeBytes(s, ack.data(), ack.size());
    readUntilClosed(s);
  });
  FabricHandshakeRun run(fake.endpoint());
  auto& outcome = run.outcome();
  REQUIRE(outcome.status().toString() == "OK");
  CHECK(outcome->channel == nullptr);
  CHECK_THAT(outcome->fabricNotUsed, Contains("predates the fabric"));
  CHECK(hellos == 2);
  CHECK(flagged == 1);
  CHECK(fake.accepted() == 2);
}

TEST_CASE("client fabric handshake: after HELLO_ACK anything but FABRIC_OFFER or FABRIC_DECLINE "
          "is a protocol error") {
  FakeReducer fake([](FakeReducer::Socket& s) {
    const Greeted g = challengeAndReadHello(s);
    std::vector<uint8_t> reply = helloAckFrame(1 << 20);
    const wire::HeaderBytes beat = wire::heartbeatFrame(g.header.group, g.header.rank);
    reply.insert(reply.end(), beat.begin(), beat.end());
    writeBytes(s, reply.data(), reply.size());
    readUntilClosed(s);
  });
  FabricHandshakeRun run(fake.endpoint());
  auto& outcome = run.outcome();
  REQUIRE_FALSE(outcome.isOk());
  CHECK(outcome.status().code() == StatusCode::kProtocolError);
  CHECK_THAT(outcome.status().message(),
             Contains("expected FABRIC_OFFER or FABRIC_DECLINE after HELLO_ACK") &&
                 Contains("got HEARTBEAT"));
}

TEST_CASE("client fabric handshake: a reducer that acknowledges the HELLO and then says nothing, "
          "or half of an offer, fails the handshake at RS_CONNECT_TIMEOUT_MS naming the step") {
  struct Stall {
    const char* what;
    const char* step;  // as the error names it
    FakeReducer::Serve serve;
  };
  const Stall stall = GENERATE(
      Stall{"nothing after HELLO_ACK", "waiting for FABRIC_OFFER or FABRIC_DECLINE",
            [](FakeReducer::Socket& s) {
              greetAndAck(s);
              readUntilClosed(s);
            }},
      Stall{"an offer's header and half its grant", "reading FABRIC_OFFER",
            [](FakeReducer::Socket& s) {
              const Greeted g = greetAndAck(s);
              const wire::FabricGrant grant{.provider = "tcp;ofi_rxm", .address = {1, 2, 3},
                                            .channelId = 1, .slots = 1, .slotBytes = 4096,
                                            .ringAddress = 0, .ringKey = 1, .ringSize = 4096};
              auto offer = wire::fabricOfferFrame(g.header.group, g.header.rank, grant);
              if (!offer) throw std::runtime_error("fake reducer: no offer");
              writeBytes(s, offer->header.data(), offer->header.size());
              writeBytes(s, offer->payload.data(), offer->payload.size() / 2);
              readUntilClosed(s);
            }});
  INFO("the reducer sends " << stall.what);
  FakeReducer fake(stall.serve);
  FabricHandshakeRun run(fake.endpoint(), 0, std::chrono::milliseconds(500));
  auto& outcome = run.outcome();
  REQUIRE_FALSE(outcome.isOk());
  CHECK(outcome.status().code() == StatusCode::kTimeout);
  CHECK_THAT(outcome.status().message(),
             Contains(std::string("still ") + stall.step + " when the connect timeout (500 ms") &&
                 Contains("reducer 0 (" + fake.endpoint().toString() + ") stream 0"));
}

TEST_CASE("client fabric handshake: a lane never asks for the fabric") {
  std::atomic<int> flags{-1};
  FakeReducer fake([&flags](FakeReducer::Socket& s) {
    const std::vector<uint8_t> challenge = challengeFrame();
    writeBytes(s, challenge.data(), challenge.size());
    flags = readHello(s).flags;  // a lane's HELLO: its index past the streams
    const std::vector<uint8_t> ack = helloAckFrame(1 << 20);
    writeBytes(s, ack.data(), ack.size());
    readUntilClosed(s);
  });
  FabricHandshakeRun run(fake.endpoint(), /*stream=*/1);  // past the 1 stream
  auto& outcome = run.outcome();
  REQUIRE(outcome.status().toString() == "OK");
  CHECK(outcome->channel == nullptr);
  CHECK(outcome->fabricNotUsed.empty());
  CHECK((flags & wire::kFlagFabric) == 0);
  CHECK((flags & wire::kFlagLane) != 0);
}

TEST_CASE("client fabric handshake: a channel that fails its probe is given up: FABRIC_DECLINE "
          "after FABRIC_ACCEPT, saying why, and the stream goes on over TCP") {
  struct Case {
    const char* what;
    // What the fake reducer does once its channel is connected to the member's.
    std::function<void(FabricHubThread&, FabricChannel&, const wire::FrameHeader&)> then;
    const char* reason;
    // The member's RS_CONNECT_TIMEOUT_MS (0: testClientOptions' hang guard): the whole
    // handshake's, so that of the case waiting it out is ample for the steps before the probe
    // on a loaded machine.
    int connectTimeoutMs = 0;
    // Its RS_FABRIC_PROBE_TIMEOUT_MS (0: the hang guard): from the probe's start on.
    int probeTimeoutMs = 0;
  };
  const Case c = GENERATE(
      Case{"no probe from the reducer", [](FabricHubThread&, FabricChannel&,
                                           const wire::FrameHeader&) {},
           "the fabric channel failed its probe: its probe did not complete within the connect "
           "timeout (2000 ms, RS_CONNECT_TIMEOUT_MS)",
           2000},
      Case{"no probe from the reducer, within the probe's own bound",
           [](FabricHubThread&, FabricChannel&, const wire::FrameHeader&) {},
           "the fabric channel failed its probe: its probe did not complete within 1500 ms "
           "(RS_FABRIC_PROBE_TIMEOUT_MS)",
           0, 1500},
      Case{"other bytes than the reducer's probe",
           [](FabricHubThread& hub, FabricChannel& channel, const wire::FrameHeader& hello) {
             auto wrong = std::make_shared<wire::FabricProbe>(
                 wire::fabricProbe(hello.group, hello.rank, wire::ProbeFrom::kMember));
             hub.call([&] {
               channel.send(wrong->data(), wrong->size(), [wrong](const Status&) {});
             });
           },
           "the fabric channel failed its probe: fabric probe: the reducer's probe differs from "
           "byte 36 on",
           0},
      Case{"a ring closed before the member's probe lands (a fabric that does not reach)",
           [](FabricHubThread& hub, FabricChannel& channel, const wire::FrameHeader&) {
             hub.call([&] { channel.close(abortedError("unreachable, to the member")); });
           },
           // The tcp provider reports no error for a write into a closed ring (an RDMA NIC
           // would): the member waits out its probe's bound, so a short one, not the hang guard.
           "the fabric channel failed its probe: ", 0, 2000});
  INFO(c.what);
  FabricHubThread reducerHub("fake reducer io");
  std::shared_ptr<FabricChannel> reducerChannel;
  std::promise<std::string> answers;  // the member's answers after the offer
  FakeReducer fake([&](FakeReducer::Socket& s) {
    const Greeted g = greetAndAck(s);
    std::string problem;
    reducerChannel = offerAndConnect(s, reducerHub, g, &problem);
    if (!reducerChannel) return answers.set_value(problem);
    c.then(reducerHub, *reducerChannel, g.header);
    const FabricAnswer after = readFabricAnswer(s);
    answers.set_value(after.header.type == wire::FrameType::kFabricDecline
                          ? "FABRIC_DECLINE: " + declineReason(after)
                          : std::string(wire::frameTypeName(after.header.type)));
    readUntilClosed(s);
  });
  FabricHandshakeRun run(fake.endpoint(), 0, std::chrono::milliseconds(c.connectTimeoutMs),
                         std::chrono::milliseconds(c.probeTimeoutMs));
  auto& outcome = run.outcome();
  REQUIRE(outcome.status().toString() == "OK");
  CHECK(outcome->channel == nullptr);
  CHECK_THAT(outcome->fabricNotUsed, Contains(c.reason));
  auto answered = answers.get_future();
  REQUIRE(answered.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  CHECK(answered.get() == "FABRIC_DECLINE: " + outcome->fabricNotUsed);
  CHECK(runUntil(run.io(), [&] { return run.hub().openChannels() == 0; }));
  if (reducerChannel) reducerHub.call([&] { reducerChannel->close(abortedError("test over")); });
}

TEST_CASE("client fabric handshake: on a stream that took the fabric, a RESULT without the flag "
          "is a protocol error") {
  FabricHubThread reducerHub("fake reducer io");
  std::shared_ptr<FabricChannel> reducerChannel;
  FakeReducer fake([&](FakeReducer::Socket& s) {
    const Greeted g = greetAndAck(s);
    std::string problem;
    reducerChannel = offerAndConnect(s, reducerHub, g, &problem);
    if (!reducerChannel) return;
    fakeReducerProbes(reducerHub, *reducerChannel, g.header);
    // The member's chunk: its header here, its payload on the channel; then a result sent the
    // TCP way, payload behind the header, on a stream that agreed otherwise.
    const wire::FrameHeader reduce = readHeaderOf(s);
    const std::vector<uint8_t> payload = receiveOnHub(reducerHub, *reducerChannel,
                                                      reduce.payloadLength);
    sendResultPart(s, reduce, reduce.elemOffset, payload);
    readUntilClosed(s);
  });
  auto options = testClientOptions({fake.endpoint()}, 1);
  options.fabric = fabricUnderTest().provider;
  options.fabricNode = fabricUnderTest().node;
  auto comm = client::Communicator::connect(options, {GroupId::random(), 1, 0});
  REQUIRE(comm.status().toString() == "OK");
  std::vector<float> send(1000, 1.0f), recv(send.size(), 0.0f);
  const Status st = (*comm)->allReduce(send.data(), recv.data(), send.size(),
                                       DataType::kFloat32, ReduceOp::kSum);
  CHECK(st.code() == StatusCode::kProtocolError);
  CHECK_THAT(st.message(), Contains("RESULT for chunk 0 (seq 0) without the fabric flag on a "
                                    "stream whose payloads go on its fabric channel"));
  comm->reset();
  if (reducerChannel) reducerHub.call([&] { reducerChannel->close(abortedError("test over")); });
}

}  // namespace rs::test
#endif  // RS_HAVE_FABRIC
