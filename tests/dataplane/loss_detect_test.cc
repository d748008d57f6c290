// The loss bound (proto/WIRE.md, "Heartbeats and the loss bound") end to end on loopback: a
// reducer that goes silent fails a member's collective naming it, one that is slow but sends
// HEARTBEATs does not; a member that goes silent inside its chunk fails its group on the
// reducer (the other member gets the reason, a healthy group beside stays exact), and so do
// one that stops between two chunks of a collective the other member goes on with (whichever
// began the next chunk first), and one
// that stops with its results unread in the reducer's socket (its TCP_USER_TIMEOUT); a
// straggler,
// a member held back by the lead limit, a member awaiting its results and an idle group are
// never lost; the bound each stream gets; and a HEARTBEAT that names another member.
//
// A silent peer is a state, never a sleep: a fake reducer that stops writing, a raw member that
// stops sending. The waits for "longer than the bound" wait for the heartbeats that prove it
// (four heartbeats are four thirds of the bound of quiet). The bound is only ever an upper
// limit here, asserted loosely or not at all; the elapsed time is printed. A short bound (half
// a second) goes only on the streams of the peer meant to be lost (the reducers keep the test
// pools' hang guard, 300 s); where nothing may be lost the bound is 4 s, so that a sanitizer
// build on a loaded machine, whose threads can stall for a second, loses no one.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/wire/control_frames.h"
#include "tests/support/fake_reducer.h"
#include "tests/support/healthy_group.h"
#include "tests/support/local_pool.h"
#include "tests/support/log_capture.h"
#include "tests/support/raw_member.h"
#include "tests/support/wait_until.h"

namespace rs::test {
namespace {

using Catch::Matchers::Contains;
using Clock = std::chrono::steady_clock;

server::DataPlaneStats statsOf(LocalPool& pool) { return pool.reducer(0).dataPlane().stats(); }

uint64_t silentLosses(LocalPool& pool) {
  return statsOf(pool).membersLost[static_cast<size_t>(server::MemberLoss::kSilent)];
}

long msSince(Clock::time_point start) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
}

// A one-reducer, one-stream member whose collectives of up to `maxChunk` bytes are one chunk.
client::ClientOptions oneStream(const std::vector<Endpoint>& reducers,
                                uint64_t maxChunk = 1 << 20) {
  auto options = testClientOptions(reducers, 1);
  options.minChunkBytes = maxChunk;
  options.maxChunkBytes = maxChunk;
  return options;
}

// A fake reducer (open, one member of a one-member group) that takes the member's chunk and
// then runs `after` with the socket and the chunk's header and payload.
using AfterChunk =
    std::function<void(FakeReducer::Socket&, const wire::FrameHeader&, std::vector<uint8_t>&)>;
FakeReducer chunkTakingReducer(uint32_t lossDetectMs, AfterChunk after) {
  return FakeReducer([lossDetectMs, after](FakeReducer::Socket& s) {
    acceptMember(s, 1 << 20, lossDetectMs);
    const wire::FrameHeader reduce = readHeaderOf(s);
    std::vector<uint8_t> payload(reduce.payloadLength);
    asio::read(s, asio::buffer(payload));
    after(s, reduce, payload);
  });
}

}  // namespace

TEST_CASE("loss: a reducer silent past the bound fails the collective, naming it and the bound",
          "[loss]") {
  constexpr uint32_t kBound = 500;
  // Takes the chunk and never answers: reads on (the member's HEARTBEATs) until closed.
  FakeReducer fake = chunkTakingReducer(
      kBound, [](FakeReducer::Socket& s, const wire::FrameHeader&, std::vector<uint8_t>&) {
        readUntilClosed(s);
      });
  auto comm = client::Communicator::connect(oneStream({fake.endpoint()}), {GroupId::random(), 1, 0});
  REQUIRE(comm.status().toString() == "OK");
  std::vector<float> buf(1000, 1.0f);
  const auto start = Clock::now();
  const Status s = (*comm)->allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                                      ReduceOp::kSum);
  WARN("a silent reducer failed the collective after " << msSince(start) << " ms (bound "
                                                       << kBound << " ms)");
  CHECK(s.code() == StatusCode::kUnavailable);
  CHECK_THAT(s.message(), Contains("reducer 0 (" + fake.endpoint().toString() + ") stream 0: "
                                   "silent for ") &&
                              Contains("reducer lost") && Contains("loss bound is 500 ms") &&
                              Contains("RS_LOSS_DETECT_MS"));
  CHECK(msSince(start) >= kBound);
}

