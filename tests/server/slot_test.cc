// The reducer's per-chunk state machine without sockets: members' bytes are handed to a Slot the
// way Session does (a read lands behind the split element kept from the last one), and every
// RESULT part it releases is checked against a reference computed here. Inputs are small
// integers, so every sum is exact and the fold order cannot change a result.
#include "server/slot.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/reduce/float16.h"
#include "core/reduce/float8.h"

namespace rs::server {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kSeq = 7;
constexpr uint64_t kChunk = 3;
constexpr uint64_t kOffset = 100;

const GroupId& testGroup() {
  static const GroupId id = GroupId::random();
  return id;
}

wire::FrameHeader reduceHeader(uint32_t rank, DataType dtype, ReduceOp op, uint32_t count) {
  wire::FrameHeader h;
  h.type = wire::FrameType::kReduce;
  h.group = testGroup();
  h.rank = rank;
  h.seq = kSeq;
  h.chunk = kChunk;
  h.elemOffset = kOffset;
  h.elemCount = count;
  h.dtype = dtype;
  h.op = op;
  h.payloadLength = static_cast<uint32_t>(count * dataTypeSize(dtype));
  return h;
}

struct Shape {
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  uint32_t count = 0;
  uint32_t world = 0;
  uint64_t maxLeadBytes = 0;
  uint64_t minPartBytes = 32 << 10;
  bool deterministic = false;
  Fp32Accumulator fp32Accumulator = Fp32Accumulator::kFp32;
  // Inputs whose sum cancels: rank 0 adds 2^25, the last rank takes it away, so an fp32
  // accumulator loses the small values in between (its ulp at 2^25 is 4) and an fp64 one
  // does not.
  bool cancelling = false;
};

std::unique_ptr<Slot> openSlot(const std::shared_ptr<SlotPool>& pool, const Shape& s,
                               std::chrono::milliseconds timeout = 60s) {
  auto buffer = pool->tryAcquire(
      Slot::bufferBytes(s.count, s.dtype, s.world, s.deterministic, s.fp32Accumulator));
  REQUIRE(buffer);
  Slot::Setup setup;
  setup.worldSize = s.world;
  setup.stream = 1;
  setup.timeout = timeout;
  setup.maxLeadBytes = s.maxLeadBytes;
  setup.minPartBytes = s.minPartBytes;
  setup.deterministic = s.deterministic;
  setup.fp32Accumulator = s.fp32Accumulator;
  return std::make_unique<Slot>(pool, std::move(*buffer), reduceHeader(0, s.dtype, s.op, s.count),
                                setup);
}

// Rank r's element i: a small integer, different per rank, negative ones included.
double inputValue(const Shape& s, uint32_t rank, uint64_t i) {
  if (s.cancelling && s.world > 2 && rank == 0) return 0x1p25;
  if (s.cancelling && s.world > 2 && rank == s.world - 1) return -0x1p25;
  return static_cast<double>(static_cast<int64_t>((i * 7 + rank * 13) % 17) - 8);
}

void encode(DataType t, double v, std::byte* out) {
  switch (t) {
    case DataType::kFloat32: {
      const float f = static_cast<float>(v);
      std::memcpy(out, &f, 4);
      return;
    }
    case DataType::kFloat16: {
      const uint16_t h = reduce::floatToHalf(static_cast<float>(v));
      std::memcpy(out, &h, 2);
      return;
    }
    case DataType::kBfloat16: {
      const uint16_t b = reduce::floatToBfloat16(static_cast<float>(v));
      std::memcpy(out, &b, 2);
      return;
    }
    case DataType::kInt32: {
      const auto i = static_cast<int32_t>(v);
      std::memcpy(out, &i, 4);
      return;
    }
    case DataType::kFloat8e4m3:
    case DataType::kFloat8e5m2: {
      const uint8_t b = reduce::roundToFloat8(v, reduce::float8Format(t));
      std::memcpy(out, &b, 1);
      return;
    }
    default: FAIL("type not covered by this test");
  }
}

std::vector<std::byte> payload(const Shape& s, uint32_t rank) {
  const size_t size = dataTypeSize(s.dtype);
  std::vector<std::byte> out(s.count * size);
  for (uint32_t i = 0; i < s.count; ++i)
    encode(s.dtype, inputValue(s, rank, i), out.data() + i * size);
  return out;
}

// The wire-typed result of element i: the op over every rank, avg divided in the accumulator's
// type (fp32, or fp64 for fp32 in an fp64 accumulator, as the kernels do), narrowed once.
std::vector<std::byte> reference(const Shape& s) {
  const size_t size = dataTypeSize(s.dtype);
  std::vector<std::byte> out(s.count * size);
  for (uint32_t i = 0; i < s.count; ++i) {
    double acc = inputValue(s, 0, i);
    for (uint32_t r = 1; r < s.world; ++r) {
      const double v = inputValue(s, r, i);
      if (s.op == ReduceOp::kMax) acc = std::max(acc, v);
      else if (s.op == ReduceOp::kMin) acc = std::min(acc, v);
      else acc += v;
    }
    double result = acc;
    if (s.op == ReduceOp::kAvg)
      result = s.dtype == DataType::kInt32
                   ? static_cast<double>(static_cast<int32_t>(acc) / static_cast<int32_t>(s.world))
               : accumulatesInFloat64(s.dtype, s.fp32Accumulator)
                   ? acc / s.world
                   : static_cast<double>(static_cast<float>(acc) / static_cast<float>(s.world));
    encode(s.dtype, result, out.data() + i * size);
  }
  return out;
}

// One member as Session drives it: each read lands behind the split element the slot could
// not fold last time, the fold starts at the buffer's front, and what is left moves there.
class Member {
 public:
  Member(uint32_t rank, const Shape& s) : rank_(rank), bytes_(payload(s, rank)), staging_(4096) {}

