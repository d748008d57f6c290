// The data-plane frame format: round trips, the exact bytes, and one case per malformed field.
#include "core/wire/frame.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "core/wire/crc32c.h"
#include "tests/support/hex_of.h"

using Catch::Matchers::Contains;
using rs::DataType;
using rs::GroupId;
using rs::ReduceOp;
using rs::Status;
using rs::StatusCode;
using namespace rs::wire;
using rs::test::hexOf;

namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// A control frame of `type` naming `group` and `rank`, its other fields zero.
FrameHeader controlHeader(FrameType type, GroupId group, uint32_t rank) {
  FrameHeader h;
  h.type = type;
  h.group = group;
  h.rank = rank;
  return h;
}

FrameHeader reduceHeader() {
  FrameHeader h;
  h.type = FrameType::kReduce;
  h.group = GroupId{0x1122334455667788ull, 0x99AABBCCDDEEFF00ull};
  h.rank = 3;
  h.seq = 41;
  h.chunk = 1234567;
  h.elemOffset = 1u << 20;
  h.elemCount = 262144;
  h.dtype = DataType::kFloat32;
  h.op = ReduceOp::kSum;
  h.payloadLength = 262144 * 4;
  return h;
}

// reduceHeader()'s chunk in a frame of `type` with `payloadLength` bytes.
FrameHeader chunkFrame(FrameType type, uint32_t payloadLength) {
  FrameHeader h = reduceHeader();
  h.type = type;
  h.payloadLength = payloadLength;
  return h;
}

FrameHeader resultHeader() {
  FrameHeader h = chunkFrame(FrameType::kResult, 0);
  h.dtype = DataType::kBfloat16;
  h.op = ReduceOp::kAvg;
  h.payloadLength = h.elemCount * 2;
  return h;
}

FrameHeader helloHeader() {
  FrameHeader h;
  h.type = FrameType::kHello;
  h.group = GroupId{7, 8};
  h.rank = 5;
  h.dtype = DataType::kInt8;  // byte 0: control frames name no data
  h.op = ReduceOp::kSum;
  h.payloadLength = kHelloPayloadSize;
  return h;
}

FrameHeader helloAckHeader() {
  FrameHeader h = helloHeader();
  h.type = FrameType::kHelloAck;
  h.payloadLength = kHelloAckPayloadSize;
  return h;
}

FrameHeader challengeHeader() {
  FrameHeader h;
  h.type = FrameType::kChallenge;
  h.payloadLength = kChallengePayloadSize;
  return h;
}

FrameHeader heartbeatHeader() {
  return controlHeader(FrameType::kHeartbeat, GroupId{11, 12}, 4);
}

FrameHeader errorHeader(FrameType type = FrameType::kError) {
  FrameHeader h = controlHeader(type, GroupId{9, 10}, 1);
  h.status = static_cast<uint32_t>(StatusCode::kResourceExhausted);
  h.seq = 12;  // names the failed collective
  h.chunk = 99;
  h.payloadLength = 17;
  return h;
}

// RECEIVED and COMMIT: the header alone, the watermark in chunk.
FrameHeader watermarkHeader(FrameType type) {
  FrameHeader h = controlHeader(type, GroupId{11, 12}, 6);
  h.chunk = 4711;
  return h;
}

// FINAL: the chunk of reduceHeader() with its first 1000 elements final.
FrameHeader finalHeader() { return chunkFrame(FrameType::kFinal, 1000 * 4); }

// COMMITTED: the chunk of reduceHeader(), seen committed.
FrameHeader committedHeader() { return chunkFrame(FrameType::kCommitted, 0); }

// FAILOVER (the watermark in chunk) and LOST: a dead set of three reducers.
FrameHeader deadSetHeader(FrameType type) {
  FrameHeader h = controlHeader(type, GroupId{13, 14}, 2);
  h.chunk = type == FrameType::kFailover ? 4711 : 0;
  h.payloadLength = 3 * kDeadSetEntryBytes;
  return h;
}

// JOIN_OFFER: a header naming the group and rank alone (JOIN and JOIN_AT: watermarkHeader's
// shape, a running chunk number in chunk).
FrameHeader joinOfferHeader() {
  FrameHeader h = heartbeatHeader();
  h.type = FrameType::kJoinOffer;
  return h;
}

// FABRIC_OFFER and FABRIC_ACCEPT: a grant of 60 bytes (40 fixed, an 11-byte provider name, a
// 9-byte address); FABRIC_DECLINE: a 25-byte reason.
FrameHeader fabricHeader(FrameType type) {
  FrameHeader h = controlHeader(type, GroupId{15, 16}, 3);
  h.payloadLength = type == FrameType::kFabricDecline ? 25 : 60;
  return h;
}

std::vector<FrameHeader> validHeaders() {
  return {reduceHeader(),
          resultHeader(),
          helloHeader(),
          helloAckHeader(),
          challengeHeader(),
          heartbeatHeader(),
          errorHeader(FrameType::kError),
          errorHeader(FrameType::kAbort),
          watermarkHeader(FrameType::kReceived),
          watermarkHeader(FrameType::kCommit),
          deadSetHeader(FrameType::kFailover),
          deadSetHeader(FrameType::kLost),
          finalHeader(),
          committedHeader(),
          joinOfferHeader(),
          watermarkHeader(FrameType::kJoin),
          watermarkHeader(FrameType::kJoinAt),
          fabricHeader(FrameType::kFabricOffer),
          fabricHeader(FrameType::kFabricAccept),
          fabricHeader(FrameType::kFabricDecline)};
}

void requireSameHeader(const FrameHeader& a, const FrameHeader& b) {
  REQUIRE(a.type == b.type);
  REQUIRE(a.flags == b.flags);
  REQUIRE(a.group == b.group);
  REQUIRE(a.rank == b.rank);
  REQUIRE(a.status == b.status);
  REQUIRE(a.seq == b.seq);
  REQUIRE(a.chunk == b.chunk);
  REQUIRE(a.elemOffset == b.elemOffset);
  REQUIRE(a.elemCount == b.elemCount);
  REQUIRE(a.dtype == b.dtype);
  REQUIRE(a.op == b.op);
  REQUIRE(a.payloadLength == b.payloadLength);
}

Status decode(const HeaderBytes& bytes, FrameHeader* out = nullptr,
              DecodeLimits limits = DecodeLimits{}) {
  FrameHeader scratch;
  return decodeHeader(bytes.data(), bytes.size(), limits, out ? out : &scratch);
}

Status decode(const FrameHeader& h, DecodeLimits limits = DecodeLimits{}) {
  return decode(encodeHeader(h), nullptr, limits);
}

// `h` decodes from its bytes as itself.
void requireRoundTrip(const FrameHeader& h) {
  FrameHeader out;
  REQUIRE(decode(encodeHeader(h), &out).isOk());
  requireSameHeader(out, h);
}

// Little-endian stores into encoded bytes, then a fresh checksum, so that a test reaches the
// field check it means to test rather than the checksum.
void put(HeaderBytes& b, size_t off, uint64_t v, size_t width) {
  for (size_t i = 0; i < width; ++i) b[off + i] = static_cast<uint8_t>(v >> (8 * i));
}
void reseal(HeaderBytes& b) { put(b, 68, crc32c(b.data(), 68), 4); }
HeaderBytes patched(const FrameHeader& h, size_t off, uint64_t v, size_t width) {
  HeaderBytes b = encodeHeader(h);
  put(b, off, v, width);
  reseal(b);
  return b;
}

void requireProtocolError(const Status& s, std::string_view fragment) {
  INFO("status: " << s.toString());
  REQUIRE_FALSE(s.isOk());
  REQUIRE(s.code() == StatusCode::kProtocolError);
  REQUIRE_THAT(s.message(), Contains(std::string(fragment)));
}

