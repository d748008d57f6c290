// Deterministic mode of the slot (RS_DETERMINISTIC): the same W contributions fed in many
// arrival orders and piece sizes give bit-identical results equal to the rank-order sum, while
// the normal mode's result changes with the order (checked, so that these tests can fail).
// Inputs span many binades, so fp32 sums do depend on their order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "core/failover/resent_chunk.h"
#include "core/reduce/float16.h"
#include "server/slot.h"

namespace rs::server {
namespace {

using namespace std::chrono_literals;
using Bytes = std::vector<std::byte>;

struct ChunkShape {
  DataType dtype = DataType::kFloat32;
  uint32_t count = 0;
  uint32_t world = 0;
  bool deterministic = false;
  uint64_t maxLeadBytes = 0;
  uint64_t minPartBytes = 256;
  bool lane = false;  // a lost reducer's chunk on a survivor: every entry a whole REDUCE
};

wire::FrameHeader header(uint32_t rank, const ChunkShape& s) {
  wire::FrameHeader h;
  h.type = wire::FrameType::kReduce;
  h.group = GroupId{1, 2};
  h.rank = rank;
  h.seq = 1;
  h.chunk = 5;
  h.elemCount = s.count;
  h.dtype = s.dtype;
  h.op = ReduceOp::kSum;
  h.payloadLength = static_cast<uint32_t>(s.count * dataTypeSize(s.dtype));
  return h;
}

std::unique_ptr<Slot> openShapedSlot(const std::shared_ptr<SlotPool>& pool, const ChunkShape& s) {
  auto buffer =
      pool->tryAcquire(Slot::bufferBytes(s.count, s.dtype, s.world, s.deterministic || s.lane));
  REQUIRE(buffer);
  Slot::Setup setup;
  setup.worldSize = s.world;
  setup.timeout = 60s;
  setup.maxLeadBytes = s.maxLeadBytes;
  setup.minPartBytes = s.minPartBytes;
  setup.deterministic = s.deterministic;
  setup.lane = s.lane;
  return std::make_unique<Slot>(pool, std::move(*buffer), header(0, s), setup);
}

float wireToFloat(DataType t, const std::byte* p) {
  if (t == DataType::kFloat32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t b;
  std::memcpy(&b, p, 2);
  return reduce::bfloat16ToFloat(b);
}

void floatToWire(DataType t, float v, std::byte* p) {
  if (t == DataType::kFloat32) {
    std::memcpy(p, &v, 4);
    return;
  }
  const uint16_t b = reduce::floatToBfloat16(v);
  std::memcpy(p, &b, 2);
}

// The members' contributions. In each element two random members hold +B and -B (B about 2^20
// to 2^28), the others small values (2^-4 to 2^4): a small value added to B before -B cancels
// it loses its low bits, so the sum depends on the order in fp32, and visibly after bf16's
// one rounding too (the exact sum is small).
std::vector<Bytes> contributions(const ChunkShape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> smallExp(-4, 4), bigExp(20, 28);
  std::uniform_int_distribution<uint32_t> member(0, s.world - 1);
  const size_t size = dataTypeSize(s.dtype);
  std::vector<Bytes> out(s.world, Bytes(s.count * size));
  for (uint32_t i = 0; i < s.count; ++i) {
    const uint32_t plus = member(rng);
    uint32_t minus = member(rng);
    if (s.world > 1 && minus == plus) minus = (plus + 1) % s.world;
    const float big = std::ldexp(mantissa(rng), bigExp(rng));
    for (uint32_t r = 0; r < s.world; ++r) {
      const float v = r == plus    ? big
                      : r == minus ? -big
                                   : std::ldexp(mantissa(rng), smallExp(rng));
      floatToWire(s.dtype, v, out[r].data() + i * size);
    }
  }
  return out;
}

// Rank 0 + rank 1 + ... in fp32 (the accumulator of fp32 and bf16), rounded once to the wire.
Bytes rankOrderSum(const ChunkShape& s, const std::vector<Bytes>& in) {
  const size_t size = dataTypeSize(s.dtype);
  Bytes out(s.count * size);
  for (uint32_t i = 0; i < s.count; ++i) {
    float acc = wireToFloat(s.dtype, in[0].data() + i * size);
    for (uint32_t r = 1; r < s.world; ++r) acc += wireToFloat(s.dtype, in[r].data() + i * size);
    floatToWire(s.dtype, acc, out.data() + i * size);
  }
  return out;
}

// Feeds the contributions as Session does (a split element stays at the staging buffer's front
// for the next read) in an order drawn from `seed`: even seeds interleave the members at random
// in pieces of 1..maxPiece bytes, odd ones send whole members one after another in a shuffled
// order. A member over the lead limit is not read until a release wakes it. Returns the result;
// `early` (if given) says whether a part left before the chunk was complete.
Bytes feed(const ChunkShape& s, const std::vector<Bytes>& in, uint32_t seed, size_t maxPiece,
           const std::shared_ptr<SlotPool>& pool, bool* early = nullptr) {
  auto slot = openShapedSlot(pool, s);
  for (uint32_t r = 0; r < s.world; ++r) {
    FrameRejection why{};
    if (r != 0) REQUIRE(slot->admit(header(r, s), r, &why).isOk());
    if (s.lane) slot->startEntry(r, 0);
    else slot->startReceiving(r);
  }
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> pieceBytes(1, maxPiece);
  std::vector<uint32_t> order(s.world);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), rng);
  const bool wholeMembers = seed % 2 == 1;