  // Hands over the next `n` bytes (fewer at the end); returns the bytes the slot folded.
  size_t send(Slot& slot, size_t n) {
    n = std::min({n, bytes_.size() - sent_, staging_.size() - tail_});
    std::memcpy(staging_.data() + tail_, bytes_.data() + sent_, n);
    sent_ += n;
    const size_t have = tail_ + n;
    const size_t folded = slot.fold(rank_, staging_.data(), have);
    tail_ = have - folded;
    if (tail_ != 0) std::memmove(staging_.data(), staging_.data() + folded, tail_);
    return folded;
  }
  bool allSent() const { return sent_ == bytes_.size(); }
  size_t tail() const { return tail_; }
  uint32_t rank() const { return rank_; }

 private:
  uint32_t rank_;
  std::vector<std::byte> bytes_;
  AlignedBuffer staging_;
  size_t sent_ = 0;
  size_t tail_ = 0;
};

// What every member receives: the parts the slot releases, in order, copied out at once.
struct Results {
  explicit Results(const Shape& s) : bytes(s.count * dataTypeSize(s.dtype)) {}

  void collect(Slot& slot) {
    const size_t size = dataTypeSize(slot.dtype());
    while (auto part = slot.releaseReady()) {
      REQUIRE(part->from == received);  // parts are contiguous and in order
      REQUIRE(part->to > part->from);
      std::memcpy(bytes.data() + part->from * size, slot.resultData(part->from),
                  (part->to - part->from) * size);
      received = part->to;
      ++parts;
    }
  }