TEST_CASE("loss: a reducer slow to answer but sending HEARTBEATs is waited for, and its result "
          "is exact",
          "[loss]") {
  constexpr uint32_t kBound = 4000;
  std::atomic<int> beats{0};
  // Takes the chunk, then answers nothing but a HEARTBEAT every quarter of the bound for one and
  // a half bounds (a reducer busy elsewhere), then the result: the member's own values (a group
  // of 1).
  FakeReducer fake = chunkTakingReducer(
      kBound, [&beats](FakeReducer::Socket& s, const wire::FrameHeader& reduce,
                       std::vector<uint8_t>& payload) {
        const wire::HeaderBytes beat = wire::heartbeatFrame(reduce.group, reduce.rank);
        for (int i = 0; i < 6; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(kBound / 4));
          writeBytes(s, beat.data(), beat.size());
          ++beats;
        }
        sendResultPart(s, reduce, 0, payload);
        readUntilClosed(s);
      });
  auto comm = client::Communicator::connect(oneStream({fake.endpoint()}), {GroupId::random(), 1, 0});
  REQUIRE(comm.status().toString() == "OK");
  std::vector<float> buf(1000);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i);
  const auto start = Clock::now();
  REQUIRE((*comm)->allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                             ReduceOp::kSum)
              .toString() == "OK");
  WARN("the result came after " << msSince(start) << " ms, " << beats.load()
                                << " heartbeats (bound " << kBound << " ms)");
  CHECK(beats == 6);
  for (size_t i = 0; i < buf.size(); ++i) REQUIRE(buf[i] == static_cast<float>(i));
}

TEST_CASE("loss: a member silent inside its chunk fails its group on the reducer, the other "
          "member gets the reason, a healthy group beside stays exact",
          "[loss]") {
  LocalPool pool(1);
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  Status healthy;
  std::thread healthyThread([&] {
    healthy = runHealthyGroup(pool.endpoints(), {.stop = &stop, .done = &rounds});
  });
  REQUIRE(waitUntil([&] { return rounds.load() >= 2; }));

  const GroupId id = GroupId::random();
  constexpr uint32_t kCount = 64 << 10;  // one 256 KiB chunk
  asio::io_context io;
  // Rank 1: half of its chunk, then nothing (a process stopped, a machine gone). Its stream's
  // bound is the 500 ms it asks for. Rank 0 joins first: joined after the loss, it would be
  // refused by the aborted group instead (a connect slower than the bound on a loaded machine).
  RawMember silent(io, pool.reducer(0).dataPort(), id, 2, 1, /*lossDetectMs=*/500);
  auto comm = client::Communicator::connect(oneStream(pool.endpoints()), {id, 2, 0});
  REQUIRE(comm.status().toString() == "OK");
  silent.sendHeader(kCount);
  silent.sendElements(0, kCount / 2);
  std::vector<float> buf(kCount, 1.0f);
  const auto start = Clock::now();
  const Status s = (*comm)->allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                                      ReduceOp::kSum);
  WARN("the other member's collective failed after " << msSince(start) << " ms");
  CHECK_THAT(s.message(), Contains("aborted the group: rank 1 stream 0: silent for ") &&
                              Contains("while its contribution to chunk 0 (seq 0) was coming in") &&
                              Contains("member lost") && Contains("--loss-detect-ms"));
  CHECK(silentLosses(pool) == 1);
  CHECK(statsOf(pool).groupAborts[static_cast<size_t>(server::AbortReason::kConnectionLost)] == 1);
  // The silent member, should it read again, finds the result of the half it sent (cut-through),
  // the reducer's HEARTBEATs (it owed that member the rest) and the ABORT with the reason.
  int beats = 0;
  wire::FrameHeader h = readFrameHeader(silent.socket());
  for (; h.type != wire::FrameType::kAbort; h = readFrameHeader(silent.socket())) {
    if (h.type == wire::FrameType::kHeartbeat) ++beats;
    std::vector<uint8_t> payload(h.payloadLength);
    asio::read(silent.socket(), asio::buffer(payload));
  }
  std::string reason(h.payloadLength, '\0');
  asio::read(silent.socket(), asio::buffer(reason));
  CHECK_THAT(reason, Contains("rank 1 stream 0: silent for "));
  CHECK(beats >= 1);

  const int before = rounds.load();
  REQUIRE(waitUntil([&] { return rounds.load() >= before + 3; }));
  stop = true;
  healthyThread.join();
  CHECK(healthy.toString() == "OK");
  CHECK(silentLosses(pool) == 1);  // the healthy group lost no one
}

