#include "core/wire/frame.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>

#include "core/wire/byte_order.h"
#include "core/wire/crc32c.h"

namespace rs::wire {
namespace {

// Header field offsets. proto/WIRE.md has the same table; keep the two in step.
constexpr size_t kOffMagic = 0;
constexpr size_t kOffVersion = 4;
constexpr size_t kOffType = 5;
constexpr size_t kOffFlags = 6;
constexpr size_t kOffGroupHi = 8;
constexpr size_t kOffGroupLo = 16;
constexpr size_t kOffRank = 24;
constexpr size_t kOffStatus = 28;
constexpr size_t kOffSeq = 32;
constexpr size_t kOffChunk = 40;
constexpr size_t kOffElemOffset = 48;
constexpr size_t kOffElemCount = 56;
constexpr size_t kOffDtype = 60;
constexpr size_t kOffOp = 61;
constexpr size_t kOffReserved = 62;
constexpr size_t kOffPayloadLength = 64;
constexpr size_t kOffChecksum = 68;
static_assert(kOffChecksum + 4 == kHeaderSize, "the checksum closes the header");

// HelloPayload and HelloAckPayload offsets.
constexpr size_t kOffHelloWorldSize = 0;
constexpr size_t kOffHelloStreamIndex = 4;
constexpr size_t kOffHelloStreamCount = 6;
constexpr size_t kOffHelloReducerIndex = 8;
constexpr size_t kOffHelloReducerCount = 10;
constexpr size_t kOffHelloTimeoutMs = 12;
constexpr size_t kOffHelloClientNonce = 16;
constexpr size_t kOffHelloAuthProof = 48;
constexpr size_t kOffHelloJobNameLength = 80;
constexpr size_t kOffHelloJobName = 84;
constexpr size_t kOffHelloLossDetectMs = 212;
static_assert(kOffHelloAuthProof + sizeof(HelloPayload::authProof) == kOffHelloJobNameLength);
static_assert(kOffHelloJobName + kMaxJobNameBytes == kOffHelloLossDetectMs);
static_assert(kOffHelloLossDetectMs + 4 == kHelloPayloadSize);

constexpr size_t kOffChallengeMode = 0;
constexpr size_t kOffChallengeReserved = 4;
constexpr size_t kOffChallengeNonce = 8;
static_assert(kOffChallengeNonce + kNonceSize == kChallengePayloadSize);

constexpr size_t kOffAckMaxPayloadBytes = 0;
constexpr size_t kOffAckIoThreads = 4;
constexpr size_t kOffAckServerVersion = 8;
constexpr size_t kOffAckLossDetectMs = 12;
static_assert(kOffAckLossDetectMs + 4 == kHelloAckPayloadSize);


std::string hex(uint64_t v, int digits) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%0*" PRIx64, digits, v);
  return buf;
}

// The HELLO-only flags by name, for the message that refuses one elsewhere.
struct HelloFlag {
  uint16_t bit;
  const char* name;
};
constexpr HelloFlag kHelloFlags[] = {{kFlagDeterministic, "deterministic"},
                                     {kFlagFp64Accumulator, "fp64 accumulator"},
                                     {kFlagLane, "lane"},
                                     {kFlagRejoin, "rejoin"}};
constexpr uint16_t namedHelloFlags() {
  uint16_t all = 0;
  for (const HelloFlag& f : kHelloFlags) all |= f.bit;
  return all;
}
static_assert(namedHelloFlags() == kHelloOnlyFlags, "every HELLO-only flag needs a name here");

std::string dec(uint64_t v) { return std::to_string(v); }

// A loss bound on the wire: 0 (none, or the reducer's) or at least kMinLossDetectMs.
Status checkLossDetectMs(const char* payload, uint32_t ms) {
  if (ms == 0 || ms >= kMinLossDetectMs) return Status::ok();
  return protocolError(std::string(payload) + ": lossDetectMs " + dec(ms) + " (expected 0 or " +
                       dec(kMinLossDetectMs) + ".." + dec(UINT32_MAX) + ")");
}

bool isJobNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '.' || c == '_' || c == '-';
}