  std::vector<std::byte> bytes;
  uint64_t received = 0;
  int parts = 0;
};

std::vector<Member> members(const Shape& s) {
  std::vector<Member> out;
  for (uint32_t r = 0; r < s.world; ++r) out.emplace_back(r, s);
  return out;
}

void startAll(Slot& slot, const Shape& s) {
  for (uint32_t r = 0; r < s.world; ++r) {
    if (r != 0) {
      FrameRejection why{};
      REQUIRE(slot.admit(reduceHeader(r, s.dtype, s.op, s.count), r, &why).isOk());
    }
    slot.startReceiving(r);
  }
}

// Feeds every member's payload in random uneven pieces (not multiples of the element size),
// members interleaved at random, and checks completion comes with the last element only.
Results feedRandomly(Slot& slot, const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> pieceBytes(1, 700);
  auto ms = members(s);
  startAll(slot, s);
  Results results(s);
  std::vector<uint32_t> busy(s.world);
  for (uint32_t r = 0; r < s.world; ++r) busy[r] = r;
  while (!busy.empty()) {
    const size_t pick = std::uniform_int_distribution<size_t>(0, busy.size() - 1)(rng);
    Member& m = ms[busy[pick]];
    REQUIRE_FALSE(slot.complete());
    m.send(slot, pieceBytes(rng));
    results.collect(slot);
    if (m.allSent()) {
      REQUIRE(m.tail() == 0);
      REQUIRE(slot.memberDone(m.rank()));
      busy.erase(busy.begin() + static_cast<std::ptrdiff_t>(pick));
    } else {
      REQUIRE_FALSE(slot.memberDone(m.rank()));
    }
  }
  REQUIRE(slot.complete());
  REQUIRE(slot.released() == s.count);
  return results;
}

std::string typeOpName(const Shape& s) {
  return std::string(dataTypeName(s.dtype)) + " " + std::string(reduceOpName(s.op));
}

}  // namespace

TEST_CASE("slot: uneven pieces from several members fold to the reference, every type and op") {
  auto pool = std::make_shared<SlotPool>(64 << 20);
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16,
                     DataType::kInt32, DataType::kFloat8e4m3, DataType::kFloat8e5m2}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kAvg}) {
      for (uint32_t world : {1u, 3u, 4u}) {
        Shape s{t, op, 1031, world};
        s.minPartBytes = 256;
        INFO(typeOpName(s) << " world " << world);
        auto slot = openSlot(pool, s);
        Results results = feedRandomly(*slot, s, 17 * world + static_cast<uint32_t>(op));
        CHECK(results.bytes == reference(s));
      }
    }
  }
  CHECK(pool->inUse() == 0);  // every slot returned its buffer
}

TEST_CASE("slot: deterministic mode folds to the same reference, every type and op") {
  auto pool = std::make_shared<SlotPool>(64 << 20);
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16,
                     DataType::kInt32, DataType::kFloat8e4m3, DataType::kFloat8e5m2}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kAvg}) {
      for (uint32_t world : {1u, 3u, 4u}) {
        Shape s{t, op, 1031, world};
        s.minPartBytes = 256;
        s.deterministic = true;
        INFO(typeOpName(s) << " world " << world);
        auto slot = openSlot(pool, s);
        Results results = feedRandomly(*slot, s, 23 * world + static_cast<uint32_t>(op));
        CHECK(results.bytes == reference(s));
      }
    }
  }
  CHECK(pool->inUse() == 0);
}

TEST_CASE("slot: fp32 in an fp64 accumulator is the exact sum whatever the arrival order") {
  // The reference sums in fp64, exactly here, and rounds once: an fp64 accumulator meets it
  // in either mode and any order; an fp32 one loses the small terms behind 2^25.
  auto pool = std::make_shared<SlotPool>(64 << 20);
  for (bool deterministic : {false, true}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg}) {
      for (uint32_t seed : {1u, 2u, 3u}) {
        Shape s{DataType::kFloat32, op, 1031, 3};
        s.minPartBytes = 256;
        s.deterministic = deterministic;
        s.cancelling = true;
        INFO(typeOpName(s) << (deterministic ? " deterministic" : "") << " seed " << seed);
        s.fp32Accumulator = Fp32Accumulator::kFp64;
        auto wide = openSlot(pool, s);
        if (!deterministic) CHECK(wide->memoryBytes() >= 1031 * 8);
        CHECK(feedRandomly(*wide, s, seed).bytes == reference(s));
        s.fp32Accumulator = Fp32Accumulator::kFp32;
        auto narrow = openSlot(pool, s);
        CHECK(feedRandomly(*narrow, s, seed).bytes != reference(s));
      }
    }
  }
  CHECK(pool->inUse() == 0);
}

