// Failover's frames (core/wire/failover_frames.h): the dead set's bytes, FAILOVER and LOST built
// and read back, and how a FINAL and the REDUCE behind it say a resent chunk's n and r.
#include "core/wire/failover_frames.h"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/support/decoded_header.h"
#include "tests/support/require_error.h"

using rs::DataType;
using rs::GroupId;
using rs::ReduceOp;
using rs::Status;
using rs::StatusCode;
using rs::test::decodedHeader;
using rs::test::requireError;
using namespace rs::wire;

namespace {

// Chunk 33 of rank 4: 50 bf16 elements at offset 1000, max.
const ChunkFields kChunk{.group = GroupId{1, 2},
                         .rank = 4,
                         .seq = 9,
                         .chunk = 33,
                         .elemOffset = 1000,
                         .elemCount = 50,
                         .dtype = DataType::kBfloat16,
                         .op = ReduceOp::kMax};

}  // namespace

TEST_CASE("failover frames: a dead set's exact bytes, and back") {
  const std::vector<uint32_t> dead = {0, 2, 513, 1023};
  auto bytes = encodeDeadSet(dead);
  REQUIRE(bytes.isOk());
  REQUIRE(*bytes == std::vector<uint8_t>{0x00, 0x00, 0x02, 0x00, 0x01, 0x02, 0xFF, 0x03});
  std::vector<uint32_t> back;
  REQUIRE(decodeDeadSet(bytes->data(), bytes->size(), &back).isOk());
  REQUIRE(back == dead);

  std::vector<uint32_t> all(kMaxDeadReducers);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  bytes = encodeDeadSet(all);
  REQUIRE(bytes.isOk());
  REQUIRE(bytes->size() == 2048);
  REQUIRE(decodeDeadSet(bytes->data(), bytes->size(), &back).isOk());
  REQUIRE(back == all);
}

TEST_CASE("failover frames: a dead set that is not one is refused either way") {
  struct Case {
    std::vector<uint32_t> dead;
    const char* problem;
  };
  const Case cases[] = {
      {{}, "dead set: no reducers (expected 1..1024)"},
      {{1024}, "dead set: reducer 1024 at entry 0 (expected below 1024)"},
      {{3, 3}, "dead set: reducer 3 at entry 1 after 3 (expected strictly increasing)"},
      {{0, 5, 4}, "dead set: reducer 4 at entry 2 after 5 (expected strictly increasing)"},
  };
  for (const Case& c : cases) {
    INFO(c.problem);
    requireError(encodeDeadSet(c.dead).status(), StatusCode::kInvalidArgument, c.problem);
    std::vector<uint8_t> bytes;
    for (uint32_t r : c.dead) {
      bytes.push_back(static_cast<uint8_t>(r));
      bytes.push_back(static_cast<uint8_t>(r >> 8));
    }
    std::vector<uint32_t> out = {77};
    if (c.dead.empty()) {
      requireError(decodeDeadSet(bytes.data(), 0, &out), StatusCode::kProtocolError,
                   "dead set: 0 bytes (expected 2..2048, 2 a reducer)");
    } else {
      requireError(decodeDeadSet(bytes.data(), bytes.size(), &out), StatusCode::kProtocolError,
                   c.problem);
    }
    REQUIRE(out == std::vector<uint32_t>{77});  // untouched on failure
  }
  requireError(encodeDeadSet(std::vector<uint32_t>(1025)).status(), StatusCode::kInvalidArgument,
               "dead set: 1025 reducers (expected at most 1024)");
  const std::vector<uint8_t> odd = {1, 0, 2};
  std::vector<uint32_t> out;
  requireError(decodeDeadSet(odd.data(), odd.size(), &out), StatusCode::kProtocolError,
               "dead set: 3 bytes");
  const std::vector<uint8_t> tooLong(2050, 0);
  requireError(decodeDeadSet(tooLong.data(), tooLong.size(), &out), StatusCode::kProtocolError,
               "dead set: 2050 bytes");
}