// `h` with each of `lengths` as its payloadLength is refused, naming the one `type` must have.
void requirePayloadLengthRefused(FrameHeader h, std::string_view type,
                                 std::initializer_list<uint32_t> lengths, uint32_t expected) {
  for (uint32_t n : lengths) {
    h.payloadLength = n;
    requireProtocolError(decode(h), std::string(type) + " frame: payloadLength " +
                                        std::to_string(n) + " (expected " +
                                        std::to_string(expected) + ")");
  }
}

// A header field by name, place and width.
struct Field {
  const char* name;
  size_t off;
  size_t width;
};

// Each field of `h` set to 1, and its highest byte to 0x80, is refused naming the field.
void requireZeroFields(const FrameHeader& h, std::initializer_list<Field> fields) {
  const std::string prefix = std::string(frameTypeName(h.type)) + " frame: ";
  for (const Field& f : fields) {
    INFO(frameTypeName(h.type) << " " << f.name);
    requireProtocolError(decode(patched(h, f.off, 1, f.width)), prefix + f.name + " 1 (expected 0)");
    requireProtocolError(decode(patched(h, f.off + f.width - 1, 0x80, 1)), prefix + f.name);
  }
}

// A frame that names its chunk as a REDUCE does (FINAL, COMMITTED) is refused as a REDUCE
// would be for an unknown dtype or op, no elements, or a status.
void requireDataFrameRules(const FrameHeader& h) {
  const std::string prefix = std::string(frameTypeName(h.type)) + " frame: ";
  requireProtocolError(decode(patched(h, 60, 12, 1)), prefix + "dtype 12");
  requireProtocolError(decode(patched(h, 61, 5, 1)), prefix + "op 5");
  requireProtocolError(decode(patched(h, 56, 0, 4)), prefix + "elemCount 0");
  requireProtocolError(decode(patched(h, 28, 1, 4)), prefix + "status 1");
}

}  // namespace

// --- Encoding --------------------------------------------------------------------------

TEST_CASE("frame: the magic is \"RSF1\" on the wire") {
  HeaderBytes b = encodeHeader(reduceHeader());
  REQUIRE(std::memcmp(b.data(), "RSF1", 4) == 0);
  REQUIRE(b[4] == kProtocolVersion);
}

TEST_CASE("frame: golden bytes of a REDUCE header (proto/WIRE.md example)") {
  FrameHeader h;
  h.type = FrameType::kReduce;
  h.group = GroupId{0x0102030405060708ull, 0x090A0B0C0D0E0F10ull};
  h.rank = 2;
  h.seq = 5;
  h.chunk = 17;
  h.elemOffset = 1024;
  h.elemCount = 256;
  h.dtype = DataType::kFloat32;
  h.op = ReduceOp::kSum;
  h.payloadLength = 1024;
  HeaderBytes b = encodeHeader(h);
  REQUIRE(hexOf(b.data(), b.size()) ==
          "52534631"          // magic
          "03" "03" "0000"    // version, type, flags
          "0807060504030201"  // group.hi
          "100f0e0d0c0b0a09"  // group.lo
          "02000000"          // rank
          "00000000"          // status
          "0500000000000000"  // seq
          "1100000000000000"  // chunk
          "0004000000000000"  // elemOffset
          "00010000"          // elemCount
          "07" "00" "0000"    // dtype, op, reserved
          "00040000"          // payloadLength
          + hexOf(b.data() + 68, 4));
  const uint32_t crc = crc32c(b.data(), 68);
  REQUIRE(b[68] == (crc & 0xFF));
  REQUIRE(b[71] == (crc >> 24));
  REQUIRE(crc == 0x452cca7cu);  // pinned so that a change to the layout cannot go unnoticed
}

TEST_CASE("frame: every field lands at its documented offset, little-endian") {
  FrameHeader h;
  h.type = FrameType::kResult;
  h.flags = 0;
  h.group = GroupId{0xA1A2A3A4A5A6A7A8ull, 0xB1B2B3B4B5B6B7B8ull};
  h.rank = 0xC1C2C3C4;
  h.seq = 0xD1D2D3D4D5D6D7D8ull;
  h.chunk = 0xE1E2E3E4E5E6E7E8ull;
  h.elemOffset = 0x0102030405060708ull;
  h.elemCount = 0x00000203;
  h.dtype = DataType::kBfloat16;
  h.op = ReduceOp::kAvg;
  h.payloadLength = 0x406;
  HeaderBytes b = encodeHeader(h);
  auto u64at = [&](size_t off) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v << 8 | b[off + i];
    return v;
  };
  REQUIRE(b[5] == 4);
  REQUIRE(u64at(8) == h.group.hi);
  REQUIRE(u64at(16) == h.group.lo);
  REQUIRE((u64at(24) & 0xFFFFFFFF) == h.rank);
  REQUIRE(u64at(32) == h.seq);
  REQUIRE(u64at(40) == h.chunk);
  REQUIRE(u64at(48) == h.elemOffset);
  REQUIRE((u64at(56) & 0xFFFFFFFF) == h.elemCount);
  REQUIRE(b[60] == 9);
  REQUIRE(b[61] == 4);
  REQUIRE(b[62] == 0);
  REQUIRE(b[63] == 0);
  REQUIRE((u64at(64) & 0xFFFFFFFF) == h.payloadLength);
  REQUIRE(decode(b).isOk());
}

TEST_CASE("frame: both encodeHeader overloads write the same bytes") {
  for (const FrameHeader& h : validHeaders()) {
    uint8_t raw[kHeaderSize + 2];
    std::memset(raw, 0xEE, sizeof(raw));
    encodeHeader(h, raw + 1);
    HeaderBytes b = encodeHeader(h);
    REQUIRE(std::memcmp(raw + 1, b.data(), kHeaderSize) == 0);
    REQUIRE(raw[0] == 0xEE);  // nothing written outside the 72 bytes
    REQUIRE(raw[kHeaderSize + 1] == 0xEE);
  }
}

// --- Round trips -----------------------------------------------------------------------

TEST_CASE("frame: every frame type round-trips") {
  for (const FrameHeader& h : validHeaders()) {
    INFO("type " << frameTypeName(h.type));
    HeaderBytes b = encodeHeader(h);
    FrameHeader out;
    Status s = decode(b, &out);
    INFO(s.toString());
    REQUIRE(s.isOk());
    requireSameHeader(out, h);
    REQUIRE(encodeHeader(out) == b);
  }
}

TEST_CASE("frame: REDUCE and RESULT round-trip every dtype and op") {
  for (FrameType type : {FrameType::kReduce, FrameType::kResult}) {
    for (int d = 0; d < rs::kNumDataTypes; ++d) {
      for (int o = 0; o < rs::kNumReduceOps; ++o) {
        FrameHeader h = reduceHeader();
        h.type = type;
        h.dtype = static_cast<DataType>(d);
        h.op = static_cast<ReduceOp>(o);
        h.elemCount = 1000;
        h.payloadLength = static_cast<uint32_t>(1000 * rs::dataTypeSize(h.dtype));
        requireRoundTrip(h);
      }
    }
  }
}

TEST_CASE("frame: extreme field values round-trip") {
  FrameHeader h = reduceHeader();
  h.group = GroupId{kU64Max, kU64Max};
  h.rank = 0xFFFFFFFF;
  h.seq = kU64Max;
  h.chunk = kU64Max;
  h.dtype = DataType::kUint8;
  h.elemCount = 1;
  h.payloadLength = 1;
  h.elemOffset = kU64Max - 1;  // the last element that still fits
  requireRoundTrip(h);

  FrameHeader zero = reduceHeader();
  zero.group = GroupId{};
  zero.rank = 0;
  zero.seq = 0;
  zero.chunk = 0;
  zero.elemOffset = 0;
  requireRoundTrip(zero);
}