TEST_CASE("slot: an element split across reads is folded once it is whole") {
  auto pool = std::make_shared<SlotPool>(1 << 20);
  SECTION("fp32 cut after 1 and after 3 bytes") {
    const Shape s{DataType::kFloat32, ReduceOp::kSum, 4, 2, 0, 4};  // parts of one element
    auto slot = openSlot(pool, s);
    auto ms = members(s);
    startAll(*slot, s);
    Results results(s);
    CHECK(ms[0].send(*slot, 1) == 0);  // 1 byte: nothing to fold
    CHECK(ms[0].tail() == 1);
    CHECK(ms[0].send(*slot, 2) == 0);  // 3 bytes
    CHECK(slot->received(0) == 0);
    CHECK(ms[0].send(*slot, 3) == 4);  // 6 bytes: one element, 2 left
    CHECK(ms[0].tail() == 2);
    CHECK(slot->received(0) == 1);
    CHECK(ms[1].send(*slot, 3) == 0);  // the other member, cut after 3 bytes
    CHECK(ms[1].send(*slot, 9) == 12);
    CHECK(slot->received(1) == 3);
    results.collect(*slot);
    CHECK(results.received == 1);  // element 0 is in from both
    CHECK(ms[0].send(*slot, 10) == 12);
    CHECK(ms[1].send(*slot, 4) == 4);
    results.collect(*slot);
    CHECK(slot->complete());
    CHECK(results.bytes == reference(s));
  }
  for (DataType t : {DataType::kFloat16, DataType::kBfloat16}) {
    DYNAMIC_SECTION(dataTypeName(t) << " cut after 1 byte, every element") {
      const Shape s{t, ReduceOp::kAvg, 9, 3};
      auto slot = openSlot(pool, s);
      auto ms = members(s);
      startAll(*slot, s);
      Results results(s);
      // One byte per read from every member in turn: each element arrives in two halves.
      for (int step = 0; step < 18; ++step) {
        for (Member& m : ms) {
          const size_t folded = m.send(*slot, 1);
          CHECK(folded == (step % 2 == 1 ? 2 : 0));
          CHECK(m.tail() == (step % 2 == 1 ? 0 : 1));
        }
        results.collect(*slot);
        CHECK(slot->complete() == (step == 17));
      }
      CHECK(results.bytes == reference(s));
    }
  }
}

TEST_CASE("slot: avg is finalized in parts, in place, and earlier parts stay intact") {
  auto pool = std::make_shared<SlotPool>(1 << 20);
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16,
                     DataType::kFloat8e4m3}) {
    const Shape s{t, ReduceOp::kAvg, 600, 3, 0, 64};
    INFO(typeOpName(s));
    auto slot = openSlot(pool, s);
    auto ms = members(s);
    startAll(*slot, s);
    const auto want = reference(s);
    const size_t size = dataTypeSize(t);
    Results results(s);
    // Members take turns with 100-byte reads: the common prefix grows by whole parts of at
    // least 64 bytes, each finalized and checked at once, before later elements are summed.
    while (!slot->complete()) {
      for (Member& m : ms) m.send(*slot, 100);
      const uint64_t before = results.received;
      results.collect(*slot);
      CHECK(std::memcmp(results.bytes.data() + before * size, want.data() + before * size,
                        (results.received - before) * size) == 0);
      CHECK((results.received - before == 0 || (results.received - before) * size >= 64 ||
             results.received == s.count));
    }
    CHECK(results.parts >= 5);
    // The parts handed out first still read the same after the rest was finalized behind them.
    CHECK(std::memcmp(slot->resultData(0), want.data(), want.size()) == 0);
    CHECK(results.bytes == want);
  }
}