// A member that stops between two chunks of a collective it has begun, its first chunk's
// results all handed over: the reducer owes it nothing then, but the other member has begun
// the next chunk of that collective, which this one owes; the reducer awaits it from there and
// fails the group within the bound (before, only the collective timeout found it: a fault test
// whose member stopped at a chunk's end waited 60 s for it).
TEST_CASE("loss: a member silent between two chunks of a collective it has begun fails its "
          "group once another member has begun the next",
          "[loss]") {
  LocalPool pool(1);
  const GroupId id = GroupId::random();
  constexpr uint32_t kCount = 4 << 10;  // two chunks of 16 KiB: collective 0, chunks 0 and 1
  asio::io_context io;
  RawMember other(io, pool.reducer(0).dataPort(), id, 2, 0);
  RawMember silent(io, pool.reducer(0).dataPort(), id, 2, 1, /*lossDetectMs=*/500);
  other.sendChunk(0, kCount, /*seq=*/0);
  silent.sendChunk(0, kCount, /*seq=*/0);
  other.readResult(0, kCount);
  silent.readResult(0, kCount);  // all of its results in: nothing owed to it any more
  const auto start = Clock::now();
  other.sendChunk(1, kCount, /*seq=*/0);
  const std::string reason = other.readAbort();
  WARN("the group failed " << msSince(start) << " ms after the other member began chunk 1");
  CHECK_THAT(reason, Contains("rank 1 stream 0: silent for ") &&
                         Contains("while the others had begun chunk 1 of the collective (seq 0) "
                                  "it was in, past its chunk 0") &&
                         Contains("member lost"));
  CHECK(silentLosses(pool) == 1);
}

// The slowest member, once it has caught up: the other member began chunk 1 before this one
// began chunk 0 (nothing of it was owed then, so nothing marked it); its own header for chunk 0
// finds the others past it, and from the last of its results on it owes chunk 1.
TEST_CASE("loss: a member that begins a chunk the others are past, then stops, fails its group",
          "[loss]") {
  LocalPool pool(1);
  const GroupId id = GroupId::random();
  constexpr uint32_t kCount = 4 << 10;
  asio::io_context io;
  RawMember other(io, pool.reducer(0).dataPort(), id, 2, 0);
  RawMember silent(io, pool.reducer(0).dataPort(), id, 2, 1, /*lossDetectMs=*/500);
  other.sendChunk(0, kCount, /*seq=*/0);
  other.sendChunk(1, kCount, /*seq=*/0);
  REQUIRE(waitUntil([&] { return statsOf(pool).slotsOpen == 2; }));  // both headers taken
  silent.sendChunk(0, kCount, /*seq=*/0);
  other.readResult(0, kCount);
  silent.readResult(0, kCount);
  const auto start = Clock::now();
  const std::string reason = other.readAbort();
  WARN("the group failed " << msSince(start) << " ms after the silent member's last result");
  CHECK_THAT(reason, Contains("rank 1 stream 0: silent for ") &&
                         Contains("while the others had begun chunk 1 of the collective (seq 0) "
                                  "it was in, past its chunk 0"));
  CHECK(silentLosses(pool) == 1);
}