// The four magic bytes as text when they are printable: a peer speaking HTTP or TLS by
// mistake is then obvious from the log ("GET ").
std::string magicAsText(uint32_t magic) {
  std::string s = " '";
  for (int i = 0; i < 4; ++i) {
    auto c = static_cast<char>(magic >> (8 * i));
    if (c < 0x20 || c > 0x7E) return "";
    s.push_back(c);
  }
  return s + "'";
}

Status headerError(const std::string& message) {
  return protocolError("frame header: " + message);
}
Status typedError(FrameType type, const std::string& message) {
  return headerError(std::string(frameTypeName(type)) + " frame: " + message);
}

// A control frame names no data: these fields must be zero so they stay free for later use.
Status requireZero(FrameType type, const char* field, uint64_t value) {
  if (value == 0) return Status::ok();
  return typedError(type, std::string(field) + " " + dec(value) + " (expected 0)");
}

Status checkDataFrame(const FrameHeader& h, uint8_t dtype, uint8_t op,
                      const DecodeLimits& limits) {
  if (!isValidDataType(dtype)) {
    return typedError(h.type, "dtype " + dec(dtype) + " (expected 0.." +
                                  dec(kNumDataTypes - 1) + ")");
  }
  if (!isValidReduceOp(op)) {
    return typedError(h.type, "op " + dec(op) + " (expected 0.." + dec(kNumReduceOps - 1) + ")");
  }
  if (h.elemCount == 0) return typedError(h.type, "elemCount 0 (expected at least 1)");
  const auto type = static_cast<DataType>(dtype);
  // u32 count times at most 8 bytes cannot overflow 64 bits.
  const uint64_t chunkBytes = uint64_t{h.elemCount} * dataTypeSize(type);
  if (h.type == FrameType::kCommitted) {
    RS_RETURN_IF_ERROR(requireZero(h.type, "payloadLength", h.payloadLength));
  } else if (h.type == FrameType::kFinal) {
    // The chunk's first r elements, 1 <= r <= n: whole elements, never the whole chunk's
    // length passed; an empty prefix sends no FINAL (the REDUCE alone says r = 0).
    const uint64_t size = dataTypeSize(type);
    if (h.payloadLength == 0 || h.payloadLength % size != 0 || h.payloadLength > chunkBytes) {
      return typedError(h.type, "payloadLength " + dec(h.payloadLength) +
                                    " (expected the final prefix: 1 to elemCount " +
                                    dec(h.elemCount) + " whole elements of " + dec(size) +
                                    " bytes of " + std::string(dataTypeName(type)) +
                                    ", at most " + dec(chunkBytes) + ")");
    }
  } else if (h.payloadLength != chunkBytes) {
    return typedError(h.type, "payloadLength " + dec(h.payloadLength) + " (expected elemCount " +
                                  dec(h.elemCount) + " x " + dec(dataTypeSize(type)) + " bytes of " +
                                  std::string(dataTypeName(type)) + " = " + dec(chunkBytes) + ")");
  }
  // The limit is on the chunk (a FINAL or COMMITTED names the chunk it is about).
  if (chunkBytes > limits.maxPayloadBytes) {
    const std::string what = h.type != FrameType::kReduce && h.type != FrameType::kResult
                                 ? "a chunk of " + dec(chunkBytes) + " bytes"
                                 : "payloadLength " + dec(chunkBytes);
    return typedError(h.type, what + " (expected at most " + dec(limits.maxPayloadBytes) +
                                  ", the receiver's limit)");
  }
  // fp8 counts for 2 bytes an element, half its fp32 accumulator (dtype.h).
  const uint64_t counted = uint64_t{h.elemCount} * chunkBytesPerElement(type);
  if (counted > limits.maxPayloadBytes) {
    return typedError(h.type, "elemCount " + dec(h.elemCount) + " of " +
                                  std::string(dataTypeName(type)) + " counts as " + dec(counted) +
                                  " bytes, 2 an element (expected at most " +
                                  dec(limits.maxPayloadBytes) +
                                  ", the receiver's limit: an fp8 chunk's fp32 accumulator may be "
                                  "at most twice it)");
  }
  if (h.elemOffset > std::numeric_limits<uint64_t>::max() - h.elemCount) {
    return typedError(h.type, "elemOffset " + dec(h.elemOffset) + " + elemCount " +
                                  dec(h.elemCount) + " overflows 64 bits");
  }
  return requireZero(h.type, "status", h.status);
}