TEST_CASE("frame: a failed decode leaves the output untouched") {
  FrameHeader out = helloHeader();
  HeaderBytes b = encodeHeader(reduceHeader());
  b[0] ^= 1;
  REQUIRE_FALSE(decode(b, &out).isOk());
  requireSameHeader(out, helloHeader());
}

TEST_CASE("frame: frameTypeName") {
  REQUIRE(frameTypeName(FrameType::kHello) == "HELLO");
  REQUIRE(frameTypeName(FrameType::kHelloAck) == "HELLO_ACK");
  REQUIRE(frameTypeName(FrameType::kReduce) == "REDUCE");
  REQUIRE(frameTypeName(FrameType::kResult) == "RESULT");
  REQUIRE(frameTypeName(FrameType::kError) == "ERROR");
  REQUIRE(frameTypeName(FrameType::kAbort) == "ABORT");
  REQUIRE(frameTypeName(FrameType::kChallenge) == "CHALLENGE");
  REQUIRE(frameTypeName(FrameType::kHeartbeat) == "HEARTBEAT");
  REQUIRE(frameTypeName(FrameType::kReceived) == "RECEIVED");
  REQUIRE(frameTypeName(FrameType::kCommit) == "COMMIT");
  REQUIRE(frameTypeName(FrameType::kFailover) == "FAILOVER");
  REQUIRE(frameTypeName(FrameType::kLost) == "LOST");
  REQUIRE(frameTypeName(FrameType::kJoinOffer) == "JOIN_OFFER");
  REQUIRE(frameTypeName(FrameType::kJoin) == "JOIN");
  REQUIRE(frameTypeName(FrameType::kJoinAt) == "JOIN_AT");
  REQUIRE(frameTypeName(FrameType::kFinal) == "FINAL");
  REQUIRE(frameTypeName(FrameType::kCommitted) == "COMMITTED");
  REQUIRE(frameTypeName(FrameType::kFabricOffer) == "FABRIC_OFFER");
  REQUIRE(frameTypeName(FrameType::kFabricAccept) == "FABRIC_ACCEPT");
  REQUIRE(frameTypeName(FrameType::kFabricDecline) == "FABRIC_DECLINE");
  REQUIRE(frameTypeName(static_cast<FrameType>(0)) == "UNKNOWN");
  REQUIRE(frameTypeName(static_cast<FrameType>(21)) == "UNKNOWN");
}

// --- Malformed: fields every type shares -----------------------------------------------

TEST_CASE("frame: size other than 72 bytes is rejected") {
  std::vector<uint8_t> buf(kHeaderSize + 1, 0);
  HeaderBytes valid = encodeHeader(reduceHeader());
  std::memcpy(buf.data(), valid.data(), kHeaderSize);
  FrameHeader out;
  for (size_t n : {size_t{0}, size_t{1}, kHeaderSize - 1, kHeaderSize + 1}) {
    Status s = decodeHeader(buf.data(), n, DecodeLimits{}, &out);
    requireProtocolError(s, std::to_string(n) + " bytes (expected exactly 72)");
  }
  REQUIRE(decodeHeader(buf.data(), kHeaderSize, DecodeLimits{}, &out).isOk());
}

TEST_CASE("frame: bad magic names both values") {
  HeaderBytes b = patched(reduceHeader(), 0, 0x12345678, 4);
  requireProtocolError(decode(b), "bad magic 0x12345678 (expected 0x31465352 'RSF1')");
  // A peer speaking HTTP shows up as text.
  std::memcpy(b.data(), "GET ", 4);
  reseal(b);
  requireProtocolError(decode(b), "bad magic 0x20544547 'GET '");
  // Byte-swapped magic (a big-endian encoder) is rejected too.
  requireProtocolError(decode(patched(reduceHeader(), 0, 0x52534631, 4)), "bad magic");
}

TEST_CASE("frame: unsupported version") {
  requireProtocolError(decode(patched(reduceHeader(), 4, 0, 1)),
                       "unsupported version 0 (expected 3)");
  // Version 1 had no CHALLENGE and no authentication, version 2 no HEARTBEAT, RECEIVED and
  // COMMIT: a reducer and a worker of such releases meet on the first frame, and the message
  // says so.
  requireProtocolError(decode(patched(reduceHeader(), 4, 1, 1)),
                       "unsupported version 1 (expected 3)");
  requireProtocolError(decode(patched(challengeHeader(), 4, 2, 1)),
                       "unsupported version 2 (expected 3): the peer runs another release of "
                       "the Reduction Server, and reducers and workers must speak one wire "
                       "version");
  requireProtocolError(decode(patched(reduceHeader(), 4, 4, 1)),
                       "unsupported version 4 (expected 3)");
  requireProtocolError(decode(patched(reduceHeader(), 4, 255, 1)), "unsupported version 255");
}

TEST_CASE("frame: frame type out of range") {
  for (uint64_t t : {0, 21, 22, 255}) {
    requireProtocolError(decode(patched(reduceHeader(), 5, t, 1)),
                         "unknown type " + std::to_string(t) + " (expected 1..20)");
  }
}

TEST_CASE("frame: every unknown flag bit is rejected") {
  for (int bit = 0; bit < 16; ++bit) {
    const uint16_t flag = static_cast<uint16_t>(1u << bit);
    if (flag & kKnownFlags) continue;
    Status s = decode(patched(reduceHeader(), 6, flag, 2));
    requireProtocolError(s, "unknown flag bits");
  }
  requireProtocolError(decode(patched(reduceHeader(), 6, 0x8010, 2)),
                       "unknown flag bits 0x8000 in flags 0x8010 (known bits 0x001f)");
  requireProtocolError(decode(patched(reduceHeader(), 6, 0x0020, 2)),
                       "unknown flag bits 0x0020 in flags 0x0020 (known bits 0x001f)");
  requireProtocolError(decode(patched(helloHeader(), 6, 0x8001, 2)),
                       "unknown flag bits 0x8000 in flags 0x8001");
}

TEST_CASE("frame: HELLO's flags ride on HELLO only, alone or together") {
  const uint16_t both = kFlagDeterministic | kFlagFp64Accumulator;
  for (uint16_t flags : {kFlagDeterministic, kFlagFp64Accumulator, kFlagLane, kFlagRejoin, both,
                         static_cast<uint16_t>(both | kFlagLane),
                         static_cast<uint16_t>(both | kFlagRejoin)}) {
    FrameHeader hello = helloHeader();
    hello.flags = flags;
    FrameHeader back;
    REQUIRE(decode(encodeHeader(hello), &back).isOk());
    REQUIRE(back.flags == flags);
    REQUIRE(encodeHeader(back) == encodeHeader(hello));
  }
  const std::pair<uint16_t, std::string> named[] = {
      {kFlagDeterministic, "flag 0x0001 (deterministic)"},
      {kFlagFp64Accumulator, "flag 0x0002 (fp64 accumulator)"},
      {kFlagLane, "flag 0x0004 (lane)"},
      {kFlagRejoin, "flag 0x0008 (rejoin)"}};
  for (const auto& [flag, name] : named) {
    for (const FrameHeader& h : validHeaders()) {
      if (h.type == FrameType::kHello) continue;
      requireProtocolError(decode(patched(h, 6, flag, 2)),
                           name + " on a " + std::string(frameTypeName(h.type)) + " frame");
    }
  }
  // A lane goes to a survivor, a rejoin to the reducer that was lost: never both.
  requireProtocolError(decode(patched(helloHeader(), 6, kFlagLane | kFlagRejoin, 2)),
                       "flags 0x000c (lane and rejoin together");
}

