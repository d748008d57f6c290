// A survivor's side of failover (proto/FAILOVER.md, proto/WIRE.md "Failover") against raw
// members on real loopback sockets: lanes join a group under a dead set; the survivor waits for
// every member's FAILOVER, drops the entries below the agreed point and commits them; it
// resolves each resent chunk from every member's entry (final prefix and contribution, or
// COMMITTED), or cuts through one whose every entry is a whole REDUCE, sends the result only to
// the members that lack it, and commits on the lane; a FAILOVER naming a reducer it did not
// know lost makes it tell every member (LOST), and the lanes of an older dead set are retired
// with LOST.
#include <catch2/catch.hpp>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/transport/link_share.h"
#include "core/wire/failover_frames.h"
#include "tests/support/local_pool.h"
#include "tests/support/raw_member.h"
#include "tests/support/wait_until.h"

namespace rs::test {
namespace {

// A member's connection to one reducer of an R-reducer list with one stream each: a normal
// stream (`lane` unset) or a lane, spoken frame by frame.
class RawLink {
 public:
  RawLink(asio::io_context& io, uint16_t port, const GroupId& group, uint32_t world,
          uint32_t rank, uint32_t reducer, uint32_t reducers, uint16_t streamIndex = 0,
          bool lane = false, uint32_t lossDetectMs = 0)
      : socket_(rawSocket(io, port)), group_(group), rank_(rank) {
    const wire::ChallengePayload challenge = readChallenge(socket_);
    wire::HelloPayload hello;
    hello.worldSize = world;
    hello.streamIndex = streamIndex;
    hello.streamCount = 1;
    hello.reducerIndex = static_cast<uint16_t>(reducer);
    hello.reducerCount = static_cast<uint16_t>(reducers);
    hello.lossDetectMs = lossDetectMs;
    auto made = wire::helloFrame(group, rank, hello, {}, challenge.nonce,
                                 lane ? wire::kFlagLane : uint16_t{0});
    REQUIRE(made.isOk());
    asio::write(socket_, asio::buffer(made->header));
    asio::write(socket_, asio::buffer(made->payload));
    expectHelloAck(socket_);
  }

  void failover(const std::vector<uint32_t>& dead, uint64_t watermark, uint64_t generation = 0) {
    auto frame = wire::failoverFrame(group_, rank_, watermark, dead, generation);
    REQUIRE(frame.isOk());
    asio::write(socket_, asio::buffer(frame->header));
    asio::write(socket_, asio::buffer(frame->payload));
  }
  // Chunk `chunk`'s fp32 fields: `count` elements at offset 0 of collective seq = chunk.
  static constexpr uint32_t kCount = 8;
  wire::ChunkFields fields(uint64_t chunk, uint32_t count = kCount) const {
    return {.group = group_,
            .rank = rank_,
            .seq = chunk,
            .chunk = chunk,
            .elemOffset = 0,
            .elemCount = count,
            .dtype = DataType::kFloat32,
            .op = ReduceOp::kSum};
  }
  // An entry of a chunk of `count` elements: [0, prefix) final (finalValue), the rest this
  // member's contribution (contribution(rank, i)); a plain REDUCE when prefix is 0.
  void entry(uint64_t chunk, uint32_t prefix, uint32_t count = kCount) {
    std::vector<float> values(count);
    for (uint32_t i = 0; i < count; ++i)
      values[i] = i < prefix ? finalValue(i) : contribution(rank_, i);
    if (prefix > 0) {
      const wire::FrameHeader final = wire::finalHeader(fields(chunk, count), prefix);
      asio::write(socket_, asio::buffer(wire::encodeHeader(final)));
      asio::write(socket_, asio::buffer(values.data(), prefix * sizeof(float)));
      if (prefix == count) return;
      asio::write(socket_, asio::buffer(wire::encodeHeader(wire::remainderHeader(final))));
    } else {
      asio::write(socket_,
                  asio::buffer(wire::encodeHeader(wire::reduceHeader(fields(chunk, count)))));
    }
    asio::write(socket_, asio::buffer(values.data() + prefix, (count - prefix) * sizeof(float)));
  }
  // Elements [from, to) of a plain REDUCE entry of a chunk of `count` elements, its header
  // first when `from` is 0: an entry sent in pieces, or half of it and then held.
  void reducePiece(uint64_t chunk, uint32_t count, uint32_t from, uint32_t to) {
    if (from == 0)
      asio::write(socket_,
                  asio::buffer(wire::encodeHeader(wire::reduceHeader(fields(chunk, count)))));
    std::vector<float> values(to - from);
    for (uint32_t i = from; i < to; ++i) values[i - from] = contribution(rank_, i);
    asio::write(socket_, asio::buffer(values));
  }
  // A plain REDUCE entry of `count` elements (not kCount) for chunk: its header first, then
  // its payload, which the survivor may stop reading.
  void largeEntry(uint64_t chunk, uint32_t count) {
    wire::ChunkFields f = fields(chunk);
    f.elemCount = count;
    asio::write(socket_, asio::buffer(wire::encodeHeader(wire::reduceHeader(f))));
    std::vector<float> values(count, contribution(rank_, 0));
    std::error_code ignored;
    asio::write(socket_, asio::buffer(values), ignored);
  }
  // The FINAL of chunk's first `prefix` elements cut short: its header and `bytes` of its
  // payload only.
  void partialFinal(uint64_t chunk, uint32_t prefix, size_t bytes) {
    std::vector<float> values(prefix, finalValue(0));
    asio::write(socket_, asio::buffer(wire::encodeHeader(wire::finalHeader(fields(chunk), prefix))));
    asio::write(socket_, asio::buffer(values.data(), bytes));
  }
  // Ends a read blocked on the socket on another thread (it throws), keeping the descriptor.
  void shutdown() { ::shutdown(socket_.native_handle(), SHUT_RDWR); }
  // Closes cleanly (FIN), as a member that adopted a larger dead set closes its lanes.
  void close() { socket_.close(); }
  // Closes with an RST (SO_LINGER 0), as a close with unread input does.
  void reset() {
    socket_.set_option(asio::socket_base::linger(true, 0));
    socket_.close();
  }
  void committed(uint64_t chunk) {
    asio::write(socket_, asio::buffer(wire::encodeHeader(wire::committedHeader(fields(chunk)))));
  }
  void received(uint64_t chunk) {
    asio::write(socket_,
                asio::buffer(wire::encodeHeader(wire::receivedHeader(group_, rank_, chunk))));
  }

