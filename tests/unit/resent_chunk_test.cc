// The survivor's resolve of a resent chunk: the result of every type and op with members'
// random final prefixes is bit for bit what the lost reducer computed (the fused kernel in rank
// order, as its deterministic mode does) and exact against the scalar reference; commits send
// nothing; inconsistent entries are errors that leave the output untouched.
#include "core/failover/resent_chunk.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "core/reduce/reduce.h"
#include "tests/support/reduce_reference.h"
#include "tests/support/require_error.h"

namespace rs::failover {
namespace {

using Bytes = std::vector<uint8_t>;

std::span<const std::byte> bytesOf(const Bytes& b) { return std::as_bytes(std::span(b)); }
std::span<std::byte> writable(Bytes& b) { return std::as_writable_bytes(std::span(b)); }

ResentEntry held(uint64_t prefix, const Bytes& elements) {
  return {false, prefix, bytesOf(elements)};
}
const ResentEntry kCommitted{true, 0, {}};

struct Chunk {
  DataType dtype;
  ReduceOp op;
  Fp32Accumulator fp32 = Fp32Accumulator::kFp32;
  uint32_t world = 0;
  uint32_t count = 0;
  size_t size() const { return dataTypeSize(dtype); }
};

ResentChunk open(const Chunk& c) {
  Result<ResentChunk> r = ResentChunk::create({7, c.world, c.count, c.dtype, c.op, c.fp32});
  REQUIRE(r.isOk());
  return std::move(*r);
}

// The chunk with entries[r] from rank r, all in.
ResentChunk filled(const Chunk& c, const std::vector<ResentEntry>& entries) {
  ResentChunk chunk = open(c);
  for (uint32_t r = 0; r < entries.size(); ++r) REQUIRE(chunk.add(r, entries[r]).isOk());
  return chunk;
}

// What the lost reducer computed: the fused kernel over the members' contributions in rank
// order (server/slot.h's deterministic mode).
Bytes lostReducersResult(const Chunk& c, const std::vector<Bytes>& in) {
  std::vector<const void*> inputs;
  for (const Bytes& b : in) inputs.push_back(b.data());
  Bytes out(c.count * c.size());
  reduce::reduceInputs(c.dtype, c.op, inputs.data(), inputs.size(), out.data(), c.count, c.fp32);
  return out;
}

// A member's entry: the first `prefix` elements of the result, then its contribution.
Bytes entryBytes(const Chunk& c, const Bytes& result, const Bytes& contribution, uint64_t prefix) {
  Bytes e = contribution;
  std::memcpy(e.data(), result.data(), prefix * c.size());
  return e;
}

// Prefix patterns: all 0 (nothing delivered), random, random with one member at n, one at 0
// and one at n, every member at n but one.
std::vector<uint64_t> prefixes(int pattern, const Chunk& c, std::mt19937_64& rng) {
  std::vector<uint64_t> p(c.world, 0);
  if (pattern == 0) return p;
  for (uint64_t& r : p) r = rng() % (c.count + 1);
  if (pattern == 2) p[rng() % c.world] = c.count;
  if (pattern == 3) {
    p[0] = 0;
    p[c.world - 1] = c.count;
  }
  if (pattern == 4) {
    std::fill(p.begin(), p.end(), c.count);
    p[rng() % c.world] = rng() % c.count;
  }
  return p;
}

TEST_CASE("resent chunk: every type and op, random prefixes: the lost reducer's bits, exact") {
  std::mt19937_64 rng(27);
  std::vector<std::pair<DataType, Fp32Accumulator>> kinds;
  for (DataType t : test::kAllTypes) kinds.emplace_back(t, Fp32Accumulator::kFp32);
  kinds.emplace_back(DataType::kFloat32, Fp32Accumulator::kFp64);
  for (auto [dtype, fp32] : kinds) {
    for (ReduceOp op : test::kAllOps) {
      for (uint32_t world : {1u, 2u, 3u, 5u, 9u}) {  // 9: the kernel folds in groups of 8
        for (uint32_t count : {1u, 7u, 64u, 1031u}) {
          const Chunk c{dtype, op, fp32, world, count};
          std::vector<Bytes> in(world, Bytes(count * c.size()));
          for (Bytes& b : in) test::fillRandom(dtype, b.data(), count, rng);
          const Bytes lost = lostReducersResult(c, in);
          std::vector<const uint8_t*> ptrs;
          for (const Bytes& b : in) ptrs.push_back(b.data());
          const Bytes want = test::reference(dtype, op, ptrs, count, fp32);
          for (int pattern = 0; pattern < 5; ++pattern) {
            const std::vector<uint64_t> p = prefixes(pattern, c, rng);
            INFO(dataTypeName(dtype)
                 << " " << reduceOpName(op) << " accumulator " << fp32AccumulatorName(fp32)
                 << " W=" << world << " n=" << count << " pattern " << pattern);
            std::vector<Bytes> bytes;
            std::vector<ResentEntry> entries;
            for (uint32_t r = 0; r < world; ++r) bytes.push_back(entryBytes(c, lost, in[r], p[r]));
            for (uint32_t r = 0; r < world; ++r) entries.push_back(held(p[r], bytes[r]));
            const ResentChunk chunk = filled(c, entries);
            REQUIRE(chunk.complete());
            Bytes out(count * c.size(), 0xEE);
            const Result<ResentChunk::Resolution> res = chunk.resolve(writable(out));
            REQUIRE(res.isOk());
            const uint64_t longest = *std::max_element(p.begin(), p.end());
            if (*std::min_element(p.begin(), p.end()) == count) {  // everyone has it all
              CHECK_FALSE(res->sendResult);
              CHECK(out == Bytes(count * c.size(), 0xEE));
              continue;
            }
            REQUIRE(res->sendResult);
            CHECK(res->finalPrefix == longest);
            CHECK(res->prefixFrom == std::find(p.begin(), p.end(), longest) - p.begin());
            CHECK(out == lost);  // bit for bit
            const std::string bad = test::mismatch(dtype, op, out.data(), want.data(), count);
            if (!bad.empty()) FAIL(bad);
          }
        }
      }
    }
  }
}

TEST_CASE("resent chunk: the result may be written in place over rank 0's entry") {
  std::mt19937_64 rng(3);
  for (DataType dtype :
       {DataType::kFloat32, DataType::kBfloat16, DataType::kFloat8e4m3, DataType::kInt64}) {
    const Chunk c{dtype, ReduceOp::kSum, Fp32Accumulator::kFp32, 4, 999};
    std::vector<Bytes> in(c.world, Bytes(c.count * c.size()));
    for (Bytes& b : in) test::fillRandom(dtype, b.data(), c.count, rng);
    const Bytes lost = lostReducersResult(c, in);
    for (const std::vector<uint64_t>& p : std::vector<std::vector<uint64_t>>{
             {0, 0, 0, 0}, {10, 500, 0, 998}, {998, 3, 3, 0}, {0, 999, 999, 999}}) {
      std::vector<Bytes> bytes;
      for (uint32_t r = 0; r < c.world; ++r) bytes.push_back(entryBytes(c, lost, in[r], p[r]));
      const ResentChunk chunk = filled(c, {held(p[0], bytes[0]), held(p[1], bytes[1]),
                                           held(p[2], bytes[2]), held(p[3], bytes[3])});
      REQUIRE(chunk.resolve(writable(bytes[0])).isOk());
      INFO(dataTypeName(dtype) << " prefixes " << p[0] << "," << p[1] << "," << p[2] << ","
                               << p[3]);
      CHECK(bytes[0] == lost);
    }
  }
}

TEST_CASE("resent chunk: a COMMITTED marker, or the whole result everywhere, commits it") {
  const Chunk c{DataType::kFloat32, ReduceOp::kSum, Fp32Accumulator::kFp32, 3, 16};
  const Bytes whole(16 * 4, 0x11);
  Bytes out(16 * 4, 0xEE);
  const auto resolves = [&](const std::vector<ResentEntry>& entries) {
    const Result<ResentChunk::Resolution> res = filled(c, entries).resolve(writable(out));
    REQUIRE(res.isOk());
    CHECK_FALSE(res->sendResult);
    CHECK(out == Bytes(16 * 4, 0xEE));
  };
  resolves({kCommitted, kCommitted, kCommitted});
  resolves({held(16, whole), kCommitted, held(16, whole)});
  resolves({held(16, whole), held(16, whole), held(16, whole)});
  const Chunk empty{DataType::kFloat32, ReduceOp::kSum, Fp32Accumulator::kFp32, 2, 0};
  // A chunk of no elements: nothing to send either.
  const Result<ResentChunk::Resolution> res = filled(empty, {held(0, {}), held(0, {})}).resolve({});
  REQUIRE(res.isOk());
  CHECK_FALSE(res->sendResult);
}

using test::requireError;

TEST_CASE("resent chunk: bad entries are errors, never a crash, and leave the output as it was") {
  requireError(ResentChunk::create({1, 0, 4, DataType::kFloat32, ReduceOp::kSum}),
               StatusCode::kInvalidArgument, "0 members");
  requireError(ResentChunk::create({1, 2, 4, static_cast<DataType>(99), ReduceOp::kSum}),
               StatusCode::kInvalidArgument, "element type 99");
  requireError(ResentChunk::create({1, 2, 4, DataType::kFloat32, static_cast<ReduceOp>(9)}),
               StatusCode::kInvalidArgument, "operation 9");

  const Chunk c{DataType::kFloat32, ReduceOp::kSum, Fp32Accumulator::kFp32, 3, 4};
  const Bytes a(16, 0x01), b(16, 0x02), shorter(12, 0x01), longer(20, 0x01);
  ResentChunk chunk = open(c);
  requireError(chunk.add(3, held(0, a)), StatusCode::kProtocolError, "group of 3 members");
  requireError(chunk.add(0, held(5, a)), StatusCode::kProtocolError,
               "final prefix of 5 elements, but the chunk has 4");
  requireError(chunk.add(0, held(0, shorter)), StatusCode::kProtocolError,
               "resent 12 bytes, but the chunk's 4 fp32 elements are 16");
  requireError(chunk.add(0, held(0, longer)), StatusCode::kProtocolError, "resent 20 bytes");
  REQUIRE(chunk.add(0, held(1, a)).isOk());
  requireError(chunk.add(0, held(1, a)), StatusCode::kProtocolError, "rank 0 resent it twice");
  Bytes out(16, 0xEE);
  requireError(chunk.resolve(writable(out)), StatusCode::kFailedPrecondition,
               "ranks 1,2 have not resent it yet");

  // Members whose final bits differ where their prefixes overlap.
  Bytes c2 = a, c3 = a;
  c2[1] = 0x7F;
  c3[5] = 0x7F;
  REQUIRE(chunk.add(1, held(3, c2)).isOk());
  REQUIRE(chunk.add(2, held(0, b)).isOk());
  requireError(chunk.resolve(writable(out)), StatusCode::kProtocolError,
               "ranks 1 and 0 hold different final bits for element 0");
  requireError(filled(c, {held(3, a), held(2, c3), held(4, a)}).resolve(writable(out)),
               StatusCode::kProtocolError, "ranks 2 and 1 hold different final bits for element 1");

  // A commit beside a member without the whole result.
  requireError(filled(c, {held(4, a), kCommitted, held(2, a)}).resolve(writable(out)),
               StatusCode::kProtocolError,
               "rank 1 saw it committed, but rank 2 holds only 2 of its 4 result elements");

  // An output of the wrong size, or over another member's entry (rank 0's only in whole).
  Bytes both(32, 0x01), e1 = a, e2 = b;
  const Bytes before = both;
  const ResentChunk fine =
      filled(c, {{false, 0, writable(both).first(16)}, held(0, e1), held(0, e2)});
  Bytes small(12, 0xEE);
  requireError(fine.resolve(writable(small)), StatusCode::kInvalidArgument,
               "needs 16 bytes, not 12");
  requireError(fine.resolve(writable(e1)), StatusCode::kInvalidArgument,
               "would overwrite rank 1's entry");
  requireError(fine.resolve(writable(both).subspan(4, 16)), StatusCode::kInvalidArgument,
               "would overwrite rank 0's entry");
  CHECK(both == before);
  CHECK(out == Bytes(16, 0xEE));
  CHECK(small == Bytes(12, 0xEE));
  CHECK(e1 == a);
  CHECK(e2 == b);
}

}  // namespace
}  // namespace rs::failover