  const size_t size = dataTypeSize(s.dtype);
  std::vector<AlignedBuffer> staging;
  for (uint32_t r = 0; r < s.world; ++r) staging.emplace_back(maxPiece + 16);
  std::vector<size_t> sent(s.world, 0), tail(s.world, 0);
  std::vector<bool> held(s.world, false);
  Bytes result(s.count * size);
  uint64_t received = 0;
  while (!slot->complete()) {
    std::vector<uint32_t> ready;
    for (uint32_t r : order)
      if (sent[r] < in[r].size() && !held[r]) ready.push_back(r);
    REQUIRE_FALSE(ready.empty());  // the slowest member is never held back
    const uint32_t r = wholeMembers
                           ? ready.front()
                           : ready[std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng)];
    const size_t n = std::min(pieceBytes(rng), in[r].size() - sent[r]);
    std::memcpy(staging[r].data() + tail[r], in[r].data() + sent[r], n);
    sent[r] += n;
    const size_t have = tail[r] + n;
    const size_t folded = slot->fold(r, staging[r].data(), have);
    tail[r] = have - folded;
    if (tail[r] != 0) std::memmove(staging[r].data(), staging[r].data() + folded, tail[r]);
    if (slot->holdBack(r)) held[r] = true;
    const uint64_t before = received;
    while (auto part = slot->releaseReady()) {
      REQUIRE(part->from == received);
      std::memcpy(result.data() + part->from * size, slot->resultData(part->from),
                  (part->to - part->from) * size);
      received = part->to;
      if (early && !slot->complete()) *early = true;
    }
    if (received != before)
      slot->wakeHeldBack([&](uint32_t rank) { held[rank] = slot->holdBack(rank); });
  }
  REQUIRE(received == s.count);
  return result;
}

}  // namespace

TEST_CASE("deterministic slot: bit-identical rank-order sums whatever the arrival order") {
  auto pool = std::make_shared<SlotPool>(64 << 20);
  for (DataType t : {DataType::kFloat32, DataType::kBfloat16}) {
    for (uint32_t world : {2u, 3u, 4u, 8u, 16u}) {
      for (size_t maxPiece : {size_t{7}, size_t{700}, size_t{8192}}) {
        ChunkShape s{t, 2053, world};
        INFO(dataTypeName(t) << " world " << world << " pieces up to " << maxPiece);
        const auto in = contributions(s, world * 31 + static_cast<uint32_t>(maxPiece));
        const Bytes expected = rankOrderSum(s, in);
        bool orderMattered = false;
        for (uint32_t seed = 0; seed < 12; ++seed) {
          INFO("arrival order " << seed);
          s.deterministic = true;
          CHECK(feed(s, in, seed, maxPiece, pool) == expected);
          s.deterministic = false;
          orderMattered = orderMattered || feed(s, in, seed, maxPiece, pool) != expected;
        }
        // Else these inputs could not tell the modes apart (world 2: a + b = b + a).
        if (world > 2) CHECK(orderMattered);
      }
    }
  }
  CHECK(pool->inUse() == 0);
}