// The fields that describe a chunk's data, zero on every frame but REDUCE and RESULT.
Status requireNoData(const FrameHeader& h, uint8_t dtype, uint8_t op) {
  RS_RETURN_IF_ERROR(requireZero(h.type, "elemOffset", h.elemOffset));
  RS_RETURN_IF_ERROR(requireZero(h.type, "elemCount", h.elemCount));
  RS_RETURN_IF_ERROR(requireZero(h.type, "dtype", dtype));
  return requireZero(h.type, "op", op);
}

// A control frame of a fixed payload size (HELLO, HELLO_ACK, CHALLENGE, HEARTBEAT): every data
// field zero.
Status checkFixedFrame(const FrameHeader& h, uint8_t dtype, uint8_t op, size_t payloadSize) {
  if (h.payloadLength != payloadSize) {
    return typedError(h.type, "payloadLength " + dec(h.payloadLength) + " (expected " +
                                  dec(payloadSize) + ")");
  }
  RS_RETURN_IF_ERROR(requireZero(h.type, "seq", h.seq));
  RS_RETURN_IF_ERROR(requireZero(h.type, "chunk", h.chunk));
  RS_RETURN_IF_ERROR(requireZero(h.type, "status", h.status));
  return requireNoData(h, dtype, op);
}

// RECEIVED and COMMIT: the header alone, its chunk the watermark; nothing else. JOIN and
// JOIN_AT have the same shape: their chunk a running chunk number.
Status checkWatermarkFrame(const FrameHeader& h, uint8_t dtype, uint8_t op) {
  RS_RETURN_IF_ERROR(requireZero(h.type, "payloadLength", h.payloadLength));
  RS_RETURN_IF_ERROR(requireZero(h.type, "seq", h.seq));
  RS_RETURN_IF_ERROR(requireZero(h.type, "status", h.status));
  return requireNoData(h, dtype, op);
}

// FAILOVER and LOST: a dead set of 1..kMaxDeadReducers u16 entries; FAILOVER's chunk is the
// sender's commit watermark, LOST's is 0; seq is the set's generation.
Status checkDeadSetFrame(const FrameHeader& h, uint8_t dtype, uint8_t op) {
  if (h.payloadLength == 0 || h.payloadLength % kDeadSetEntryBytes != 0 ||
      h.payloadLength > kMaxDeadReducers * kDeadSetEntryBytes) {
    return typedError(h.type, "payloadLength " + dec(h.payloadLength) +
                                  " (expected a dead set: 1.." + dec(kMaxDeadReducers) +
                                  " reducers of " + dec(kDeadSetEntryBytes) + " bytes, " +
                                  dec(kDeadSetEntryBytes) + ".." +
                                  dec(kMaxDeadReducers * kDeadSetEntryBytes) + ")");
  }
  // seq: the dead set's generation (proto/FAILOVER.md, "A reducer comes back"), any value.
  if (h.type == FrameType::kLost) RS_RETURN_IF_ERROR(requireZero(h.type, "chunk", h.chunk));
  RS_RETURN_IF_ERROR(requireZero(h.type, "status", h.status));
  return requireNoData(h, dtype, op);
}