TEST_CASE("failover frames: FAILOVER and LOST decode to what they were built from") {
  const GroupId group{0xAB, 0xCD};
  const std::vector<uint32_t> dead = {1, 6};
  auto failover = failoverFrame(group, 3, 4711, dead);
  REQUIRE(failover.isOk());
  FrameHeader h = decodedHeader(failover->header);
  REQUIRE(h.type == FrameType::kFailover);
  REQUIRE(h.group == group);
  REQUIRE(h.rank == 3);
  REQUIRE(h.chunk == 4711);
  REQUIRE(h.payloadLength == failover->payload.size());
  std::vector<uint32_t> back;
  REQUIRE(decodeDeadSet(failover->payload.data(), failover->payload.size(), &back).isOk());
  REQUIRE(back == dead);

  auto lost = lostFrame(group, 5, dead);
  REQUIRE(lost.isOk());
  h = decodedHeader(lost->header);
  REQUIRE(h.type == FrameType::kLost);
  REQUIRE(h.rank == 5);
  REQUIRE(h.chunk == 0);
  REQUIRE(lost->payload == failover->payload);

  // The generation rides in seq (proto/FAILOVER.md, "A reducer comes back"): 0 unless asked.
  REQUIRE(decodedHeader(failover->header).seq == 0);
  auto later = failoverFrame(group, 3, 4711, dead, 2);
  REQUIRE(later.isOk());
  REQUIRE(decodedHeader(later->header).seq == 2);
  REQUIRE(later->payload == failover->payload);
  auto lostLater = lostFrame(group, 5, dead, 7);
  REQUIRE(lostLater.isOk());
  REQUIRE(decodedHeader(lostLater->header).seq == 7);
  REQUIRE(decodedHeader(lostLater->header).chunk == 0);

  requireError(failoverFrame(group, 3, 0, {}).status(), StatusCode::kInvalidArgument,
               "dead set: no reducers");
  requireError(lostFrame(group, 3, std::vector<uint32_t>{2, 1}).status(),
               StatusCode::kInvalidArgument, "strictly increasing");
}

TEST_CASE("failover frames: a FINAL names n and r, and the REDUCE behind it the rest") {
  const ChunkFields& chunk = kChunk;
  const FrameHeader final = finalHeader(chunk, 20);
  FrameHeader h = decodedHeader(encodeHeader(final));
  REQUIRE(h.type == FrameType::kFinal);
  REQUIRE(h.elemOffset == 1000);  // the chunk's, as its REDUCE says
  REQUIRE(h.elemCount == 50);     // n
  REQUIRE(h.payloadLength == 40);
  REQUIRE(finalPrefix(h) == 20);  // r
  // Everything but the type and the payload is the chunk's REDUCE header.
  FrameHeader reduce = reduceHeader(chunk);
  reduce.type = FrameType::kFinal;
  reduce.payloadLength = 40;
  REQUIRE(encodeHeader(reduce) == encodeHeader(final));

  const FrameHeader rest = decodedHeader(encodeHeader(remainderHeader(h)));
  REQUIRE(rest.type == FrameType::kReduce);
  REQUIRE(rest.seq == 9);
  REQUIRE(rest.chunk == 33);
  REQUIRE(rest.rank == 4);
  REQUIRE(rest.elemOffset == 1020);
  REQUIRE(rest.elemCount == 30);
  REQUIRE(rest.payloadLength == 60);
  REQUIRE(rest.dtype == DataType::kBfloat16);
  REQUIRE(rest.op == ReduceOp::kMax);

  // The whole chunk final: no REDUCE follows (n - r = 0).
  const FrameHeader whole = decodedHeader(encodeHeader(finalHeader(chunk, 50)));
  REQUIRE(finalPrefix(whole) == whole.elemCount);
}

TEST_CASE("failover frames: COMMITTED is the chunk's REDUCE header with no payload") {
  const ChunkFields& chunk = kChunk;
  const FrameHeader h = decodedHeader(encodeHeader(committedHeader(chunk)));
  REQUIRE(h.type == FrameType::kCommitted);
  REQUIRE(h.payloadLength == 0);
  FrameHeader reduce = reduceHeader(chunk);
  reduce.type = FrameType::kCommitted;
  reduce.payloadLength = 0;
  REQUIRE(encodeHeader(reduce) == encodeHeader(h));
}