  wire::FrameHeader next() { return readFrameHeader(socket_); }
  // The next frame's type, read on a thread of its own so that a survivor that sends nothing
  // fails the test at the state deadline instead of hanging it; none when nothing came.
  std::optional<wire::FrameType> nextTypeBy() {
    return readBy<wire::FrameType>([&] { return next().type; });
  }
  // The next frame's reason if it is an ABORT, read as nextTypeBy reads; none when nothing or
  // another frame came.
  std::optional<std::string> abortBy() {
    return readBy<std::string>([&]() -> std::string {
      const wire::FrameHeader h = next();
      if (h.type != wire::FrameType::kAbort)
        throw std::runtime_error(std::string(wire::frameTypeName(h.type)));
      std::string reason(h.payloadLength, '\0');
      asio::read(socket_, asio::buffer(reason));
      return reason;
    });
  }
  // The next frame but HEARTBEATs, read on a thread of its own (as nextTypeBy): none when
  // nothing came by the state deadline; when it is a RESULT, its payload is appended to
  // `values`.
  std::optional<wire::FrameHeader> nextPartBy(std::vector<float>* values) {
    return readBy<wire::FrameHeader>([&] {
      wire::FrameHeader h = next();
      while (h.type == wire::FrameType::kHeartbeat) h = next();
      if (h.type == wire::FrameType::kResult) {
        std::vector<float> got(h.elemCount);
        asio::read(socket_, asio::buffer(got));
        values->insert(values->end(), got.begin(), got.end());
      }
      return h;
    });
  }
  // RESULT parts of `chunk`, front to back, appended to `values` until it holds `upTo`
  // elements or more; false (with the reason logged) if anything else came, or nothing.
  bool readPartsUpTo(uint64_t chunk, size_t upTo, std::vector<float>* values) {
    while (values->size() < upTo) {
      const size_t at = values->size();
      const std::optional<wire::FrameHeader> h = nextPartBy(values);
      if (!h || h->type != wire::FrameType::kResult || h->chunk != chunk ||
          h->elemOffset != at) {
        UNSCOPED_INFO("rank " << rank_ << " at element " << at << " of chunk " << chunk << ": "
                              << (h ? wire::frameTypeName(h->type) : "nothing") << " for chunk "
                              << (h ? h->chunk : 0) << " at " << (h ? h->elemOffset : 0));
        return false;
      }
    }
    return true;
  }
  // The next frame, a LOST, and its dead set.
  std::vector<uint32_t> readLost() {
    const wire::FrameHeader h = next();
    INFO("frame type " << wire::frameTypeName(h.type));
    REQUIRE(h.type == wire::FrameType::kLost);
    CHECK(h.rank == rank_);
    lostGeneration = h.seq;
    std::vector<uint8_t> payload(h.payloadLength);
    asio::read(socket_, asio::buffer(payload));
    std::vector<uint32_t> dead;
    REQUIRE(wire::decodeDeadSet(payload.data(), payload.size(), &dead).isOk());
    return dead;
  }
  // The next frame, an ABORT, and its reason.
  std::string readAbort() {
    const wire::FrameHeader h = next();
    INFO("frame type " << wire::frameTypeName(h.type));
    REQUIRE(h.type == wire::FrameType::kAbort);
    std::string reason(h.payloadLength, '\0');
    asio::read(socket_, asio::buffer(reason));
    return reason;
  }
  uint64_t readCommit() {
    const wire::FrameHeader h = next();
    INFO("frame type " << wire::frameTypeName(h.type));
    REQUIRE(h.type == wire::FrameType::kCommit);
    return h.chunk;
  }
  // The next frame but HEARTBEATs, a whole chunk's RESULT (one part), and its values.
  std::vector<float> readResult(uint64_t chunk) {
    wire::FrameHeader h = next();
    while (h.type == wire::FrameType::kHeartbeat) h = next();
    INFO("frame type " << wire::frameTypeName(h.type));
    REQUIRE(h.type == wire::FrameType::kResult);
    CHECK(h.chunk == chunk);
    CHECK(h.elemOffset == 0);
    REQUIRE(h.elemCount == kCount);
    std::vector<float> values(kCount);
    asio::read(socket_, asio::buffer(values));
    return values;
  }
  // Reads until the reducer closes; true when it did (and nothing but `allowed` came first).
  bool closedAfterNothing() {
    std::vector<uint8_t> sink(256);
    std::error_code ec;
    const size_t n = socket_.read_some(asio::buffer(sink), ec);
    return n == 0 && ec == asio::error::eof;
  }