// FABRIC_OFFER and FABRIC_ACCEPT: a grant (fabric_frames.h: its fixed part, then provider and
// address); FABRIC_DECLINE: a reason. The stream's group and rank, nothing else.
Status checkFabricFrame(const FrameHeader& h, uint8_t dtype, uint8_t op) {
  const bool grant = h.type != FrameType::kFabricDecline;
  const uint32_t least = grant ? kFabricGrantFixedBytes + 2 : 1;
  const uint32_t most = grant ? kMaxFabricGrantBytes : kMaxErrorMessageBytes;
  if (h.payloadLength < least || h.payloadLength > most) {
    return typedError(h.type, "payloadLength " + dec(h.payloadLength) + " (expected " +
                                  dec(least) + ".." + dec(most) + ")");
  }
  RS_RETURN_IF_ERROR(requireZero(h.type, "seq", h.seq));
  RS_RETURN_IF_ERROR(requireZero(h.type, "chunk", h.chunk));
  RS_RETURN_IF_ERROR(requireZero(h.type, "status", h.status));
  return requireNoData(h, dtype, op);
}

Status checkErrorFrame(const FrameHeader& h, uint8_t dtype, uint8_t op) {
  if (h.status == 0 || h.status > kMaxStatusCode) {
    return typedError(h.type, "status " + dec(h.status) + " (expected a failure code 1.." +
                                  dec(kMaxStatusCode) + ")");
  }
  if (h.payloadLength > kMaxErrorMessageBytes) {
    return typedError(h.type, "payloadLength " + dec(h.payloadLength) + " (expected at most " +
                                  dec(kMaxErrorMessageBytes) + ")");
  }
  // seq and chunk may name the failed collective; the data fields stay zero.
  return requireNoData(h, dtype, op);
}

// Length of the well-formed UTF-8 sequence at p (1..4), or 0 when it is not one. Rejects
// overlong forms, surrogates and code points above U+10FFFF (RFC 3629).
size_t utf8SequenceLength(const uint8_t* p, size_t n) {
  const uint8_t b0 = p[0];
  if (b0 < 0x80) return 1;
  size_t len = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (n < len || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < len; ++i)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return len;
}

}  // namespace

std::string_view frameTypeName(FrameType t) {
  switch (t) {
    case FrameType::kHello: return "HELLO";
    case FrameType::kHelloAck: return "HELLO_ACK";
    case FrameType::kReduce: return "REDUCE";
    case FrameType::kResult: return "RESULT";
    case FrameType::kError: return "ERROR";
    case FrameType::kAbort: return "ABORT";
    case FrameType::kChallenge: return "CHALLENGE";
    case FrameType::kHeartbeat: return "HEARTBEAT";
    case FrameType::kReceived: return "RECEIVED";
    case FrameType::kCommit: return "COMMIT";
    case FrameType::kFailover: return "FAILOVER";
    case FrameType::kLost: return "LOST";
    case FrameType::kFinal: return "FINAL";
    case FrameType::kCommitted: return "COMMITTED";
    case FrameType::kJoinOffer: return "JOIN_OFFER";
    case FrameType::kJoin: return "JOIN";
    case FrameType::kJoinAt: return "JOIN_AT";
    case FrameType::kFabricOffer: return "FABRIC_OFFER";
    case FrameType::kFabricAccept: return "FABRIC_ACCEPT";
    case FrameType::kFabricDecline: return "FABRIC_DECLINE";
  }
  return "UNKNOWN";
}

void encodeHeader(const FrameHeader& h, uint8_t* out) {
  put32(out + kOffMagic, kMagic);
  out[kOffVersion] = kProtocolVersion;
  out[kOffType] = static_cast<uint8_t>(h.type);
  put16(out + kOffFlags, h.flags);
  put64(out + kOffGroupHi, h.group.hi);
  put64(out + kOffGroupLo, h.group.lo);
  put32(out + kOffRank, h.rank);
  put32(out + kOffStatus, h.status);
  put64(out + kOffSeq, h.seq);
  put64(out + kOffChunk, h.chunk);
  put64(out + kOffElemOffset, h.elemOffset);
  put32(out + kOffElemCount, h.elemCount);
  out[kOffDtype] = static_cast<uint8_t>(h.dtype);
  out[kOffOp] = static_cast<uint8_t>(h.op);
  put16(out + kOffReserved, 0);
  put32(out + kOffPayloadLength, h.payloadLength);
  put32(out + kOffChecksum, crc32c(out, kOffChecksum));
}