TEST_CASE("slot: a part leaves once the common prefix grew by a part, the last one at the end") {
  auto pool = std::make_shared<SlotPool>(1 << 20);
  const Shape s{DataType::kFloat32, ReduceOp::kSum, 100, 2, 0, 64};  // parts of 16 elements
  auto slot = openSlot(pool, s);
  auto ms = members(s);
  startAll(*slot, s);
  ms[0].send(*slot, 400);  // all of rank 0
  ms[1].send(*slot, 60);   // 15 elements: under a part
  CHECK_FALSE(slot->releaseReady());
  ms[1].send(*slot, 4);    // 16
  auto part = slot->releaseReady();
  REQUIRE(part);
  CHECK(part->from == 0);
  CHECK(part->to == 16);
  CHECK_FALSE(slot->releaseReady());
  ms[1].send(*slot, 336);  // the rest: 84 elements, one part up to the end
  part = slot->releaseReady();
  REQUIRE(part);
  CHECK(part->from == 16);
  CHECK(part->to == 100);
  CHECK(slot->complete());
}

TEST_CASE("slot: the lead limit holds the members far ahead and releases the nearest first") {
  auto pool = std::make_shared<SlotPool>(1 << 20);
  // 1024 fp32 elements; a member 1 KiB (256 elements) or more past the released prefix waits;
  // parts of 256 bytes (64 elements).
  const Shape s{DataType::kFloat32, ReduceOp::kSum, 1024, 3, 1024, 256};
  auto slot = openSlot(pool, s);
  auto ms = members(s);
  startAll(*slot, s);
  Results results(s);
  std::vector<uint32_t> woken, released;
  // Wakes the held members as the shard does; each checks the limit again as Session does.
  auto wake = [&] {
    slot->wakeHeldBack([&](uint32_t rank) {
      woken.push_back(rank);
      if (!slot->holdBack(rank)) released.push_back(rank);
    });
  };
  auto sendAndRelease = [&](uint32_t rank, size_t bytes) {
    ms[rank].send(*slot, bytes);
    const uint64_t before = results.received;
    results.collect(*slot);
    if (results.received != before) wake();
  };

  sendAndRelease(0, 2048);  // 512 elements ahead of a released prefix of 0
  CHECK(slot->holdBack(0));
  sendAndRelease(1, 1536);  // 384
  CHECK(slot->holdBack(1));
  sendAndRelease(2, 256);  // the slowest: 64 elements, a part, released
  CHECK(results.received == 64);
  CHECK_FALSE(slot->holdBack(2));
  CHECK(woken == std::vector<uint32_t>{0, 1});  // in the order they were held
  CHECK(released.empty());                      // 448 and 320 elements ahead: still too far

  woken.clear();
  sendAndRelease(2, 512);  // 192 released: rank 1 is 192 ahead (768 bytes), rank 0 320
  CHECK_FALSE(slot->holdBack(2));
  CHECK(woken == std::vector<uint32_t>{0, 1});
  CHECK(released == std::vector<uint32_t>{1});  // the nearer one goes first

  woken.clear();
  sendAndRelease(2, 256);  // 256 released: rank 0 exactly 1 KiB ahead, still held
  CHECK_FALSE(slot->holdBack(2));
  CHECK(woken == std::vector<uint32_t>{0});
  CHECK(released == std::vector<uint32_t>{1});
  sendAndRelease(2, 256);  // 320 released: rank 0 768 bytes ahead
  CHECK_FALSE(slot->holdBack(2));
  CHECK(released == std::vector<uint32_t>{1, 0});
}