TEST_CASE("frame: the fabric flag rides on HELLO, REDUCE and RESULT only") {
  for (const FrameHeader& h : validHeaders()) {
    const bool carries = h.type == FrameType::kHello || h.type == FrameType::kReduce ||
                         h.type == FrameType::kResult;
    FrameHeader flagged = h;
    flagged.flags |= kFlagFabric;
    if (carries) {
      FrameHeader back;
      REQUIRE(decode(encodeHeader(flagged), &back).isOk());
      REQUIRE(back.flags == flagged.flags);
      REQUIRE(encodeHeader(back) == encodeHeader(flagged));
    } else {
      requireProtocolError(decode(patched(h, 6, kFlagFabric, 2)),
                           "flag 0x0010 (fabric) on a " + std::string(frameTypeName(h.type)) +
                               " frame (only HELLO, REDUCE and RESULT may carry it)");
    }
  }
  // With the HELLO-only flags, on a HELLO (a deterministic group's stream asks for the fabric).
  FrameHeader hello = helloHeader();
  hello.flags = kFlagFabric | kFlagDeterministic;
  FrameHeader back;
  REQUIRE(decode(encodeHeader(hello), &back).isOk());
}

TEST_CASE("frame: reserved bytes must be zero") {
  requireProtocolError(decode(patched(reduceHeader(), 62, 1, 2)),
                       "reserved 0x0001 at bytes 62..63 (expected 0)");
  requireProtocolError(decode(patched(reduceHeader(), 62, 0x8000, 2)), "reserved 0x8000");
}

TEST_CASE("frame: checksum mismatch names both values") {
  HeaderBytes b = encodeHeader(reduceHeader());
  const uint32_t good = crc32c(b.data(), 68);
  put(b, 68, good ^ 0x00010000, 4);
  char expected[64];
  std::snprintf(expected, sizeof(expected), "(expected 0x%08x", good);
  requireProtocolError(decode(b), "checksum");
  requireProtocolError(decode(b), expected);
  // A field changed without a fresh checksum.
  HeaderBytes c = encodeHeader(reduceHeader());
  c[24] ^= 0x01;  // rank
  requireProtocolError(decode(c), "checksum");
}