HeaderBytes encodeHeader(const FrameHeader& header) {
  HeaderBytes bytes{};
  encodeHeader(header, bytes.data());
  return bytes;
}

Status decodeHeader(const uint8_t* data, size_t size, const DecodeLimits& limits,
                    FrameHeader* out) {
  if (size != kHeaderSize) {
    return headerError(dec(size) + " bytes (expected exactly " + dec(kHeaderSize) + ")");
  }
  const uint32_t magic = get32(data + kOffMagic);
  if (magic != kMagic) {
    return headerError("bad magic " + hex(magic, 8) + magicAsText(magic) + " (expected " +
                       hex(kMagic, 8) + magicAsText(kMagic) + ")");
  }
  const uint8_t version = data[kOffVersion];
  if (version != kProtocolVersion) {
    // Reducers and workers of releases with different wire versions meet here, on the first
    // frame of a stream (the CHALLENGE or the HELLO): say so, not just which byte was wrong.
    return headerError("unsupported version " + dec(version) + " (expected " +
                       dec(kProtocolVersion) + "): the peer runs another release of the Reduction "
                       "Server, and reducers and workers must speak one wire version "
                       "(proto/WIRE.md, Versioning)");
  }
  const uint8_t type = data[kOffType];
  if (type < kMinFrameType || type > kMaxFrameType) {
    return headerError("unknown type " + dec(type) + " (expected " + dec(kMinFrameType) + ".." +
                       dec(kMaxFrameType) + ")");
  }
  const uint16_t flags = get16(data + kOffFlags);
  if ((flags & ~kKnownFlags) != 0) {
    return headerError("unknown flag bits " + hex(flags & ~kKnownFlags, 4) + " in flags " +
                       hex(flags, 4) + " (known bits " + hex(kKnownFlags, 4) + ")");
  }
  if ((flags & kHelloOnlyFlags) != 0 && type != static_cast<uint8_t>(FrameType::kHello)) {
    for (const HelloFlag& f : kHelloFlags) {
      if ((flags & f.bit) == 0) continue;
      return headerError("flag " + hex(f.bit, 4) + " (" + f.name + ") on a " +
                         std::string(frameTypeName(static_cast<FrameType>(type))) +
                         " frame (only HELLO may carry it)");
    }
  }
  if ((flags & kFlagFabric) != 0 && type != static_cast<uint8_t>(FrameType::kHello) &&
      type != static_cast<uint8_t>(FrameType::kReduce) &&
      type != static_cast<uint8_t>(FrameType::kResult)) {
    return headerError("flag " + hex(kFlagFabric, 4) + " (fabric) on a " +
                       std::string(frameTypeName(static_cast<FrameType>(type))) +
                       " frame (only HELLO, REDUCE and RESULT may carry it)");
  }
  if ((flags & kFlagLane) != 0 && (flags & kFlagRejoin) != 0) {
    return headerError("flags " + hex(flags, 4) +
                       " (lane and rejoin together: a lane goes to a survivor, a rejoin to the "
                       "reducer that was lost)");
  }
  const uint16_t reserved = get16(data + kOffReserved);
  if (reserved != 0) {
    return headerError("reserved " + hex(reserved, 4) + " at bytes 62..63 (expected 0)");
  }
  const uint32_t checksum = get32(data + kOffChecksum);
  const uint32_t computed = crc32c(data, kOffChecksum);
  if (checksum != computed) {
    return headerError("checksum " + hex(checksum, 8) + " (expected " + hex(computed, 8) +
                       ", the CRC-32C of bytes 0..67)");
  }

  FrameHeader h;
  h.type = static_cast<FrameType>(type);
  h.flags = flags;
  h.group.hi = get64(data + kOffGroupHi);
  h.group.lo = get64(data + kOffGroupLo);
  h.rank = get32(data + kOffRank);
  h.status = get32(data + kOffStatus);
  h.seq = get64(data + kOffSeq);
  h.chunk = get64(data + kOffChunk);
  h.elemOffset = get64(data + kOffElemOffset);
  h.elemCount = get32(data + kOffElemCount);
  h.payloadLength = get32(data + kOffPayloadLength);
  // Range-checked below before either is used as an enum.
  const uint8_t dtype = data[kOffDtype];
  const uint8_t op = data[kOffOp];

  switch (h.type) {
    case FrameType::kReduce:
    case FrameType::kResult:
    case FrameType::kFinal:
    case FrameType::kCommitted:
      RS_RETURN_IF_ERROR(checkDataFrame(h, dtype, op, limits));
      break;
    case FrameType::kHello:
      RS_RETURN_IF_ERROR(checkFixedFrame(h, dtype, op, kHelloPayloadSize));
      break;
    case FrameType::kHelloAck:
      RS_RETURN_IF_ERROR(checkFixedFrame(h, dtype, op, kHelloAckPayloadSize));
      break;
    case FrameType::kChallenge:
      RS_RETURN_IF_ERROR(checkFixedFrame(h, dtype, op, kChallengePayloadSize));
      break;
    case FrameType::kHeartbeat:  // only the group and the rank may be set
      RS_RETURN_IF_ERROR(checkFixedFrame(h, dtype, op, 0));
      break;
    case FrameType::kError:
    case FrameType::kAbort:
      RS_RETURN_IF_ERROR(checkErrorFrame(h, dtype, op));
      break;
    case FrameType::kReceived:
    case FrameType::kCommit:
    case FrameType::kJoin:
    case FrameType::kJoinAt:
      RS_RETURN_IF_ERROR(checkWatermarkFrame(h, dtype, op));
      break;
    case FrameType::kJoinOffer:  // header only, nothing in it but the group and the rank
      RS_RETURN_IF_ERROR(checkFixedFrame(h, dtype, op, 0));
      break;
    case FrameType::kFailover:
    case FrameType::kLost:
      RS_RETURN_IF_ERROR(checkDeadSetFrame(h, dtype, op));
      break;
    case FrameType::kFabricOffer:
    case FrameType::kFabricAccept:
    case FrameType::kFabricDecline:
      RS_RETURN_IF_ERROR(checkFabricFrame(h, dtype, op));
      break;
  }
  h.dtype = static_cast<DataType>(dtype);
  h.op = static_cast<ReduceOp>(op);
  *out = h;
  return Status::ok();
}