TEST_CASE("slot: under the lead limit the slowest is never held back and the chunk completes") {
  auto pool = std::make_shared<SlotPool>(1 << 20);
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    // As the configuration allows at its tightest: --max-lead equal to a part (and a piece).
    const Shape s{DataType::kBfloat16, ReduceOp::kSum, 4000, 4, 512, 512};
    INFO("seed " << seed);
    auto slot = openSlot(pool, s);
    auto ms = members(s);
    startAll(*slot, s);
    Results results(s);
    std::vector<bool> held(s.world, false);
    std::mt19937 rng(seed);
    std::uniform_int_distribution<size_t> pieceBytes(1, 900);
    while (!slot->complete()) {
      // A member that is read: not held back and not done. One always exists.
      std::vector<uint32_t> readable;
      for (uint32_t r = 0; r < s.world; ++r)
        if (!held[r] && !slot->memberDone(r)) readable.push_back(r);
      REQUIRE_FALSE(readable.empty());
      const uint32_t r =
          readable[std::uniform_int_distribution<size_t>(0, readable.size() - 1)(rng)];
      if (ms[r].send(*slot, pieceBytes(rng)) == 0) continue;
      const uint64_t before = results.received;
      results.collect(*slot);
      if (results.received != before)
        slot->wakeHeldBack([&](uint32_t rank) { held[rank] = slot->holdBack(rank); });
      if (slot->memberDone(r)) continue;
      uint64_t slowest = UINT64_MAX;
      for (uint32_t m = 0; m < s.world; ++m) slowest = std::min(slowest, slot->received(m));
      if (slot->holdBack(r)) {
        held[r] = true;
        REQUIRE(slot->received(r) > slowest);  // never the slowest
      }
    }
    CHECK(results.bytes == reference(s));
  }
}

TEST_CASE("slot: without a lead limit nobody is held back") {
  auto pool = std::make_shared<SlotPool>(1 << 20);
  const Shape s{DataType::kFloat32, ReduceOp::kSum, 1024, 2, 0, 256};
  auto slot = openSlot(pool, s);
  auto ms = members(s);
  startAll(*slot, s);
  ms[0].send(*slot, 4000);
  CHECK_FALSE(slot->holdBack(0));
}