TEST_CASE("deterministic slot: a survivor's resolve after its loss gives the same bits") {
  // The slot, fed in parts in any arrival order, is the lost reducer; members hold random
  // final prefixes of its result (what its RESULT parts had delivered) and their own
  // contributions past them. The survivor's resolve reduces [r*, n) afresh: the bits of the
  // run without the loss.
  auto pool = std::make_shared<SlotPool>(64 << 20);
  std::mt19937 rng(10);
  for (DataType t : {DataType::kFloat32, DataType::kBfloat16}) {
    for (uint32_t world : {2u, 3u, 8u, 16u}) {
      ChunkShape s{t, 2053, world, true};
      const auto in = contributions(s, world * 7);
      const size_t size = dataTypeSize(t);
      for (uint32_t seed = 0; seed < 6; ++seed) {
        const Bytes lost = feed(s, in, seed, 700, pool);
        std::vector<Bytes> entries(in);
        std::vector<uint64_t> prefix(world);
        for (uint32_t r = 0; r < world; ++r) {
          prefix[r] = seed == 0 ? 0 : rng() % s.count;
          std::memcpy(entries[r].data(), lost.data(), prefix[r] * size);
        }
        Result<failover::ResentChunk> chunk =
            failover::ResentChunk::create({5, world, s.count, t, ReduceOp::kSum});
        REQUIRE(chunk.isOk());
        for (uint32_t r = 0; r < world; ++r)
          REQUIRE(chunk->add(r, {false, prefix[r], entries[r]}).isOk());
        Bytes out(lost.size());
        const auto res = chunk->resolve(out);
        REQUIRE(res.isOk());
        REQUIRE(res->sendResult);
        INFO(dataTypeName(t) << " world " << world << " arrival order " << seed << " r* "
                             << res->finalPrefix);
        CHECK(out == lost);
      }
    }
  }
  CHECK(pool->inUse() == 0);
}

TEST_CASE("deterministic slot: cut-through and the lead limit work as in the normal mode") {
  auto pool = std::make_shared<SlotPool>(64 << 20);
  for (DataType t : {DataType::kFloat32, DataType::kBfloat16}) {
    ChunkShape s{t, 4099, 4, true, /*maxLeadBytes=*/1024, /*minPartBytes=*/256};
    const auto in = contributions(s, 99);
    const Bytes expected = rankOrderSum(s, in);
    for (uint32_t seed = 0; seed < 16; ++seed) {
      INFO(dataTypeName(t) << " arrival order " << seed);
      CHECK(feed(s, in, seed, 700, pool) == expected);  // completes: nobody is stuck held
    }
  }
  // A part leaves as soon as the common prefix grew by a part, before the chunk is complete.
  ChunkShape s{DataType::kFloat32, 1024, 3, true, 0, 256};
  const auto in = contributions(s, 5);
  auto slot = openShapedSlot(pool, s);
  for (uint32_t r = 0; r < 3; ++r) {
    FrameRejection why{};
    if (r != 0) REQUIRE(slot->admit(header(r, s), r, &why).isOk());
    slot->startReceiving(r);
  }
  for (uint32_t r : {2u, 1u, 0u}) REQUIRE(slot->fold(r, in[r].data(), 512) == 512);
  auto part = slot->releaseReady();
  REQUIRE(part);
  CHECK(part->from == 0);
  CHECK(part->to == 128);
  const Bytes expected = rankOrderSum(s, in);
  CHECK(std::memcmp(slot->resultData(0), expected.data(), 512) == 0);
  CHECK_FALSE(slot->complete());
}

TEST_CASE("lane slot: entries with no final prefix cut through, with the bits of the whole "
          "resolve and of the lost reducer") {
  // A lost reducer's chunk on a survivor whose every entry is a whole REDUCE (proto/FAILOVER.md,
  // "What it costs"): its parts leave as every member's contribution to them comes, in any
  // arrival order, and they are the rank-order sum, the bits of the resolve from whole entries
  // and of the lost reducer's deterministic slot, whatever the group's mode.
  auto pool = std::make_shared<SlotPool>(64 << 20);
  for (DataType t : {DataType::kFloat32, DataType::kBfloat16}) {
    for (uint32_t world : {2u, 3u, 8u}) {
      for (bool deterministic : {false, true}) {
        ChunkShape s{t, 2053, world, deterministic};
        const auto in = contributions(s, world * 13);
        const Bytes expected = rankOrderSum(s, in);
        s.lane = true;
        bool early = false;
        for (uint32_t seed = 0; seed < 8; ++seed) {
          INFO(dataTypeName(t) << " world " << world << " deterministic " << deterministic
                               << " arrival order " << seed);
          CHECK(feed(s, in, seed, 700, pool, &early) == expected);
        }
        CHECK(early);  // cut through: a part before the last entry was whole
        Result<failover::ResentChunk> chunk =
            failover::ResentChunk::create({5, world, s.count, t, ReduceOp::kSum});
        REQUIRE(chunk.isOk());
        for (uint32_t r = 0; r < world; ++r) REQUIRE(chunk->add(r, {false, 0, in[r]}).isOk());
        Bytes resolved(expected.size());
        REQUIRE(chunk->resolve(resolved).isOk());
        CHECK(resolved == expected);
      }
    }
  }
  CHECK(pool->inUse() == 0);
}