  uint64_t lostGeneration = 0;  // of the last LOST read (its seq)

  static float finalValue(uint32_t i) { return 1000.0f + static_cast<float>(i); }
  // The result of a chunk of `count` elements whose entries from ranks 0 and 1 had no final
  // prefix.
  static std::vector<float> sumOfBoth(uint32_t count = kCount) {
    std::vector<float> sum(count);
    for (uint32_t i = 0; i < count; ++i) sum[i] = contribution(0, i) + contribution(1, i);
    return sum;
  }
  static float contribution(uint32_t rank, uint32_t i) {
    return static_cast<float>(10 * rank + i);
  }

 private:
  // read() on a thread of its own, the socket shut down at the state deadline; none when it
  // threw (nothing came, or not what read() wanted).
  template <typename T, typename Read>
  std::optional<T> readBy(Read read) {
    std::atomic<bool> done{false};
    std::optional<T> value;
    std::thread reader([&] {
      try {
        value = read();
      } catch (const std::exception&) {
      }
      done = true;
    });
    if (!waitUntil([&] { return done.load(); })) shutdown();
    reader.join();
    return value;
  }

  asio::ip::tcp::socket socket_;
  GroupId group_;
  uint32_t rank_;
};

// Reducer 0 of `reducers`, the only one running (the others are lost: never dialled), and two
// members' streams to it; their lanes are each test's.
struct Survivor {
  explicit Survivor(uint32_t reducers, const server::ServerConfig& config = testServerConfig())
      : reducers(reducers), pool(1, config) {}
  const uint32_t reducers;
  LocalPool pool;
  const uint16_t port = pool.endpoints()[0].port;
  asio::io_context io;
  const GroupId group = GroupId::random();
  RawLink stream0{io, port, group, 2, 0, 0, reducers};
  RawLink stream1{io, port, group, 2, 1, 0, reducers};
  // Rank `rank`'s lane at `index`, asking for the loss bound `lossDetectMs` (0: the reducer's).
  // Of two reducers, lane 1 (K + 0 x K + 0) carries reducer 1's chunks, the odd ones (c mod 2 =
  // 1).
  RawLink lane(uint32_t rank, uint16_t index, uint32_t lossDetectMs = 0) {
    return RawLink(io, port, group, 2, rank, 0, reducers, index, /*lane=*/true, lossDetectMs);
  }
  // Both members read LOST with `dead` (of `generation`) on their streams.
  void expectLost(const std::vector<uint32_t>& dead, uint64_t generation = 0) {
    CHECK(stream0.readLost() == dead);
    CHECK(stream1.readLost() == dead);
    CHECK(stream0.lostGeneration == generation);
    CHECK(stream1.lostGeneration == generation);
  }
};

// Of two reducers, reducer 1 lost, on lanes 1 of both members: rank 0 saw nothing of its chunks
// committed (its watermark is chunk 1), rank 1 saw chunk 1 committed (3): the agreed point is
// chunk 3, and chunk 1 is dropped and committed. The first FAILOVER named a reducer the survivor
// did not know lost: every member hears it.
void agreeAtChunk3(Survivor& s, RawLink& lane0, RawLink& lane1) {
  lane0.failover({1}, 1);
  s.expectLost({1});
  lane1.failover({1}, 3);
  CHECK(lane0.readCommit() == 1);
  CHECK(lane1.readCommit() == 1);
}

// Both members' FAILOVER on their lanes of one index under `dead`, at `watermark`: rank 0's
// names a loss the survivor did not know, and every member hears LOST before rank 1's goes.
void failoverBoth(Survivor& s, RawLink& lane0, RawLink& lane1, const std::vector<uint32_t>& dead,
                  uint64_t watermark) {
  lane0.failover(dead, watermark);
  s.expectLost(dead);
  lane1.failover(dead, watermark);
}

// Of two reducers, reducer 1 lost, on lanes 1 of both members, each with its watermark at
// chunk 1: nothing is dropped. Its chunk 1 is of kLargeCount fp32 (64 KiB: a RESULT part is a
// sixteenth of it, cut_through.h).
struct AgreedAtChunk1 {
  static constexpr uint32_t kLargeCount = 16384;
  AgreedAtChunk1() { failoverBoth(s, lane0, lane1, {1}, 1); }
  Survivor s{2};
  RawLink lane0 = s.lane(0, 1);
  RawLink lane1 = s.lane(1, 1);
};

// Both members acknowledge `chunk` on their lanes, and the survivor commits it to both.
void acknowledgeBoth(RawLink& lane0, RawLink& lane1, uint64_t chunk) {
  lane0.received(chunk);
  lane1.received(chunk);
  CHECK(lane0.readCommit() == chunk);
  CHECK(lane1.readCommit() == chunk);
}

// A survivor on one io thread with a quota of one slot a group: a second chunk parks.
server::ServerConfig oneSlotAGroup() {
  server::ServerConfig config = testServerConfig();
  config.ioThreads = 1;
  config.maxSlotsPerGroup = 1;
  return config;
}

}  // namespace

TEST_CASE("a survivor resolves a lost reducer's chunks from every member's entry on a lane, "
          "after the agreed point, and commits them there",
          "[failover]") {
  Survivor s(2);
  RawLink lane0 = s.lane(0, 1);
  RawLink lane1 = s.lane(1, 1);
  agreeAtChunk3(s, lane0, lane1);

  lane0.entry(1, RawLink::kCount);  // below the agreed point: read and dropped
  lane0.entry(3, 3);                // rank 0 had 3 elements of chunk 3's result
  lane1.entry(3, 5);                // rank 1 had 5
  lane0.entry(5, 0);                // chunk 5: nobody had any of it
  lane1.entry(5, 0);
  // Chunk 3: [0, 5) the longest prefix's bits, [5, 8) the sum of both contributions; to both.
  std::vector<float> expected(RawLink::kCount);
  for (uint32_t i = 0; i < RawLink::kCount; ++i)
    expected[i] = i < 5 ? RawLink::finalValue(i)
                        : RawLink::contribution(0, i) + RawLink::contribution(1, i);
  CHECK(lane0.readResult(3) == expected);
  CHECK(lane1.readResult(3) == expected);
  CHECK(lane0.readResult(5) == RawLink::sumOfBoth());
  CHECK(lane1.readResult(5) == RawLink::sumOfBoth());
  // Each acknowledges both (rank 0 its dropped chunk 1 as well, which it held whole).
  acknowledgeBoth(lane0, lane1, 5);
}

TEST_CASE("a lane's moved chunk whose every entry is a whole REDUCE cuts through: its result "
          "parts go out to every member before every member's whole entry is in, exact",
          "[failover]") {
  // Every entry of chunk 1 a plain REDUCE, as every chunk of the collectives after the one a
  // loss hit is. Rank 0 sends its whole entry, rank 1 its header and the first half, and holds.
  // Resolved whole, the result would wait for rank 1's second half (proto/FAILOVER.md, "What it
  // costs").
  AgreedAtChunk1 agreed;
  constexpr uint32_t kLarge = AgreedAtChunk1::kLargeCount;
  RawLink& lane0 = agreed.lane0;
  RawLink& lane1 = agreed.lane1;
  lane0.reducePiece(1, kLarge, 0, kLarge);
  lane1.reducePiece(1, kLarge, 0, kLarge / 2);
  // Both members read a first part of the result while rank 1 holds, within its first half.
  std::vector<float> got0, got1;
  REQUIRE(lane0.readPartsUpTo(1, 1, &got0));
  REQUIRE(lane1.readPartsUpTo(1, 1, &got1));
  CHECK(got0.size() <= kLarge / 2);
  CHECK(got1.size() <= kLarge / 2);
  lane1.reducePiece(1, kLarge, kLarge / 2, kLarge);
  REQUIRE(lane0.readPartsUpTo(1, kLarge, &got0));
  REQUIRE(lane1.readPartsUpTo(1, kLarge, &got1));
  CHECK(got0 == RawLink::sumOfBoth(kLarge));
  CHECK(got1 == RawLink::sumOfBoth(kLarge));
  acknowledgeBoth(lane0, lane1, 1);
}

TEST_CASE("a lane's moved chunk with a final prefix among its entries is resolved whole: one "
          "RESULT of the whole chunk once every entry is in, even after another's whole REDUCE",
          "[failover]") {
  // Rank 0's entry, a plain REDUCE, comes first and whole; rank 1 had a quarter of the result
  // (the collective the loss hit). [0, r*) must be rank 1's final bits, never a sum of them:
  // the chunk is resolved from every entry (proto/FAILOVER.md, "Resolving a resent chunk").
  AgreedAtChunk1 agreed;
  constexpr uint32_t kLarge = AgreedAtChunk1::kLargeCount;
  agreed.lane0.entry(1, 0, kLarge);
  agreed.lane1.entry(1, kLarge / 4, kLarge);
  std::vector<float> expected = RawLink::sumOfBoth(kLarge);
  for (uint32_t i = 0; i < kLarge / 4; ++i) expected[i] = RawLink::finalValue(i);
  for (RawLink* lane : {&agreed.lane0, &agreed.lane1}) {
    std::vector<float> got;
    const std::optional<wire::FrameHeader> h = lane->nextPartBy(&got);
    REQUIRE(h);
    REQUIRE(h->type == wire::FrameType::kResult);
    CHECK(h->elemOffset == 0);
    CHECK(h->elemCount == kLarge);  // one part: resolved whole
    CHECK(got == expected);
  }
}

TEST_CASE("a survivor's lane is paced with its streams: the result it owes counts on the host's "
          "link from the entry until it is written",
          "[failover][pacing]") {
  // A rate of this test's own, so that the reducer's LinkShare (one per rate in a process) is
  // the one held here. Lanes were never busy: unpaced beside the paced streams, their bursts
  // overflowed the survivor's link after a loss (bench/RESULTS.md, "The rate after a loss").
  server::ServerConfig config = testServerConfig();
  config.linkGbps = 0.0777;
  const std::shared_ptr<transport::LinkShare> link = transport::LinkShare::forProcess(
      transport::LinkShare::bytesPerSecondFromGbps(config.linkGbps));
  Survivor s(2, config);
  RawLink lane0 = s.lane(0, 1);
  RawLink lane1 = s.lane(1, 1);
  agreeAtChunk3(s, lane0, lane1);

  // Rank 0's entry of chunk 3 is in, rank 1's not: the survivor owes rank 0 the whole chunk.
  const uint64_t chunkBytes = RawLink::kCount * sizeof(float);
  lane0.entry(3, 2);
  CHECK(waitUntil([&] { return link->busyStreams() == 1; }));
  CHECK(link->bytesUnderWay() == chunkBytes);
  lane1.entry(3, 0);
  // Both results written: nothing under way, nothing busy.
  lane0.readResult(3);
  lane1.readResult(3);
  CHECK(waitUntil([&] { return link->busyStreams() == 0 && link->bytesUnderWay() == 0; }));
}

TEST_CASE("a survivor sends no result to a member whose entry was whole, and commits a chunk "
          "that every member holds without sending anything",
          "[failover]") {
  Survivor s(2);
  RawLink& stream0 = s.stream0;
  RawLink& stream1 = s.stream1;
  RawLink lane0 = s.lane(0, 1);
  RawLink lane1 = s.lane(1, 1);
  lane0.failover({1}, 1);
  lane1.failover({1}, 1);
  CHECK(stream0.readLost() == std::vector<uint32_t>{1});
  CHECK(stream1.readLost() == std::vector<uint32_t>{1});
  // Chunk 1: rank 0 had all of it, rank 1 part: only rank 1 gets the result. Chunk 3: rank 0
  // saw it committed (a later chunk of another lane, after a second loss), rank 1 holds it
  // whole: nobody gets anything, and it is committed once both acknowledge.
  lane0.entry(1, RawLink::kCount);
  lane1.entry(1, 2);
  lane0.committed(3);
  lane1.entry(3, RawLink::kCount);
  std::vector<float> expected(RawLink::kCount);
  for (uint32_t i = 0; i < RawLink::kCount; ++i) expected[i] = RawLink::finalValue(i);
  CHECK(lane1.readResult(1) == expected);
  // Chunk 3's entries were whole, held as sent: the first each reads after it acknowledges is
  // the COMMIT (no RESULT came before it).
  acknowledgeBoth(lane0, lane1, 3);
}

TEST_CASE("a survivor that learns a larger dead set tells every member, retires the lanes of the "
          "smaller one with LOST, and answers a FAILOVER under it with LOST",
          "[failover]") {
  // Reducers 0, 1, 2; the survivor is reducer 0. Rank 0 opens its lane for reducer 1 under
  // {1} (index 1); rank 1 has learned of reducer 2's loss too and opens under {1, 2}.
  Survivor s(3);
  RawLink lane0 = s.lane(0, 1);
  lane0.failover({1}, 1);
  s.expectLost({1});
  RawLink lane1 = s.lane(1, 1);
  lane1.failover({1, 2}, 1);
  s.expectLost({1, 2});
  // Rank 0's lane under {1} is retired: LOST with the group's dead set, then its end.
  CHECK(lane0.readLost() == std::vector<uint32_t>{1, 2});
  CHECK(lane0.closedAfterNothing());
  // A late FAILOVER under {1} gets the same answer.
  RawLink late = s.lane(0, 1);
  late.failover({1}, 1);
  CHECK(late.readLost() == std::vector<uint32_t>{1, 2});
  CHECK(late.closedAfterNothing());
}

TEST_CASE("a dead set of a newer generation replaces the survivor's, smaller or not: its older "
          "lanes are retired, and a FAILOVER of the older generation is stale",
          "[failover][rejoin]") {
  // Reducers 0, 1, 2; the survivor is reducer 0. Reducers 1 and 2 were lost (generation 0);
  // then reducer 1 was taken back (generation 1) and reducer 2 is still lost. A union would
  // put reducer 1 back into the set: generations keep it out (proto/FAILOVER.md, "A reducer
  // comes back").
  Survivor s(3);
  RawLink old = s.lane(0, 1);  // reducer 1's stream 0 under {1, 2}: index 1 + 0
  old.failover({1, 2}, 1);
  s.expectLost({1, 2}, 0);
  RawLink fresh = s.lane(1, 1);  // reducer 2's stream 0 under {2}: index 1 + 0
  fresh.failover({2}, 2, /*generation=*/1);
  s.expectLost({2}, 1);
  // The lane of generation 0 is retired with the newer set, then ends.
  CHECK(old.readLost() == std::vector<uint32_t>{2});
  CHECK(old.lostGeneration == 1);
  CHECK(old.closedAfterNothing());
  // A stale FAILOVER (generation 0, naming reducer 1 lost) changes nothing: the same answer.
  RawLink stale = s.lane(0, 1);
  stale.failover({1}, 1, 0);
  CHECK(stale.readLost() == std::vector<uint32_t>{2});
  CHECK(stale.lostGeneration == 1);
  CHECK(stale.closedAfterNothing());
}

TEST_CASE("a member that closes a lane of the smaller dead set before the survivor learns the "
          "larger one fails nothing: the lanes under the larger one carry the chunks",
          "[failover]") {
  // Reducers 0, 1, 2; the survivor is reducer 0, which under {1} owns reducer 1's chunks 4,
  // 10, ... (probe 0 of chunk 1 + 3t is reducer (2 + t mod 2) mod 3), on lane 1. A second loss
  // (reducer 2) mid-run: rank 0 closes its lane under {1} in one of the ways a lane can end,
  // before any FAILOVER under {1, 2} reached the survivor.
  const std::string how = GENERATE(as<std::string>{}, "waiting for the agreed point",
                                   "inside an entry", "reset after an entry");
  INFO(how);
  Survivor s(3);
  RawLink old0 = s.lane(0, 1);
  old0.failover({1}, 1);
  s.expectLost({1});
  std::optional<RawLink> old1;
  if (how == "waiting for the agreed point") {
    old0.close();  // rank 1's FAILOVER never came: rank 0's lane waits for it
  } else {
    old1.emplace(s.lane(1, 1));
    old1->failover({1}, 1);
    if (how == "inside an entry") {
      old0.partialFinal(4, 3, 5);  // 5 of its 12 bytes
      old0.close();
    } else {
      old0.entry(4, 0);
      old0.reset();
    }
  }
  // Both members open their lanes under {1, 2}: (1, 0) at index 1, (2, 0) at index 2.
  RawLink new0a = s.lane(0, 1);
  RawLink new0b = s.lane(0, 2);
  RawLink new1a = s.lane(1, 1);
  RawLink new1b = s.lane(1, 2);
  new0a.failover({1, 2}, 1);
  s.expectLost({1, 2});
  if (old1) {  // retired: LOST with the group's dead set, then its end
    CHECK(old1->readLost() == std::vector<uint32_t>{1, 2});
    CHECK(old1->closedAfterNothing());
  }
  new0b.failover({1, 2}, 2);
  new1a.failover({1, 2}, 1);
  new1b.failover({1, 2}, 2);
  new0a.entry(4, 0);
  new1a.entry(4, 0);
  const std::vector<float> expected = RawLink::sumOfBoth();
  CHECK(new0a.readResult(4) == expected);
  CHECK(new1a.readResult(4) == expected);
  acknowledgeBoth(new0a, new1a, 4);
}

TEST_CASE("a member gone from a survivor while only a lane's chunk there waits for its entry "
          "fails the group at once, whichever of its lane and its stream ends first",
          "[failover]") {
  // Of two reducers, reducer 1 lost; rank 1's entry of chunk 3 opens its slot on lane 1, and
  // rank 0 dies before sending its own: its host ends its lane and its stream here. A lane's end
  // alone is no error (a member closes its lanes under a smaller dead set when it adopts a
  // larger one, keeping its streams: the test above); with its streams here ended too, the
  // member has left, and the chunk can never complete. Nothing else is open here, so before
  // this was checked the group waited for the collective timeout.
  const std::string how = GENERATE(as<std::string>{}, "its lane ends first",
                                   "its stream ends first", "both end before the chunk's entry");
  INFO(how);
  Survivor s(2);
  auto& plane = s.pool.reducer(0).dataPlane();
  RawLink lane0 = s.lane(0, 1);
  RawLink lane1 = s.lane(1, 1);
  agreeAtChunk3(s, lane0, lane1);
  REQUIRE(plane.stats().connectionsOpen == 4);
  if (how == "both end before the chunk's entry") {
    lane0.close();
    s.stream0.close();
    REQUIRE(waitUntil([&] { return plane.stats().connectionsOpen == 2; }));
    lane1.entry(3, 0);
  } else {
    lane1.entry(3, 0);
    REQUIRE(waitUntil([&] { return plane.stats().slotsOpen == 1; }));
    RawLink& first = how == "its lane ends first" ? lane0 : s.stream0;
    RawLink& second = how == "its lane ends first" ? s.stream0 : lane0;
    first.close();
    REQUIRE(waitUntil([&] { return plane.stats().connectionsOpen == 3; }));
    second.close();
  }
  const std::optional<std::string> reason = s.stream1.abortBy();
  REQUIRE(reason.has_value());
  CHECK_THAT(*reason, Catch::Matchers::Contains("rank 0 left this reducer"));
  CHECK_THAT(*reason, Catch::Matchers::Contains("chunk 3"));
}

TEST_CASE("a survivor drops the slot requests a retired lane left parked: no slot opens for "
          "them, and the lanes under the larger dead set reduce their chunks",
          "[failover]") {
  // Reducers 0, 1, 2, the survivor reducer 0 on one thread with a quota of one slot a group.
  // Under {1} rank 0 sends chunks 4 and 10 on its lane: 4 takes the slot (rank 1's entry never
  // comes), 10 parks on the quota. Reducer 2 is lost too: the lanes under {1} are retired with
  // chunk 4's slot. Rank 0's retired lane still closes (its LOST goes out first), and its
  // parked request for chunk 10 must not be granted the slot that chunk 4's freed: it would
  // open a slot under the retired lane that nothing fills, holding the quota until the
  // collective timeout.
  Survivor s(3, oneSlotAGroup());
  auto& plane = s.pool.reducer(0).dataPlane();
  RawLink old0 = s.lane(0, 1);
  RawLink old1 = s.lane(1, 1);
  failoverBoth(s, old0, old1, {1}, 1);
  old0.entry(4, 0);
  old0.entry(10, 0);
  REQUIRE(waitUntil([&] { return plane.stats().parkedSessions == 1; }));

  RawLink new0 = s.lane(0, 1);  // lane (1, 0) under {1, 2}: index 1
  RawLink new1 = s.lane(1, 1);
  new0.failover({1, 2}, 1);
  s.expectLost({1, 2});
  CHECK(old1.readLost() == std::vector<uint32_t>{1, 2});
  // The retired lane's request is dropped, not granted.
  REQUIRE(waitUntil([&] { return plane.stats().parkedSessions == 0; }));
  REQUIRE(plane.stats().slotsOpen == 0);

  new1.failover({1, 2}, 1);
  const std::vector<float> expected = RawLink::sumOfBoth();
  for (uint64_t chunk : {4, 10}) {
    new0.entry(chunk, 0);
    new1.entry(chunk, 0);
    CHECK(new0.readResult(chunk) == expected);
    CHECK(new1.readResult(chunk) == expected);
  }
}

TEST_CASE("a lane chunk whose staging copies exceed the thread's pool fails the group with an "
          "error that says it is a failover lane's chunk",
          "[failover]") {
  // A lane's slot stages every member's entry to resolve the chunk (core/failover/
  // resent_chunk.h), as a deterministic group's does: at W = 2, two copies of a 16 KiB chunk,
  // more than a 32 KiB pool less its bookkeeping, where a normal chunk's accumulator fits.
  server::ServerConfig config = testServerConfig();
  config.ioThreads = 1;
  config.maxChunkBytes = 16 << 10;
  config.memoryLimitBytes = 32 << 10;
  Survivor s(3, config);
  RawLink lane0 = s.lane(0, 1);
  RawLink lane1 = s.lane(1, 1);
  failoverBoth(s, lane0, lane1, {1}, 1);
  lane0.largeEntry(4, 4096);
  const std::string reason = s.stream1.readAbort();
  CHECK_THAT(reason, Catch::Matchers::Contains("chunk 4 needs 32768 bytes (a failover lane's "
                                               "chunk: a staging copy per member"));
  CHECK_THAT(reason, Catch::Matchers::Contains("more than this thread's whole pool"));
}

TEST_CASE("a lane waiting for its agreed point sends HEARTBEATs, so that its member does not "
          "take the survivor for lost while another member's FAILOVER is slow to come",
          "[failover]") {
  // The loss bound is 200 ms; rank 0's FAILOVER is in, rank 1's never comes. The survivor owes
  // rank 0 the lane's agreed point (its entries wait for it), and a member whose lane has an
  // entry waiting for its result declares a survivor silent past the bound lost.
  server::ServerConfig config = testServerConfig();
  config.lossDetectMs = 200;
  Survivor s(3, config);
  RawLink lane0 = s.lane(0, 1);
  lane0.failover({1}, 1);
  s.expectLost({1});
  lane0.entry(4, 0);
  const std::optional<wire::FrameType> type = lane0.nextTypeBy();
  REQUIRE(type.has_value());
  CHECK(*type == wire::FrameType::kHeartbeat);
}

TEST_CASE("a lane whose entry waits for a slot sends HEARTBEATs, so that its member does not "
          "take the survivor for lost while the slot is held for another member's entry",
          "[failover]") {
  // Reducers 0, 1, 2; the survivor is reducer 0, with reducers 1 and 2 lost, on one thread with
  // a quota of one slot a group. Rank 1's entry for chunk 1 (lane 1: reducer 1's stream 0)
  // opens the group's one slot, which waits for rank 0's entry of chunk 1, not sent yet. Rank
  // 0's entry for chunk 2 (lane 2: reducer 2's stream 0) is parked on the quota: its only
  // entry on that lane, whose result it awaits. The survivor owes it that result from the
  // entry's header on, as a stream's chunk that waits for a slot. That lane's loss bound is
  // 200 ms; the others keep the hang guard's, as these raw members send no HEARTBEATs of their
  // own.
  Survivor s(3, oneSlotAGroup());
  auto& plane = s.pool.reducer(0).dataPlane();
  RawLink first0 = s.lane(0, 1);
  RawLink first1 = s.lane(1, 1);
  RawLink second0 = s.lane(0, 2, /*lossDetectMs=*/200);
  RawLink second1 = s.lane(1, 2);
  failoverBoth(s, first0, first1, {1, 2}, 1);
  second0.failover({1, 2}, 2);
  second1.failover({1, 2}, 2);
  first1.entry(1, 0);
  REQUIRE(waitUntil([&] { return plane.stats().slotsOpen == 1; }));
  second0.entry(2, 0);
  REQUIRE(waitUntil([&] { return plane.stats().parkedSessions == 1; }));
  const std::optional<wire::FrameType> type = second0.nextTypeBy();
  REQUIRE(type.has_value());
  CHECK(*type == wire::FrameType::kHeartbeat);
  // Rank 0's entry of chunk 1 completes the slot; the parked entry of chunk 2 then takes it.
  first0.entry(1, 0);
  CHECK(first0.readResult(1) == RawLink::sumOfBoth());
  CHECK(first1.readResult(1) == RawLink::sumOfBoth());
}

TEST_CASE("a lane for a group the survivor does not serve is refused, and an entry a lane does "
          "not carry fails the group",
          "[failover]") {
  Survivor s(2);
  RawLink& stream1 = s.stream1;
  RawLink lane0 = s.lane(0, 1);
  RawLink lane1 = s.lane(1, 1);
  {
    // No stream of the group here: a lane would carry chunks to a reducer that never had any.
    asio::ip::tcp::socket raw = rawSocket(s.io, s.port);
    const wire::ChallengePayload challenge = readChallenge(raw);
    wire::HelloPayload hello;
    hello.worldSize = 2;
    hello.streamIndex = 1;
    hello.streamCount = 1;
    hello.reducerIndex = 0;
    hello.reducerCount = 2;
    auto made = wire::helloFrame(GroupId::random(), 0, hello, {}, challenge.nonce,
                                 wire::kFlagLane);
    REQUIRE(made.isOk());
    asio::write(raw, asio::buffer(made->header));
    asio::write(raw, asio::buffer(made->payload));
    CHECK_THAT(readRefusal(raw), Catch::Matchers::Contains("has no stream here"));
  }
  lane0.failover({1}, 1);
  lane1.failover({1}, 1);
  CHECK(stream1.readLost() == std::vector<uint32_t>{1});
  // Chunk 2's home is reducer 0 itself: it never travels on a lane.
  lane0.entry(2, 0);
  CHECK_THAT(stream1.readAbort(),
             Catch::Matchers::Contains("REDUCE for chunk 2: its home is reducer 0 stream 0"));
}

}  // namespace rs::test