TEST_CASE("slot: a duplicate or disagreeing contribution is refused with its reason") {
  auto pool = std::make_shared<SlotPool>(1 << 20);
  const Shape s{DataType::kFloat32, ReduceOp::kSum, 64, 3};
  auto slot = openSlot(pool, s);
  slot->startReceiving(0);  // the opener
  FrameRejection why{};
  const auto header = [&](uint32_t rank) { return reduceHeader(rank, s.dtype, s.op, s.count); };

  REQUIRE(slot->admit(header(1), 1, &why).isOk());
  slot->startReceiving(1);

  SECTION("the same rank twice") {
    for (uint32_t rank : {0u, 1u}) {
      Status st = slot->admit(header(rank), rank, &why);
      CHECK(st.code() == StatusCode::kProtocolError);
      CHECK(st.message() == "rank " + std::to_string(rank) + " sent chunk 3 twice");
      CHECK(why == FrameRejection::kDuplicate);
    }
    // Also once its contribution is complete.
    Member m(1, s);
    m.send(*slot, 256);
    REQUIRE(slot->memberDone(1));
    CHECK(slot->admit(header(1), 1, &why).code() == StatusCode::kProtocolError);
  }

  const std::string opened =
      "but the chunk was opened with seq 7 offset 100 count 64 fp32 sum (every member must "
      "issue the same collectives in the same order)";
  auto expectDisagreement = [&](const wire::FrameHeader& h, const std::string& sent) {
    Status st = slot->admit(h, 2, &why);
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message() == "members disagree on chunk 3: rank 2 sent " + sent + ", " + opened);
    CHECK(why == FrameRejection::kDisagreement);
  };
  SECTION("seq") {
    auto h = header(2);
    h.seq = 8;
    expectDisagreement(h, "seq 8 offset 100 count 64 fp32 sum");
  }
  SECTION("offset") {
    auto h = header(2);
    h.elemOffset = 164;
    expectDisagreement(h, "seq 7 offset 164 count 64 fp32 sum");
  }
  SECTION("count") {
    auto h = header(2);
    h.elemCount = 63;
    expectDisagreement(h, "seq 7 offset 100 count 63 fp32 sum");
  }
  SECTION("dtype") {
    auto h = header(2);
    h.dtype = DataType::kBfloat16;
    expectDisagreement(h, "seq 7 offset 100 count 64 bf16 sum");
  }
  SECTION("op") {
    auto h = header(2);
    h.op = ReduceOp::kAvg;
    expectDisagreement(h, "seq 7 offset 100 count 64 fp32 avg");
  }
  SECTION("a disagreement is reported before a duplicate") {
    auto h = header(1);
    h.op = ReduceOp::kMax;
    CHECK(slot->admit(h, 1, &why).code() == StatusCode::kInvalidArgument);
    CHECK(why == FrameRejection::kDisagreement);
  }
  SECTION("another group or chunk") {
    auto h = header(2);
    h.chunk = 4;
    Status st = slot->admit(h, 2, &why);
    CHECK(st.code() == StatusCode::kProtocolError);
    CHECK(why == FrameRejection::kMisrouted);
    h = header(2);
    h.group = GroupId::random();
    st = slot->admit(h, 2, &why);
    CHECK(st.code() == StatusCode::kProtocolError);
    CHECK(st.message().find(h.group.toString()) != std::string::npos);
    CHECK(why == FrameRejection::kMisrouted);
  }
  SECTION("the third member, agreeing, is admitted") {
    CHECK(slot->admit(header(2), 2, &why).isOk());
  }
}

TEST_CASE("slot: a slot past its deadline names who never sent and who is mid-transfer") {
  auto pool = std::make_shared<SlotPool>(1 << 20);
  const Shape s{DataType::kFloat32, ReduceOp::kSum, 64, 4};
  auto slot = openSlot(pool, s, 1000ms);
  slot->startReceiving(0);
  slot->startReceiving(2);
  Member done(3, s);
  slot->startReceiving(3);
  done.send(*slot, 256);
  CHECK(slot->overdue(slot->created() + 999ms).isOk());
  Status st = slot->overdue(slot->created() + 5s);
  CHECK(st.code() == StatusCode::kTimeout);
  CHECK(st.message() == "chunk 3 of collective seq 7 waited 5000 ms (timeout 1000 ms) on stream "
                        "1: ranks 1 never sent it, ranks 0,2 are mid-transfer");
}

TEST_CASE("slot: the chunk's latency counts once its last part is written to every member") {
  auto pool = std::make_shared<SlotPool>(1 << 20);
  const Shape s{DataType::kFloat32, ReduceOp::kSum, 64, 2};
  auto slot = openSlot(pool, s);
  slot->lastPartQueued();
  slot->lastPartQueued();
  CHECK_FALSE(slot->lastPartWritten());
  CHECK(slot->lastPartWritten());

  auto dead = openSlot(pool, s);
  dead->lastPartQueued();
  dead->markDead();
  CHECK(dead->dead());
  CHECK_FALSE(dead->lastPartWritten());  // an aborted group's chunk is not a reduction
}

TEST_CASE("slot: the accumulator returns to the pool with the slot") {
  auto pool = std::make_shared<SlotPool>(1 << 20);
  {
    auto slot = openSlot(pool, {DataType::kFloat16, ReduceOp::kSum, 1000, 2});
    CHECK(pool->inUse() > 0);
  }
  CHECK(pool->inUse() == 0);
}

}  // namespace rs::server