// The transport's net under the heartbeats: a member that stops (sends nothing, reads nothing)
// once its chunk's results are all handed to the reducer's socket. The reducer then owes it
// nothing it knows of, so the heartbeats' rule does not wait on it; its TCP_USER_TIMEOUT at the
// bound finds the results unread, and the member is lost as unresponsive. (Where the results
// fit in the member's own receive buffer, nothing is left to find until its next collective's
// timeout: a member that finished looks no different.)
TEST_CASE("loss: a member that stops with its results in the reducer's socket is lost as "
          "unresponsive",
          "[loss]") {
  auto config = testServerConfig();
  config.transport.tcp.sendBufferBytes = 4 << 20;  // the whole result goes into the socket
  LogCapture log;
  LocalPool pool(1, config);
  asio::io_context io;
  const GroupId id = GroupId::random();
  asio::ip::tcp::socket member(io);
  joinRaw(member, pool.reducer(0).dataPort(), id, 0, 1, /*receiveBuffer=*/4096,
          /*lossDetectMs=*/500);
  constexpr uint32_t kCount = 256 << 10;  // a 1 MiB result, far more than the member's window
  asio::write(member, asio::buffer(fp32ReduceHeader(id, 0, 0, kCount)));
  std::vector<float> values(kCount, 1.0f);
  asio::write(member, asio::buffer(values));
  const auto start = Clock::now();
  REQUIRE(waitUntil([&] {
    return statsOf(pool).membersLost[static_cast<size_t>(server::MemberLoss::kUnresponsive)] == 1;
  }));
  WARN("the member that read nothing was lost after " << msSince(start) << " ms");
  CHECK(silentLosses(pool) == 0);
  // The loss is counted before it is logged (Shard::memberLost): wait for the line.
  CHECK(waitUntil([&] {
    return log.contains("the connection timed out: for the stream's loss bound (500 ms") &&
           log.contains("member lost");
  }));
}