TEST_CASE("frame: every single-bit flip of a valid header is rejected") {
  for (const FrameHeader& h : validHeaders()) {
    const HeaderBytes valid = encodeHeader(h);
    for (size_t bit = 0; bit < kHeaderSize * 8; ++bit) {
      HeaderBytes b = valid;
      b[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      Status s = decode(b);
      INFO("type " << frameTypeName(h.type) << " bit " << bit);
      REQUIRE_FALSE(s.isOk());
      REQUIRE(s.code() == StatusCode::kProtocolError);
      REQUIRE_FALSE(s.message().empty());
    }
  }
}

TEST_CASE("frame: with a fresh checksum, a flipped bit is caught by a field check or re-encodes") {
  // The checksum hides field checks from the test above; here each flip is resealed so that
  // the field checks alone decide. Whatever decodes must re-encode to the same bytes.
  for (const FrameHeader& h : validHeaders()) {
    const HeaderBytes valid = encodeHeader(h);
    for (size_t bit = 0; bit < 68 * 8; ++bit) {
      HeaderBytes b = valid;
      b[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      reseal(b);
      FrameHeader out;
      Status s = decode(b, &out);
      INFO("type " << frameTypeName(h.type) << " bit " << bit << ": " << s.toString());
      if (s.isOk()) {
        REQUIRE(encodeHeader(out) == b);
      } else {
        REQUIRE(s.code() == StatusCode::kProtocolError);
      }
      // Magic, version, flags and reserved bits never pass, but the deterministic, fp64
      // accumulator, lane and rejoin flags (bits 48 to 51) on a HELLO and the fabric flag (bit
      // 52) on a HELLO, REDUCE or RESULT. (A type bit may name another valid type; then that
      // type's rules decide.)
      const size_t byte = bit / 8;
      const bool helloFlag = h.type == FrameType::kHello && bit >= 48 && bit <= 51;
      const bool fabricFlag = bit == 52 && (h.type == FrameType::kHello ||
                                            h.type == FrameType::kReduce ||
                                            h.type == FrameType::kResult);
      if ((byte < 5 || byte == 6 || byte == 7 || byte == 62 || byte == 63) && !helloFlag &&
          !fabricFlag)
        REQUIRE_FALSE(s.isOk());
    }
  }
}

// --- Malformed: REDUCE and RESULT ------------------------------------------------------

TEST_CASE("frame: data frame dtype out of range") {
  for (FrameType t : {FrameType::kReduce, FrameType::kResult}) {
    FrameHeader h = reduceHeader();
    h.type = t;
    requireProtocolError(decode(patched(h, 60, 12, 1)), "dtype 12 (expected 0..11)");
    requireProtocolError(decode(patched(h, 60, 255, 1)), "dtype 255");
  }
  requireProtocolError(decode(patched(resultHeader(), 60, 12, 1)), "RESULT frame: dtype 12");
}

TEST_CASE("frame: data frame op out of range") {
  for (FrameType t : {FrameType::kReduce, FrameType::kResult}) {
    FrameHeader h = reduceHeader();
    h.type = t;
    requireProtocolError(decode(patched(h, 61, 5, 1)), "op 5 (expected 0..4)");
    requireProtocolError(decode(patched(h, 61, 200, 1)), "op 200");
  }
}

TEST_CASE("frame: data frame elemCount 0") {
  FrameHeader h = reduceHeader();
  h.elemCount = 0;
  h.payloadLength = 0;
  requireProtocolError(decode(h), "REDUCE frame: elemCount 0 (expected at least 1)");
}

TEST_CASE("frame: data frame payloadLength off by one") {
  FrameHeader h = reduceHeader();  // fp32
  for (int64_t delta : {-1, 1, -4, 4}) {
    FrameHeader b = h;
    b.payloadLength = static_cast<uint32_t>(h.payloadLength + delta);
    requireProtocolError(decode(b), "expected elemCount 262144 x 4 bytes of fp32 = 1048576");
  }
  h.payloadLength = 0;
  requireProtocolError(decode(h), "payloadLength 0");
}

TEST_CASE("frame: data frame payloadLength per dtype size") {
  FrameHeader h = reduceHeader();
  h.elemCount = 3;
  h.dtype = DataType::kFloat64;
  h.payloadLength = 24;
  REQUIRE(decode(h).isOk());
  h.payloadLength = 12;  // fp32's size for an fp64 frame
  requireProtocolError(decode(h), "x 8 bytes of fp64 = 24");
  h.dtype = DataType::kFloat16;
  h.payloadLength = 6;
  REQUIRE(decode(h).isOk());
}

TEST_CASE("frame: elemCount x size that overflows 32 bits cannot match a truncated length") {
  FrameHeader h = reduceHeader();
  h.dtype = DataType::kFloat64;
  h.elemCount = 0xFFFFFFFF;
  h.payloadLength = static_cast<uint32_t>(uint64_t{0xFFFFFFFF} * 8);  // 0xFFFFFFF8 once truncated
  DecodeLimits unlimited{0xFFFFFFFF};
  requireProtocolError(decode(encodeHeader(h), nullptr, unlimited), "= 34359738360");
  h.dtype = DataType::kInt32;
  h.elemCount = 0x40000000;
  h.payloadLength = 0;  // 2^32 truncated
  requireProtocolError(decode(encodeHeader(h), nullptr, unlimited), "= 4294967296");
}

TEST_CASE("frame: payload limit is inclusive") {
  DecodeLimits limits{4096};
  FrameHeader h = reduceHeader();
  h.dtype = DataType::kUint8;
  h.elemCount = 4096;
  h.payloadLength = 4096;
  REQUIRE(decode(encodeHeader(h), nullptr, limits).isOk());
  h.elemCount = 4097;
  h.payloadLength = 4097;
  requireProtocolError(decode(encodeHeader(h), nullptr, limits),
                       "payloadLength 4097 (expected at most 4096");
  // The default limit is the reducer's --max-chunk default, 8 MiB.
  h.dtype = DataType::kFloat32;
  h.elemCount = (8u << 20) / 4;
  h.payloadLength = 8u << 20;
  REQUIRE(decode(h).isOk());
  h.elemCount += 1;
  h.payloadLength += 4;
  requireProtocolError(decode(h), "expected at most 8388608");
}

TEST_CASE("frame: an fp8 element counts for 2 bytes against the payload limit") {
  // Its fp32 accumulator is 4 bytes: at most half the limit in elements keeps it within twice
  // the limit, which the reducer's memory floor allows per chunk (dtype.h).
  DecodeLimits limits{4096};
  for (DataType t : {DataType::kFloat8e4m3, DataType::kFloat8e5m2}) {
    for (FrameType type : {FrameType::kReduce, FrameType::kResult}) {
      FrameHeader h = reduceHeader();
      h.type = type;
      h.dtype = t;
      h.elemCount = 2048;
      h.payloadLength = 2048;
      REQUIRE(decode(encodeHeader(h), nullptr, limits).isOk());
      h.elemCount = 2049;
      h.payloadLength = 2049;
      requireProtocolError(decode(encodeHeader(h), nullptr, limits),
                           "elemCount 2049 of " + std::string(rs::dataTypeName(t)) +
                               " counts as 4098 bytes, 2 an element (expected at most 4096");
    }
  }
  // uint8, the same size on the wire, counts for its size.
  FrameHeader h = reduceHeader();
  h.dtype = DataType::kUint8;
  h.elemCount = 4096;
  h.payloadLength = 4096;
  REQUIRE(decode(encodeHeader(h), nullptr, limits).isOk());
}

TEST_CASE("frame: elemOffset + elemCount overflow") {
  FrameHeader h = reduceHeader();
  h.elemOffset = kU64Max - h.elemCount;
  REQUIRE(decode(h).isOk());
  h.elemOffset += 1;
  requireProtocolError(decode(h), "overflows 64 bits");
  h.elemOffset = kU64Max;
  requireProtocolError(decode(h), "elemOffset 18446744073709551615 + elemCount 262144");
}

TEST_CASE("frame: data frame status must be 0") {
  FrameHeader h = resultHeader();
  h.status = 1;
  requireProtocolError(decode(h), "RESULT frame: status 1 (expected 0)");
}

// --- Malformed: HELLO and HELLO_ACK ----------------------------------------------------

TEST_CASE("frame: HELLO payloadLength must be exact") {
  requirePayloadLengthRefused(helloHeader(), "HELLO", {0u, 48u, 80u, 212u, 215u, 217u, 1024u},
                              216);
}

TEST_CASE("frame: CHALLENGE payloadLength must be exact") {
  requirePayloadLengthRefused(challengeHeader(), "CHALLENGE", {0u, 39u, 41u, 80u}, 40);
}

TEST_CASE("frame: HELLO_ACK payloadLength must be exact") {
  requirePayloadLengthRefused(helloAckHeader(), "HELLO_ACK", {0u, 15u, 17u, 48u}, 16);
}

TEST_CASE("frame: HEARTBEAT is a header alone") {
  requirePayloadLengthRefused(heartbeatHeader(), "HEARTBEAT", {1u, 16u, 72u}, 0);
  // Any group and rank: the stream's, which its receiver checks.
  FrameHeader h = heartbeatHeader();
  h.rank = 0xFFFFFFFF;
  h.group = GroupId{kU64Max, kU64Max};
  requireRoundTrip(h);
}

TEST_CASE("frame: HELLO, HELLO_ACK, CHALLENGE and HEARTBEAT data fields must be zero") {
  for (const FrameHeader& h :
       {helloHeader(), helloAckHeader(), challengeHeader(), heartbeatHeader()})
    requireZeroFields(h, {{"seq", 32, 8},
                          {"chunk", 40, 8},
                          {"elemOffset", 48, 8},
                          {"elemCount", 56, 4},
                          {"status", 28, 4},
                          {"dtype", 60, 1},
                          {"op", 61, 1}});
}

TEST_CASE("frame: HELLO may carry any group and rank") {
  FrameHeader h = helloHeader();
  h.rank = 0xFFFFFFFF;
  h.group = GroupId{kU64Max, 0};
  REQUIRE(decode(h).isOk());
}

// --- Malformed: ERROR and ABORT --------------------------------------------------------

TEST_CASE("frame: ERROR and ABORT need a failure status") {
  for (FrameType t : {FrameType::kError, FrameType::kAbort}) {
    FrameHeader h = errorHeader(t);
    const std::string prefix = std::string(frameTypeName(t)) + " frame: ";
    for (uint32_t code : {0u, 10u, 0xFFFFFFFFu}) {
      h.status = code;
      requireProtocolError(decode(h), prefix + "status " + std::to_string(code) +
                                          " (expected a failure code 1..9)");
    }
    for (uint32_t code = 1; code <= 9; ++code) {
      h.status = code;
      REQUIRE(decode(h).isOk());
    }
  }
}

TEST_CASE("frame: ERROR and ABORT message length limit") {
  for (FrameType t : {FrameType::kError, FrameType::kAbort}) {
    FrameHeader h = errorHeader(t);
    h.payloadLength = 0;
    REQUIRE(decode(h).isOk());
    h.payloadLength = kMaxErrorMessageBytes;
    REQUIRE(decode(h).isOk());
    h.payloadLength = kMaxErrorMessageBytes + 1;
    requireProtocolError(decode(h), "payloadLength 1025 (expected at most 1024)");
    h.payloadLength = 0xFFFFFFFF;
    requireProtocolError(decode(h), "payloadLength 4294967295");
  }
}

TEST_CASE("frame: ERROR and ABORT data fields must be zero, seq and chunk may be set") {
  struct Field {
    const char* name;
    size_t off;
    size_t width;
  };
  const Field fields[] = {{"elemOffset", 48, 8}, {"elemCount", 56, 4}, {"dtype", 60, 1},
                          {"op", 61, 1}};
  for (FrameType t : {FrameType::kError, FrameType::kAbort}) {
    FrameHeader h = errorHeader(t);
    for (const Field& f : fields) {
      requireProtocolError(decode(patched(h, f.off, 3, f.width)),
                           std::string(frameTypeName(t)) + " frame: " + f.name + " 3 (expected 0)");
    }
    h.seq = kU64Max;
    h.chunk = kU64Max;
    REQUIRE(decode(h).isOk());
  }
}

// --- Malformed: RECEIVED and COMMIT ---------------------------------------------------

TEST_CASE("frame: RECEIVED, COMMIT, JOIN and JOIN_AT are a header alone, chunk is their number") {
  for (FrameType t : {FrameType::kReceived, FrameType::kCommit, FrameType::kJoin,
                      FrameType::kJoinAt}) {
    FrameHeader h = watermarkHeader(t);
    requireZeroFields(h, {{"payloadLength", 64, 4},
                          {"seq", 32, 8},
                          {"elemOffset", 48, 8},
                          {"elemCount", 56, 4},
                          {"status", 28, 4},
                          {"dtype", 60, 1},
                          {"op", 61, 1}});
    // Any watermark, group and rank: what they may be is the receiver's to check.
    for (uint64_t chunk : {uint64_t{0}, kU64Max}) {
      h.chunk = chunk;
      h.rank = 0xFFFFFFFF;
      h.group = GroupId{kU64Max, 0};
      requireRoundTrip(h);
    }
  }
}

// --- Malformed: FINAL, FAILOVER and LOST ----------------------------------------------

TEST_CASE("frame: FINAL names the whole chunk and carries 1 to elemCount whole elements") {
  FrameHeader h = finalHeader();  // 262144 fp32 elements, 1000 final
  for (uint32_t prefix : {1u, 1000u, 262143u, 262144u}) {
    h.payloadLength = prefix * 4;
    requireRoundTrip(h);
  }
  const std::string expected =
      "FINAL frame: payloadLength {} (expected the final prefix: 1 to elemCount 262144 whole "
      "elements of 4 bytes of fp32, at most 1048576)";
  for (uint32_t length : {0u, 1u, 4001u, 262144u * 4 + 4, 0xFFFFFFFCu}) {
    h.payloadLength = length;
    std::string message = expected;
    message.replace(message.find("{}"), 2, std::to_string(length));
    requireProtocolError(decode(h), message);
  }
  // The receiver's limit is on the chunk, whatever the prefix.
  h.payloadLength = 4;
  requireProtocolError(decode(encodeHeader(h), nullptr, DecodeLimits{4096}),
                       "FINAL frame: a chunk of 1048576 bytes (expected at most 4096, the "
                       "receiver's limit)");
  FrameHeader fp8 = finalHeader();
  fp8.dtype = DataType::kFloat8e4m3;
  fp8.elemCount = 2049;
  fp8.payloadLength = 1;
  requireProtocolError(decode(encodeHeader(fp8), nullptr, DecodeLimits{4096}),
                       "elemCount 2049 of fp8e4m3 counts as 4098 bytes");
  // The rest are the data frames' rules.
  requireDataFrameRules(finalHeader());
  requireProtocolError(decode(patched(finalHeader(), 48, kU64Max, 8)), "overflows 64 bits");
}

TEST_CASE("frame: COMMITTED names its chunk as the chunk's REDUCE does, with no payload") {
  requireRoundTrip(committedHeader());
  for (uint32_t length : {1u, 4u, 262144u * 4}) {
    requireProtocolError(decode(patched(committedHeader(), 64, length, 4)),
                         "COMMITTED frame: payloadLength " + std::to_string(length) +
                             " (expected 0)");
  }
  requireDataFrameRules(committedHeader());
  requireProtocolError(decode(encodeHeader(committedHeader()), nullptr, DecodeLimits{4096}),
                       "COMMITTED frame: a chunk of 1048576 bytes (expected at most 4096");
}

TEST_CASE("frame: FAILOVER and LOST carry a dead set of 1 to 1024 reducers") {
  for (FrameType t : {FrameType::kFailover, FrameType::kLost}) {
    const std::string name(frameTypeName(t));
    FrameHeader h = deadSetHeader(t);
    for (uint32_t length : {2u, 2048u}) {
      h.payloadLength = length;
      requireRoundTrip(h);
    }
    for (uint32_t length : {0u, 1u, 3u, 2049u, 2050u, 0xFFFFFFFEu}) {
      h.payloadLength = length;
      requireProtocolError(decode(h), name + " frame: payloadLength " + std::to_string(length) +
                                          " (expected a dead set: 1..1024 reducers of 2 bytes, "
                                          "2..2048)");
    }
    requireZeroFields(deadSetHeader(t), {{"elemOffset", 48, 8},
                                         {"elemCount", 56, 4},
                                         {"status", 28, 4},
                                         {"dtype", 60, 1},
                                         {"op", 61, 1}});
  }
  // FAILOVER's chunk is the sender's watermark, any chunk; LOST names none.
  FrameHeader failover = deadSetHeader(FrameType::kFailover);
  failover.chunk = kU64Max;
  REQUIRE(decode(failover).isOk());
  failover.chunk = 0;
  REQUIRE(decode(failover).isOk());
  requireZeroFields(deadSetHeader(FrameType::kLost), {{"chunk", 40, 8}});
  // seq is the set's generation (proto/FAILOVER.md, "A reducer comes back"): any.
  for (FrameType t : {FrameType::kFailover, FrameType::kLost}) {
    FrameHeader h = deadSetHeader(t);
    h.seq = kU64Max;
    requireRoundTrip(h);
  }
}

TEST_CASE("frame: JOIN_OFFER is a header naming a group and rank alone") {
  requireZeroFields(joinOfferHeader(), {{"payloadLength", 64, 4},
                                        {"seq", 32, 8},
                                        {"chunk", 40, 8},
                                        {"elemOffset", 48, 8},
                                        {"elemCount", 56, 4},
                                        {"status", 28, 4},
                                        {"dtype", 60, 1},
                                        {"op", 61, 1}});
}

// --- Payloads --------------------------------------------------------------------------

namespace {
HelloPayload validHello() {
  HelloPayload p;
  p.worldSize = 16;
  p.streamIndex = 3;
  p.streamCount = 8;
  p.reducerIndex = 5;
  p.reducerCount = 20;
  p.timeoutMs = 300000;
  for (size_t i = 0; i < p.clientNonce.size(); ++i) p.clientNonce[i] = static_cast<uint8_t>(0x40 + i);
  for (size_t i = 0; i < p.authProof.size(); ++i) p.authProof[i] = static_cast<uint8_t>(0xA0 + i);
  p.jobName = "job-7";
  p.lossDetectMs = 2500;
  return p;
}
}  // namespace

TEST_CASE("frame: hello payload: round trip and exact bytes") {
  HelloPayload p = validHello();
  auto b = encodeHello(p);
  REQUIRE(b.size() == kHelloPayloadSize);
  REQUIRE(hexOf(b.data(), 16) == "10000000" "0300" "0800" "0500" "1400" "e0930400");
  REQUIRE(b[16] == 0x40);  // clientNonce at 16..47
  REQUIRE(b[47] == 0x40 + 31);
  REQUIRE(b[48] == 0xA0);  // authProof at 48..79
  REQUIRE(b[79] == 0xA0 + 31);
  REQUIRE(hexOf(b.data() + 80, 4) == "05000000");  // jobNameLength
  REQUIRE(std::string(b.begin() + 84, b.begin() + 89) == "job-7");  // jobName at 84..211
  REQUIRE(std::all_of(b.begin() + 89, b.begin() + 212, [](uint8_t c) { return c == 0; }));
  REQUIRE(hexOf(b.data() + 212, 4) == "c4090000");  // lossDetectMs at 212..215
  HelloPayload out;
  REQUIRE(decodeHello(b.data(), b.size(), &out).isOk());
  REQUIRE(out.worldSize == p.worldSize);
  REQUIRE(out.streamIndex == p.streamIndex);
  REQUIRE(out.streamCount == p.streamCount);
  REQUIRE(out.reducerIndex == p.reducerIndex);
  REQUIRE(out.reducerCount == p.reducerCount);
  REQUIRE(out.timeoutMs == p.timeoutMs);
  REQUIRE(out.clientNonce == p.clientNonce);
  REQUIRE(out.authProof == p.authProof);
  REQUIRE(out.jobName == "job-7");
  REQUIRE(out.lossDetectMs == 2500);
  p.jobName.clear();  // no job: the pool's own secret
  b = encodeHello(p);
  REQUIRE(decodeHello(b.data(), b.size(), &out).isOk());
  REQUIRE(out.jobName.empty());
  p.jobName = std::string(kMaxJobNameBytes, 'j');
  b = encodeHello(p);
  REQUIRE(decodeHello(b.data(), b.size(), &out).isOk());
  REQUIRE(out.jobName == p.jobName);
}

TEST_CASE("frame: hello payload: a malformed job name is refused, naming the byte") {
  const auto valid = encodeHello(validHello());  // "job-7"
  HelloPayload out;
  auto bad = valid;
  bad[80] = 129;
  requireProtocolError(decodeHello(bad.data(), bad.size(), &out),
                       "hello payload: jobNameLength 129 (expected 0..128)");
  bad = valid;
  bad[83] = 1;
  requireProtocolError(decodeHello(bad.data(), bad.size(), &out),
                       "hello payload: jobNameLength 16777221 (expected 0..128)");
  bad = valid;
  bad[86] = '/';
  requireProtocolError(decodeHello(bad.data(), bad.size(), &out),
                       "hello payload: jobName byte 0x2f at offset 86 (expected A-Z a-z 0-9 . _ -)");
  bad = valid;
  bad[88] = 0;  // a NUL inside the announced length
  requireProtocolError(decodeHello(bad.data(), bad.size(), &out),
                       "hello payload: jobName byte 0x00 at offset 88");
  bad = valid;
  bad[211] = 'x';  // bytes after the name must stay zero
  requireProtocolError(decodeHello(bad.data(), bad.size(), &out),
                       "hello payload: jobName padding 0x78 at offset 211 (expected 0 after "
                       "jobNameLength 5)");
  CHECK(isValidJobName("team-a.train_7"));
  CHECK_FALSE(isValidJobName(""));
  CHECK_FALSE(isValidJobName("a b"));
  CHECK_FALSE(isValidJobName(std::string(kMaxJobNameBytes + 1, 'j')));
}

TEST_CASE("frame: hello payload: boundary values are accepted") {
  HelloPayload p = validHello();
  p.worldSize = 1;
  p.streamCount = 1;
  p.streamIndex = 0;
  p.reducerCount = 1;
  p.reducerIndex = 0;
  p.timeoutMs = 0;
  p.lossDetectMs = 0;  // the reducer's bound
  auto b = encodeHello(p);
  HelloPayload out;
  REQUIRE(decodeHello(b.data(), b.size(), &out).isOk());
  p.lossDetectMs = kMinLossDetectMs;
  b = encodeHello(p);
  REQUIRE(decodeHello(b.data(), b.size(), &out).isOk());
  p.worldSize = kMaxWorldSize;
  p.streamCount = kMaxStreamCount;
  p.streamIndex = kMaxStreamCount - 1;
  p.reducerCount = 0xFFFF;
  p.reducerIndex = 0xFFFE;
  p.timeoutMs = 0xFFFFFFFF;
  p.lossDetectMs = 0xFFFFFFFF;
  b = encodeHello(p);
  REQUIRE(decodeHello(b.data(), b.size(), &out).isOk());
  REQUIRE(out.worldSize == 65536);
  REQUIRE(out.lossDetectMs == 0xFFFFFFFF);
}

TEST_CASE("frame: hello payload: wrong size") {
  std::vector<uint8_t> buf(kHelloPayloadSize + 1, 0);
  auto valid = encodeHello(validHello());
  std::memcpy(buf.data(), valid.data(), valid.size());
  HelloPayload out;
  for (size_t n : {size_t{0}, size_t{48}, size_t{80}, size_t{212}, size_t{215}, size_t{217}}) {
    requireProtocolError(decodeHello(buf.data(), n, &out),
                         "hello payload: " + std::to_string(n) + " bytes (expected 216)");
  }
}

TEST_CASE("frame: challenge payload: round trip, exact bytes and malformed") {
  ChallengePayload c;
  c.mode = AuthMode::kJobSecret;
  for (size_t i = 0; i < c.nonce.size(); ++i) c.nonce[i] = static_cast<uint8_t>(i + 1);
  auto b = encodeChallenge(c);
  REQUIRE(b.size() == kChallengePayloadSize);
  REQUIRE(hexOf(b.data(), 9) == "01000000" "00000000" "01");  // mode, reserved, nonce[0]
  REQUIRE(b[39] == 32);
  ChallengePayload out;
  REQUIRE(decodeChallenge(b.data(), b.size(), &out).isOk());
  REQUIRE(out.mode == AuthMode::kJobSecret);
  REQUIRE(out.nonce == c.nonce);
  c.mode = AuthMode::kOpen;
  b = encodeChallenge(c);
  REQUIRE(decodeChallenge(b.data(), b.size(), &out).isOk());
  REQUIRE(out.mode == AuthMode::kOpen);

  requireProtocolError(decodeChallenge(b.data(), 39, &out),
                       "challenge payload: 39 bytes (expected 40)");
  auto bad = b;
  bad[0] = 2;
  requireProtocolError(decodeChallenge(bad.data(), bad.size(), &out),
                       "challenge payload: mode 2 (expected 0 open or 1 job secret)");
  bad = b;
  bad[7] = 0x80;
  requireProtocolError(decodeChallenge(bad.data(), bad.size(), &out),
                       "challenge payload: reserved 0x80000000 at bytes 4..7 (expected 0)");
}

TEST_CASE("frame: hello payload: each field out of range") {
  struct Case {
    void (*mutate)(HelloPayload&);
    const char* message;
  };
  const Case cases[] = {
      {[](HelloPayload& p) { p.worldSize = 0; }, "worldSize 0 (expected 1..65536)"},
      {[](HelloPayload& p) { p.worldSize = 65537; }, "worldSize 65537 (expected 1..65536)"},
      {[](HelloPayload& p) { p.worldSize = 0xFFFFFFFF; }, "worldSize 4294967295"},
      {[](HelloPayload& p) { p.streamCount = 0; p.streamIndex = 0; },
       "streamCount 0 (expected 1..256)"},
      {[](HelloPayload& p) { p.streamCount = 257; p.streamIndex = 0; },
       "streamCount 257 (expected 1..256)"},
      {[](HelloPayload& p) { p.streamIndex = 8; }, "streamIndex 8 (expected below streamCount 8)"},
      {[](HelloPayload& p) { p.streamIndex = 0xFFFF; }, "streamIndex 65535"},
      {[](HelloPayload& p) { p.reducerCount = 0; p.reducerIndex = 0; },
       "reducerCount 0 (expected at least 1)"},
      {[](HelloPayload& p) { p.reducerIndex = 20; },
       "reducerIndex 20 (expected below reducerCount 20)"},
      {[](HelloPayload& p) { p.lossDetectMs = 1; },
       "lossDetectMs 1 (expected 0 or 100..4294967295)"},
      {[](HelloPayload& p) { p.lossDetectMs = kMinLossDetectMs - 1; }, "lossDetectMs 99"},
  };
  for (const Case& c : cases) {
    HelloPayload p = validHello();
    c.mutate(p);
    auto b = encodeHello(p);
    HelloPayload out;
    out.worldSize = 777;
    requireProtocolError(decodeHello(b.data(), b.size(), &out), c.message);
    REQUIRE(out.worldSize == 777);  // untouched on failure
  }
}

TEST_CASE("frame: hello payload: a lane's stream index is at least streamCount") {
  HelloPayload p = validHello();  // streamCount 8
  HelloPayload out;
  for (uint16_t index : {uint16_t{8}, uint16_t{9}, uint16_t{0xFFFF}}) {
    p.streamIndex = index;
    auto b = encodeHello(p);
    REQUIRE(decodeHello(b.data(), b.size(), &out, HelloKind::kLane).isOk());
    REQUIRE(out.streamIndex == index);
    REQUIRE(encodeHello(out) == b);
    requireProtocolError(decodeHello(b.data(), b.size(), &out),
                         "streamIndex " + std::to_string(index) +
                             " (expected below streamCount 8)");
  }
  for (uint16_t index : {uint16_t{0}, uint16_t{7}}) {
    p.streamIndex = index;
    auto b = encodeHello(p);
    REQUIRE(decodeHello(b.data(), b.size(), &out, HelloKind::kStream).isOk());
    requireProtocolError(decodeHello(b.data(), b.size(), &out, HelloKind::kLane),
                         "hello payload: streamIndex " + std::to_string(index) +
                             " of a lane (expected at least streamCount 8: lanes are numbered "
                             "after the streams)");
  }
  FrameHeader h = helloHeader();
  REQUIRE(helloKind(h) == HelloKind::kStream);
  h.flags = kFlagLane | kFlagDeterministic;
  REQUIRE(helloKind(h) == HelloKind::kLane);
}

TEST_CASE("frame: hello-ack payload: round trip and exact bytes") {
  HelloAckPayload p{64u << 20, 4, 0x000102, 10000};
  auto b = encodeHelloAck(p);
  REQUIRE(hexOf(b.data(), b.size()) == "00000004" "04000000" "02010000" "10270000");
  HelloAckPayload out;
  REQUIRE(decodeHelloAck(b.data(), b.size(), &out).isOk());
  REQUIRE(out.maxPayloadBytes == p.maxPayloadBytes);
  REQUIRE(out.ioThreads == p.ioThreads);
  REQUIRE(out.serverVersion == p.serverVersion);
  REQUIRE(out.lossDetectMs == 10000);
  HelloAckPayload minimal{1, 1, 0, 0};  // no loss detection
  b = encodeHelloAck(minimal);
  REQUIRE(decodeHelloAck(b.data(), b.size(), &out).isOk());
}

TEST_CASE("frame: hello-ack payload: malformed") {
  HelloAckPayload out;
  auto b = encodeHelloAck({1024, 2, 1});
  for (size_t n : {size_t{0}, size_t{15}}) {
    requireProtocolError(decodeHelloAck(b.data(), n, &out),
                         "hello-ack payload: " + std::to_string(n) + " bytes (expected 16)");
  }
  std::vector<uint8_t> longer(b.begin(), b.end());
  longer.push_back(0);
  requireProtocolError(decodeHelloAck(longer.data(), longer.size(), &out), "17 bytes");

  auto zeroMax = encodeHelloAck({0, 2, 1});
  requireProtocolError(decodeHelloAck(zeroMax.data(), zeroMax.size(), &out),
                       "maxPayloadBytes 0 (expected at least 1)");
  auto zeroThreads = encodeHelloAck({1024, 0, 1});
  requireProtocolError(decodeHelloAck(zeroThreads.data(), zeroThreads.size(), &out),
                       "ioThreads 0 (expected at least 1)");
  auto tooShort = encodeHelloAck({1024, 2, 1, kMinLossDetectMs - 1});
  requireProtocolError(decodeHelloAck(tooShort.data(), tooShort.size(), &out),
                       "hello-ack payload: lossDetectMs 99 (expected 0 or 100..4294967295)");
}

namespace {
Status decodeMessage(std::string_view bytes, std::string* out) {
  return decodeErrorMessage(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), out);
}
}  // namespace

TEST_CASE("frame: error message: round trips") {
  for (std::string_view s : {"", "slot pool exhausted", "gr\xC3\xBC\xC3\x9F" "e \xE2\x82\xAC \xF0\x9F\x98\x80"}) {
    std::string encoded = encodeErrorMessage(s);
    REQUIRE(encoded == s);
    std::string out = "junk";
    REQUIRE(decodeMessage(encoded, &out).isOk());
    REQUIRE(out == s);
  }
  std::string out;
  REQUIRE(decodeErrorMessage(nullptr, 0, &out).isOk());
  REQUIRE(out.empty());
}

TEST_CASE("frame: error message: length limit is inclusive") {
  std::string s(kMaxErrorMessageBytes, 'x');
  std::string out;
  REQUIRE(decodeMessage(s, &out).isOk());
  s.push_back('x');
  requireProtocolError(decodeMessage(s, &out), "error message: 1025 bytes (expected at most 1024)");
}

TEST_CASE("frame: error message: embedded NUL is rejected") {
  std::string out;
  requireProtocolError(decodeMessage(std::string_view("abc\0def", 7), &out),
                       "NUL byte at offset 3");
  requireProtocolError(decodeMessage(std::string_view("\0", 1), &out), "NUL byte at offset 0");
}

TEST_CASE("frame: error message: invalid UTF-8 is rejected") {
  struct Case {
    std::string_view bytes;
    size_t offset;
  };
  const Case cases[] = {
      {"\x80", 0},                  // lone continuation byte
      {"ab\xBF", 2},                // lone continuation byte later on
      {"\xC3", 0},                  // truncated two-byte sequence at the end
      {"\xC3(", 0},                 // bad continuation
      {"\xC0\x80", 0},              // overlong NUL
      {"\xC1\xBF", 0},              // overlong
      {"\xE0\x80\x80", 0},          // overlong three-byte
      {"\xE2\x82", 0},              // truncated three-byte
      {"x\xED\xA0\x80", 1},         // UTF-16 surrogate U+D800
      {"\xF0\x80\x80\x80", 0},      // overlong four-byte
      {"\xF4\x90\x80\x80", 0},      // above U+10FFFF
      {"\xF5\x80\x80\x80", 0},      // invalid lead byte
      {"\xFF", 0},                  // invalid lead byte
      {"ok \xF0\x9F\x98", 3},       // truncated four-byte at the end
  };
  for (const Case& c : cases) {
    std::string out = "unchanged";
    Status s = decodeMessage(c.bytes, &out);
    requireProtocolError(s, "invalid UTF-8 at offset " + std::to_string(c.offset));
    REQUIRE(out == "unchanged");
  }
  // The largest valid code points on each side of the gaps are fine.
  std::string out;
  REQUIRE(decodeMessage("\xED\x9F\xBF \xEE\x80\x80 \xF4\x8F\xBF\xBF \xC2\x80", &out).isOk());
}

TEST_CASE("frame: error message: encoding cuts at a character boundary") {
  std::string s(kMaxErrorMessageBytes - 1, 'a');
  s += "\xC3\xA9";  // a two-byte character that would end one byte past the limit
  std::string enc = encodeErrorMessage(s);
  REQUIRE(enc == std::string(kMaxErrorMessageBytes - 1, 'a'));
  std::string out;
  REQUIRE(decodeMessage(enc, &out).isOk());

  std::string euros;
  for (int i = 0; i < 400; ++i) euros += "\xE2\x82\xAC";  // 1200 bytes
  enc = encodeErrorMessage(euros);
  REQUIRE(enc.size() == 1023);  // 341 whole characters
  REQUIRE(decodeMessage(enc, &out).isOk());

  std::string exact(kMaxErrorMessageBytes, 'b');
  REQUIRE(encodeErrorMessage(exact) == exact);
}

TEST_CASE("frame: error message: encoding repairs what the decoder would reject") {
  std::string raw("bad \xFF byte, nul \0 and truncated \xE2\x82", 34);
  std::string enc = encodeErrorMessage(raw);
  REQUIRE(enc == "bad \xEF\xBF\xBD byte, nul \xEF\xBF\xBD and truncated \xEF\xBF\xBD\xEF\xBF\xBD");
  std::string out;
  REQUIRE(decodeMessage(enc, &out).isOk());
  // Every byte value alone, and a long run of invalid bytes, still encodes to something valid.
  for (int v = 0; v < 256; ++v) {
    std::string one(1, static_cast<char>(v));
    REQUIRE(decodeMessage(encodeErrorMessage(one), &out).isOk());
  }
  std::string junk(5000, '\xFF');
  enc = encodeErrorMessage(junk);
  REQUIRE(enc.size() <= kMaxErrorMessageBytes);
  REQUIRE(decodeMessage(enc, &out).isOk());
}

TEST_CASE("frame: a full ERROR frame, header and message, decodes") {
  std::string msg = encodeErrorMessage("reducer 3: slot pool exhausted (4096 slots)");
  FrameHeader h = errorHeader();
  h.payloadLength = static_cast<uint32_t>(msg.size());
  std::vector<uint8_t> frame(kHeaderSize + msg.size());
  encodeHeader(h, frame.data());
  std::memcpy(frame.data() + kHeaderSize, msg.data(), msg.size());
  FrameHeader out;
  REQUIRE(decodeHeader(frame.data(), kHeaderSize, DecodeLimits{}, &out).isOk());
  std::string text;
  REQUIRE(decodeErrorMessage(frame.data() + kHeaderSize, out.payloadLength, &text).isOk());
  REQUIRE(text == "reducer 3: slot pool exhausted (4096 slots)");
}