TEST_CASE("lane slot: a final prefix among the entries keeps the whole resolve, whichever entry "
          "comes last") {
  // Until every member's entry has begun, the slot cannot know that none has a final prefix:
  // the elements of a FINAL are final bits, not a contribution to sum. So nothing leaves until
  // the chunk is complete, and then the whole chunk is resolved (resent_chunk.h).
  auto pool = std::make_shared<SlotPool>(64 << 20);
  for (uint32_t finalRank : {0u, 2u}) {
    INFO("the FINAL is rank " << finalRank << "'s");
    ChunkShape s{DataType::kFloat32, 1024, 3, false, 0, 256, /*lane=*/true};
    const auto in = contributions(s, 21);
    const Bytes expected = rankOrderSum(s, in);
    const uint32_t prefix = 300;
    std::vector<Bytes> entries(in);
    std::memcpy(entries[finalRank].data(), expected.data(), prefix * sizeof(float));
    auto slot = openShapedSlot(pool, s);
    for (uint32_t r = 1; r < 3; ++r) {
      FrameRejection why{};
      REQUIRE(slot->admit(header(r, s), r, &why).isOk());
    }
    // The other ranks' entries begin and come whole first; the FINAL's rank begins last.
    for (uint32_t r = 0; r < 3; ++r) {
      if (r == finalRank) continue;
      slot->startEntry(r, 0);
      REQUIRE(slot->fold(r, entries[r].data(), entries[r].size()) == entries[r].size());
      CHECK_FALSE(slot->releaseReady());
    }
    slot->startEntry(finalRank, prefix);
    for (size_t at = 0; at < entries[finalRank].size(); at += 512) {
      REQUIRE(slot->fold(finalRank, entries[finalRank].data() + at, 512) == 512);
      CHECK_FALSE(slot->releaseReady());
    }
    REQUIRE(slot->complete());
    const Result<bool> resolved = slot->resolveLane();
    REQUIRE(resolved.isOk());
    REQUIRE(*resolved);
    CHECK(std::memcmp(slot->resultData(0), expected.data(), expected.size()) == 0);
  }
  CHECK(pool->inUse() == 0);
}

TEST_CASE("deterministic slot: the staging copies are charged to the pool") {
  // fp32, 1000 elements: a 4000-byte accumulator, or 4 staging regions on 64-byte lines.
  CHECK(Slot::bufferBytes(1000, DataType::kFloat32, 4, false) == 4000);
  CHECK(Slot::bufferBytes(1000, DataType::kFloat32, 4, true) == 4 * 4032);
  // bf16 accumulates in fp32, but stages wire-typed halves and needs no accumulator.
  CHECK(Slot::bufferBytes(1000, DataType::kBfloat16, 8, false) == 4000);
  CHECK(Slot::bufferBytes(1000, DataType::kBfloat16, 8, true) == 8 * 2048);
  // fp8 too: an fp32 accumulator four times its bytes, or byte-sized staging.
  CHECK(Slot::bufferBytes(1000, DataType::kFloat8e5m2, 8, false) == 4000);
  CHECK(Slot::bufferBytes(1000, DataType::kFloat8e5m2, 8, true) == 8 * 1024);

  // A pool that holds one normal slot of 256 KiB but not the deterministic one of W = 4.
  const uint32_t count = 64 << 10;  // fp32: 256 KiB
  auto pool = std::make_shared<SlotPool>(512 << 10);
  const size_t normal = Slot::bufferBytes(count, DataType::kFloat32, 4, false);
  const size_t det = Slot::bufferBytes(count, DataType::kFloat32, 4, true);
  CHECK(pool->fitsEver(normal));
  CHECK_FALSE(pool->fitsEver(det));
  ChunkShape s{DataType::kFloat32, 4096, 4, true};
  {
    auto slot = openShapedSlot(pool, s);
    CHECK(slot->memoryBytes() == SlotPool::roundUp(Slot::bufferBytes(4096, s.dtype, 4, true)));
    CHECK(pool->inUse() == slot->memoryBytes());
  }
  CHECK(pool->inUse() == 0);
}

}  // namespace rs::server