// A straggler (a member still computing) is not lost, nor are the members that wait for it:
// the reducer owes them their results and says so with HEARTBEATs, and they, waiting for
// their results, answer with theirs; a member held back inside its chunk by the lead limit
// can send nothing, and the reducer does not wait on it then (nor does its own kernel give up
// on the shut window: members set no TCP_USER_TIMEOUT).
TEST_CASE("loss: a straggler, a member held back by the lead limit and one awaiting its results "
          "are not lost, and the result is exact",
          "[loss]") {
  auto config = testServerConfig();
  config.lossDetectMs = 4000;
  config.pieceBytes = 64 << 10;
  config.maxLeadBytes = 64 << 10;
  LocalPool pool(1, config);
  const GroupId id = GroupId::random();
  // The first collective's chunk (1 MiB) is larger than the lead limit, so rank 0 is held back
  // inside it; the second's (32 KiB) goes out whole, and rank 0 awaits its result.
  const uint32_t counts[] = {256 << 10, 8 << 10};
  std::atomic<int> submitted{0};
  std::atomic<bool> failed{false};
  const Status s = runRanks(2, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(oneStream(pool.endpoints()),
                                              {id, 2, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    for (int k = 0; k < 2; ++k) {
      const uint32_t n = counts[k];
      std::vector<float> buf(n);
      for (uint32_t i = 0; i < n; ++i) buf[i] = static_cast<float>(rank + (i + k) % 5);
      if (rank == 1) {
        // Straggle until the reducer has been quiet towards rank 0 for more than the bound,
        // heartbeats aside (each is a third of it), and, once rank 0 awaits its results,
        // rank 0 towards the reducer too.
        const server::DataPlaneStats base = statsOf(pool);
        const bool waited = waitUntil([&] {
          const server::DataPlaneStats now = statsOf(pool);
          const bool reducerBeat = now.heartbeatsSent >= base.heartbeatsSent + 4;
          const bool memberBeat = k == 0 || now.heartbeatsReceived >= base.heartbeatsReceived + 4;
          return failed.load() || (submitted.load() > k && reducerBeat && memberBeat);
        });
        if (!waited) return internalError("no heartbeats while rank 1 straggled");
        if (failed) return Status::ok();
      } else {
        ++submitted;
      }
      Status r = (*comm)->allReduce(buf.data(), buf.data(), n, DataType::kFloat32, ReduceOp::kSum);
      if (!r.isOk()) {
        failed = true;
        return r;
      }
      for (uint32_t i = 0; i < n; ++i)
        if (buf[i] != static_cast<float>(1 + 2 * ((i + k) % 5)))
          return internalError(fmt::format("collective {} element {} wrong", k, i));
    }
    return Status::ok();
  });
  CHECK(s.toString() == "OK");
  const server::DataPlaneStats st = statsOf(pool);
  WARN("heartbeats: " << st.heartbeatsSent << " sent, " << st.heartbeatsReceived << " received");
  CHECK(silentLosses(pool) == 0);
}

TEST_CASE("loss: an idle group is never lost and sends no heartbeats", "[loss]") {
  auto config = testServerConfig();
  config.lossDetectMs = 4000;
  LocalPool pool(1, config);
  const GroupId id = GroupId::random();
  std::atomic<int> done{0};
  std::atomic<bool> idleOver{false};
  server::DataPlaneStats idleStart, idleEnd;
  const Status s = runRanks(2, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(oneStream(pool.endpoints(), 64 << 10),
                                              {id, 2, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    RS_RETURN_IF_ERROR(exactAllReduce(**comm, 2, rank, 16 << 10));
    ++done;
    // Both finished their first collective: idle for two bounds (idleness takes time; what is
    // checked is that nothing happens meanwhile), then a second collective.
    if (rank == 0) {
      if (!waitUntil([&] { return done.load() == 2; })) return internalError("rank 1 hung");
      idleStart = statsOf(pool);
      std::this_thread::sleep_for(std::chrono::milliseconds(2 * config.lossDetectMs));
      idleEnd = statsOf(pool);
      idleOver = true;
    } else if (!waitUntil([&] { return idleOver.load(); })) {
      return internalError("rank 0 hung");
    }
    return exactAllReduce(**comm, 2, rank, 16 << 10);
  });
  CHECK(s.toString() == "OK");
  CHECK(silentLosses(pool) == 0);
  // Nothing owed either way while idle: not one heartbeat.
  CHECK(idleEnd.heartbeatsSent == idleStart.heartbeatsSent);
  CHECK(idleEnd.heartbeatsReceived == idleStart.heartbeatsReceived);
  CHECK(idleEnd.connectionsOpen == 2);
}

TEST_CASE("loss: RS_LOSS_DETECT_MS sets the member's ask: 0 (the reducers') or at least 100",
          "[loss]") {
  client::ClientOptions o;
  o.reducers = {{"127.0.0.1", 1}};
  CHECK(o.lossDetect.count() == 0);
  ::setenv("RS_LOSS_DETECT_MS", "2500", 1);
  REQUIRE(o.applyEnvironment().toString() == "OK");
  CHECK(o.lossDetect == std::chrono::milliseconds(2500));
  CHECK(o.validate().isOk());
  ::setenv("RS_LOSS_DETECT_MS", "50", 1);
  REQUIRE(o.applyEnvironment().toString() == "OK");
  ::unsetenv("RS_LOSS_DETECT_MS");
  CHECK(o.validate().message() ==
        "loss bound (RS_LOSS_DETECT_MS) must be 0 (the reducers') or 100 ms .. 49 days, got 50");
  o.lossDetect = std::chrono::milliseconds(0);
  CHECK(o.validate().isOk());
}

TEST_CASE("loss: each stream's bound is the member's ask capped by --loss-detect-ms, 0 off",
          "[loss]") {
  // The HELLO_ACK a raw member gets for a HELLO asking `askMs`, from a reducer whose flag is
  // `reducerMs`.
  auto agreed = [](uint32_t reducerMs, uint32_t askMs) {
    auto config = testServerConfig();
    config.lossDetectMs = reducerMs;
    LocalPool pool(1, config);
    asio::io_context io;
    asio::ip::tcp::socket s = rawSocket(io, pool.reducer(0).dataPort());
    const wire::ChallengePayload challenge = readChallenge(s);
    wire::HelloPayload hello;
    hello.worldSize = 1;
    hello.streamCount = 1;
    hello.reducerCount = 1;
    hello.lossDetectMs = askMs;
    auto frame = wire::helloFrame(GroupId::random(), 0, hello, {}, challenge.nonce);
    REQUIRE(frame.isOk());
    asio::write(s, asio::buffer(frame->header));
    asio::write(s, asio::buffer(frame->payload));
    const wire::FrameHeader h = readFrameHeader(s);
    REQUIRE(h.type == wire::FrameType::kHelloAck);
    std::array<uint8_t, wire::kHelloAckPayloadSize> bytes;
    asio::read(s, asio::buffer(bytes));
    wire::HelloAckPayload ack;
    REQUIRE(wire::decodeHelloAck(bytes.data(), bytes.size(), &ack).toString() == "OK");
    return ack.lossDetectMs;
  };
  CHECK(agreed(3000, 0) == 3000);      // no ask: the reducer's
  CHECK(agreed(3000, 1000) == 1000);   // a shorter ask stands
  CHECK(agreed(3000, 60000) == 3000);  // a longer one is capped
  CHECK(agreed(0, 1000) == 0);         // off on the reducer: off
}

TEST_CASE("loss: a member refuses a HEARTBEAT that names another member", "[loss]") {
  // Takes the chunk, then a HEARTBEAT for rank 3 of the group where the member is rank 0: a
  // protocol error, as a RESULT naming it would be, never a sign of life.
  FakeReducer fake = chunkTakingReducer(
      4000, [](FakeReducer::Socket& s, const wire::FrameHeader& reduce, std::vector<uint8_t>&) {
        const wire::HeaderBytes beat = wire::heartbeatFrame(reduce.group, 3);
        writeBytes(s, beat.data(), beat.size());
        readUntilClosed(s);
      });
  const GroupId id = GroupId::random();
  auto comm = client::Communicator::connect(oneStream({fake.endpoint()}), {id, 1, 0});
  REQUIRE(comm.status().toString() == "OK");
  std::vector<float> buf(1000, 1.0f);
  const Status s = (*comm)->allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                                      ReduceOp::kSum);
  CHECK_FALSE(s.isOk());
  CHECK_THAT(s.message(), Contains("HEARTBEAT for group " + id.toString() + " rank 3"));
}

TEST_CASE("loss: the reducer reads a member's HEARTBEAT between frames, and refuses one that "
          "names another member",
          "[loss]") {
  LogCapture log;
  LocalPool pool(1);
  asio::io_context io;
  const GroupId id = GroupId::random();
  RawMember m(io, pool.reducer(0).dataPort(), id, 1, 0);
  asio::write(m.socket(), asio::buffer(wire::heartbeatFrame(id, 0)));
  REQUIRE(waitUntil([&] { return statsOf(pool).heartbeatsReceived == 1; }));
  // A chunk after it is reduced as ever (a group of one: the result is the contribution).
  m.sendHeader(16);
  m.sendElements(0, 16);
  wire::FrameHeader h = readFrameHeader(m.socket());
  REQUIRE(h.type == wire::FrameType::kResult);
  std::vector<float> values(h.elemCount);
  asio::read(m.socket(), asio::buffer(values));
  for (uint32_t i = 0; i < h.elemCount; ++i) CHECK(values[i] == static_cast<float>(i));

  // Another rank's HEARTBEAT: a protocol error, as a REDUCE naming it would be. The stream
  // closes (a refused frame gets no reply) and the group fails.
  asio::write(m.socket(), asio::buffer(wire::heartbeatFrame(id, 3)));
  std::array<uint8_t, 1> byte;
  std::error_code ec;
  asio::read(m.socket(), asio::buffer(byte), ec);
  CHECK(ec == asio::error::eof);
  CHECK(statsOf(pool).framesRejected[static_cast<size_t>(server::FrameRejection::kWrongMember)] ==
        1);
  CHECK(log.contains("HEARTBEAT names group " + id.toString() + " rank 3, but this stream "
                     "joined as"));
}

}  // namespace rs::test