bool isValidJobName(std::string_view name) {
  return !name.empty() && name.size() <= kMaxJobNameBytes &&
         std::all_of(name.begin(), name.end(), isJobNameChar);
}

std::array<uint8_t, kChallengePayloadSize> encodeChallenge(const ChallengePayload& challenge) {
  std::array<uint8_t, kChallengePayloadSize> b{};
  put32(&b[kOffChallengeMode], static_cast<uint32_t>(challenge.mode));
  put32(&b[kOffChallengeReserved], 0);
  for (size_t i = 0; i < kNonceSize; ++i) b[kOffChallengeNonce + i] = challenge.nonce[i];
  return b;
}

Status decodeChallenge(const uint8_t* data, size_t size, ChallengePayload* out) {
  if (size != kChallengePayloadSize) {
    return protocolError("challenge payload: " + dec(size) + " bytes (expected " +
                         dec(kChallengePayloadSize) + ")");
  }
  const uint32_t mode = get32(data + kOffChallengeMode);
  const uint32_t reserved = get32(data + kOffChallengeReserved);
  if (mode > static_cast<uint32_t>(AuthMode::kJobSecret)) {
    return protocolError("challenge payload: mode " + dec(mode) +
                         " (expected 0 open or 1 job secret)");
  }
  if (reserved != 0) {
    return protocolError("challenge payload: reserved " + hex(reserved, 8) +
                         " at bytes 4..7 (expected 0)");
  }
  ChallengePayload c;
  c.mode = static_cast<AuthMode>(mode);
  for (size_t i = 0; i < kNonceSize; ++i) c.nonce[i] = data[kOffChallengeNonce + i];
  *out = c;
  return Status::ok();
}

std::array<uint8_t, kHelloPayloadSize> encodeHello(const HelloPayload& hello) {
  std::array<uint8_t, kHelloPayloadSize> b{};
  put32(&b[kOffHelloWorldSize], hello.worldSize);
  put16(&b[kOffHelloStreamIndex], hello.streamIndex);
  put16(&b[kOffHelloStreamCount], hello.streamCount);
  put16(&b[kOffHelloReducerIndex], hello.reducerIndex);
  put16(&b[kOffHelloReducerCount], hello.reducerCount);
  put32(&b[kOffHelloTimeoutMs], hello.timeoutMs);
  for (size_t i = 0; i < kNonceSize; ++i) b[kOffHelloClientNonce + i] = hello.clientNonce[i];
  for (size_t i = 0; i < hello.authProof.size(); ++i) b[kOffHelloAuthProof + i] = hello.authProof[i];
  const size_t jobLength = std::min(hello.jobName.size(), kMaxJobNameBytes);
  put32(&b[kOffHelloJobNameLength], static_cast<uint32_t>(jobLength));
  std::copy_n(hello.jobName.begin(), jobLength, b.begin() + kOffHelloJobName);
  put32(&b[kOffHelloLossDetectMs], hello.lossDetectMs);
  return b;
}

Status decodeHello(const uint8_t* data, size_t size, HelloPayload* out, HelloKind kind) {
  if (size != kHelloPayloadSize) {
    return protocolError("hello payload: " + dec(size) + " bytes (expected " +
                         dec(kHelloPayloadSize) + ")");
  }
  HelloPayload p;
  p.worldSize = get32(data + kOffHelloWorldSize);
  p.streamIndex = get16(data + kOffHelloStreamIndex);
  p.streamCount = get16(data + kOffHelloStreamCount);
  p.reducerIndex = get16(data + kOffHelloReducerIndex);
  p.reducerCount = get16(data + kOffHelloReducerCount);
  p.timeoutMs = get32(data + kOffHelloTimeoutMs);
  for (size_t i = 0; i < kNonceSize; ++i) p.clientNonce[i] = data[kOffHelloClientNonce + i];
  for (size_t i = 0; i < p.authProof.size(); ++i) p.authProof[i] = data[kOffHelloAuthProof + i];
  const uint32_t jobLength = get32(data + kOffHelloJobNameLength);
  p.lossDetectMs = get32(data + kOffHelloLossDetectMs);

  if (p.worldSize < 1 || p.worldSize > kMaxWorldSize) {
    return protocolError("hello payload: worldSize " + dec(p.worldSize) + " (expected 1.." +
                         dec(kMaxWorldSize) + ")");
  }
  if (p.streamCount < 1 || p.streamCount > kMaxStreamCount) {
    return protocolError("hello payload: streamCount " + dec(p.streamCount) + " (expected 1.." +
                         dec(kMaxStreamCount) + ")");
  }
  if (kind == HelloKind::kStream && p.streamIndex >= p.streamCount) {
    return protocolError("hello payload: streamIndex " + dec(p.streamIndex) +
                         " (expected below streamCount " + dec(p.streamCount) + ")");
  }
  if (kind == HelloKind::kLane && p.streamIndex < p.streamCount) {
    return protocolError("hello payload: streamIndex " + dec(p.streamIndex) +
                         " of a lane (expected at least streamCount " + dec(p.streamCount) +
                         ": lanes are numbered after the streams)");
  }
  if (p.reducerCount < 1) {
    return protocolError("hello payload: reducerCount 0 (expected at least 1)");
  }
  if (p.reducerIndex >= p.reducerCount) {
    return protocolError("hello payload: reducerIndex " + dec(p.reducerIndex) +
                         " (expected below reducerCount " + dec(p.reducerCount) + ")");
  }
  if (jobLength > kMaxJobNameBytes) {
    return protocolError("hello payload: jobNameLength " + dec(jobLength) + " (expected 0.." +
                         dec(kMaxJobNameBytes) + ")");
  }
  for (size_t i = 0; i < kMaxJobNameBytes; ++i) {
    const uint8_t c = data[kOffHelloJobName + i];
    if (i < jobLength && !isJobNameChar(static_cast<char>(c))) {
      return protocolError("hello payload: jobName byte " + hex(c, 2) + " at offset " +
                           dec(kOffHelloJobName + i) + " (expected A-Z a-z 0-9 . _ -)");
    }
    if (i >= jobLength && c != 0) {
      return protocolError("hello payload: jobName padding " + hex(c, 2) + " at offset " +
                           dec(kOffHelloJobName + i) + " (expected 0 after jobNameLength " +
                           dec(jobLength) + ")");
    }
  }
  RS_RETURN_IF_ERROR(checkLossDetectMs("hello payload", p.lossDetectMs));
  p.jobName.assign(reinterpret_cast<const char*>(data + kOffHelloJobName), jobLength);
  *out = std::move(p);
  return Status::ok();
}

std::array<uint8_t, kHelloAckPayloadSize> encodeHelloAck(const HelloAckPayload& ack) {
  std::array<uint8_t, kHelloAckPayloadSize> b{};
  put32(&b[kOffAckMaxPayloadBytes], ack.maxPayloadBytes);
  put32(&b[kOffAckIoThreads], ack.ioThreads);
  put32(&b[kOffAckServerVersion], ack.serverVersion);
  put32(&b[kOffAckLossDetectMs], ack.lossDetectMs);
  return b;
}

Status decodeHelloAck(const uint8_t* data, size_t size, HelloAckPayload* out) {
  if (size != kHelloAckPayloadSize) {
    return protocolError("hello-ack payload: " + dec(size) + " bytes (expected " +
                         dec(kHelloAckPayloadSize) + ")");
  }
  HelloAckPayload p;
  p.maxPayloadBytes = get32(data + kOffAckMaxPayloadBytes);
  p.ioThreads = get32(data + kOffAckIoThreads);
  p.serverVersion = get32(data + kOffAckServerVersion);
  p.lossDetectMs = get32(data + kOffAckLossDetectMs);
  if (p.maxPayloadBytes < 1) {
    return protocolError("hello-ack payload: maxPayloadBytes 0 (expected at least 1)");
  }
  if (p.ioThreads < 1) {
    return protocolError("hello-ack payload: ioThreads 0 (expected at least 1)");
  }
  RS_RETURN_IF_ERROR(checkLossDetectMs("hello-ack payload", p.lossDetectMs));
  *out = p;
  return Status::ok();
}

std::string encodeErrorMessage(std::string_view reason) {
  // Whatever the caller passes, the result must pass decodeErrorMessage: malformed bytes and
  // NULs become U+FFFD, and the cut never splits a character.
  constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  const auto* p = reinterpret_cast<const uint8_t*>(reason.data());
  std::string out;
  out.reserve(std::min(reason.size(), kMaxErrorMessageBytes));
  for (size_t i = 0; i < reason.size();) {
    size_t len = utf8SequenceLength(p + i, reason.size() - i);
    std::string_view piece = reason.substr(i, len);
    if (len == 0 || p[i] == 0) {
      piece = kReplacement;
      len = 1;
    }
    if (out.size() + piece.size() > kMaxErrorMessageBytes) break;
    out.append(piece);
    i += len;
  }
  return out;
}

Status decodeErrorMessage(const uint8_t* data, size_t size, std::string* out) {
  if (size > kMaxErrorMessageBytes) {
    return protocolError("error message: " + dec(size) + " bytes (expected at most " +
                         dec(kMaxErrorMessageBytes) + ")");
  }
  for (size_t i = 0; i < size;) {
    if (data[i] == 0) {
      return protocolError("error message: NUL byte at offset " + dec(i) +
                           " (expected UTF-8 text without NULs)");
    }
    const size_t len = utf8SequenceLength(data + i, size - i);
    if (len == 0) {
      return protocolError("error message: invalid UTF-8 at offset " + dec(i) + " (byte " +
                           hex(data[i], 2) + ")");
    }
    i += len;
  }
  if (size == 0) {
    out->clear();  // data may be null for an empty payload
  } else {
    out->assign(reinterpret_cast<const char*>(data), size);
  }
  return Status::ok();
}

}  // namespace rs::wire
