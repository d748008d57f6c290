// The data-plane frame: a fixed 72-byte little-endian header, then `payloadLength` bytes.
// Pure encode/decode, no I/O. proto/WIRE.md documents every byte; keep the two in step.
//
// decodeHeader() validates everything a header can say on its own (magic, version, type,
// flags, enum ranges, lengths against limits, reserved bytes, checksum) so that the caller
// may allocate or route only after it returns OK. Checks against a group's state (rank below
// world size, known chunk) belong to the receiver.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/common/status.h"
#include "core/reduce/dtype.h"
#include "core/wire/group_id.h"

namespace rs::wire {

inline constexpr uint32_t kMagic = 0x31465352;  // "RSF1" in byte order on the wire
// 2: the reducer opens with CHALLENGE and HELLO carries the worker's nonce and proof.
// 3: HEARTBEAT, so that a silent peer is found within a bound, and RECEIVED and COMMIT (a member
// acknowledges the results it holds, a reducer says when every member has), part of every
// stream's conversation (proto/FAILOVER.md); and, unreleased with them, FAILOVER, LOST, FINAL
// and COMMITTED and the HELLO's lane flag, by which a group goes on without a lost reducer.
inline constexpr uint8_t kProtocolVersion = 3;
inline constexpr size_t kHeaderSize = 72;

enum class FrameType : uint8_t {
  kHello = 1,     // worker -> reducer, first frame on a stream: join a group (HelloPayload)
  kHelloAck = 2,  // reducer -> worker: accepted (HelloAckPayload)
  kReduce = 3,    // worker -> reducer: one chunk's contribution
  kResult = 4,    // reducer -> worker: one chunk's reduced result
  kError = 5,     // either way: this request failed (ErrorPayload); the stream stays usable
  kAbort = 6,     // either way: the group is dead (ErrorPayload); the sender closes the stream
  kChallenge = 7, // reducer -> worker, first frame on a stream: nonce and auth mode
  // Either way, header only: the sender lives. Sent by a side that owes its peer something
  // and has sent it nothing for a third of the stream's loss bound (proto/WIRE.md).
  kHeartbeat = 8,
  kReceived = 9,  // worker -> reducer, header only: the results it holds on this stream (chunk)
  kCommit = 10,   // reducer -> worker, header only: the results every member holds (chunk)
  // Failover (proto/FAILOVER.md): a lost reducer's chunks move to the survivors on lanes.
  // Worker -> survivor, the first frame on a lane: the dead set D (DeadSetPayload) and, in
  // `chunk`, the sender's commit watermark for the lane's (lost reducer, stream).
  kFailover = 11,
  // Survivor -> worker on a normal stream: a member named these reducers dead (DeadSetPayload);
  // the worker moves their chunks too.
  kLost = 12,
  // Worker -> survivor on a lane: a resent chunk's final prefix. The header names the whole
  // chunk (elemOffset, elemCount n, as its REDUCE); the payload is its first r elements' final
  // bits, 1 <= r <= n, and a REDUCE of elements [r, n) follows when r < n.
  kFinal = 13,
  // Worker -> survivor on a lane, header only: this member saw the chunk committed. The header
  // names the chunk as its REDUCE does (so that any entry can open the chunk's slot).
  kCommitted = 14,
  // A reducer comes back (proto/FAILOVER.md, "A reducer comes back"; core/wire/rejoin_frames.h),
  // each header only, on stream 0 of a joining group. Reducer -> worker: every member's streams
  // are in, answer with your next chunk.
  kJoinOffer = 15,
  // Worker -> reducer: in `chunk`, the first running chunk number of its next collective.
  kJoin = 16,
  // Reducer -> worker: in `chunk`, T, the largest answer: this reducer is live again from
  // chunk T on.
  kJoinAt = 17,
  // The fabric (proto/FABRIC.md, "Set-up"; core/wire/fabric_frames.h), after HELLO_ACK on a
  // stream whose HELLO carried kFlagFabric. Reducer -> worker: its channel's grant (provider,
  // endpoint address, channel id, receive ring).
  kFabricOffer = 18,
  // Worker -> reducer: the worker's grant for the same stream; payloads go by RMA from now on.
  kFabricAccept = 19,
  // Either way: no fabric on this stream (a UTF-8 reason); its payloads stay on TCP.
  kFabricDecline = 20,
};
inline constexpr uint8_t kMinFrameType = 1;
inline constexpr uint8_t kMaxFrameType = 20;

// Decoders reject unknown bits so that a future flag never changes meaning silently.
// kFlagDeterministic (HELLO only): this member asks for deterministic mode (RS_DETERMINISTIC):
// the group's chunks are summed in rank order, bit-identical whatever the arrival order. A
// group property, in the header so that the HELLO payload keeps its fixed size; every member
// must agree. On any other frame type it is refused.
inline constexpr uint16_t kFlagDeterministic = 0x0001;
// kFlagFp64Accumulator (HELLO only): this member asks that the group's fp32 sums accumulate in
// fp64 and round once (RS_FP32_ACCUMULATOR=fp64). A group property as the one above.
inline constexpr uint16_t kFlagFp64Accumulator = 0x0002;
// kFlagLane (HELLO only): the stream is a lane (proto/FAILOVER.md, "Terms"): the HELLO's
// streamIndex is a lane's index on this survivor, at least streamCount, numbered under the dead
// set that the lane's first frame, FAILOVER, names. Without it streamIndex < streamCount.
inline constexpr uint16_t kFlagLane = 0x0004;
// kFlagRejoin (HELLO only): the member had this reducer in its dead set and redials it to take
// it back (proto/FAILOVER.md, "A reducer comes back"): the stream joins, or creates, a joining
// group, which a stream without the flag cannot join. Never with kFlagLane.
inline constexpr uint16_t kFlagRejoin = 0x0008;
inline constexpr uint16_t kHelloOnlyFlags =
    kFlagDeterministic | kFlagFp64Accumulator | kFlagLane | kFlagRejoin;
// kFlagFabric (proto/FABRIC.md). On HELLO: the worker has a fabric channel for this stream and
// asks for the reducer's (FABRIC_OFFER or FABRIC_DECLINE follows HELLO_ACK). On REDUCE and
// RESULT: the frame's payloadLength bytes travel on the stream's fabric channel as RMA writes,
// not after the header on the stream. On no other frame.
inline constexpr uint16_t kFlagFabric = 0x0010;
inline constexpr uint16_t kKnownFlags = kHelloOnlyFlags | kFlagFabric;

struct FrameHeader {
  FrameType type = FrameType::kReduce;
  uint16_t flags = 0;
  GroupId group;
  uint32_t rank = 0;         // sender's rank for worker frames; destination rank for results
  uint32_t status = 0;       // StatusCode for kError/kAbort, 0 otherwise
  uint64_t seq = 0;          // collective sequence number within the group
  uint64_t chunk = 0;        // running chunk number within the group (names the slot)
  uint64_t elemOffset = 0;   // first element of this chunk within the collective
  uint32_t elemCount = 0;    // elements in this chunk (kReduce/kResult), 0 otherwise
  DataType dtype = DataType::kInt8;
  ReduceOp op = ReduceOp::kSum;
  uint32_t payloadLength = 0;
};

// The largest payload a reducer accepts unless told otherwise (its --max-chunk default).
inline constexpr uint32_t kDefaultMaxPayloadBytes = 8u << 20;

struct DecodeLimits {
  uint32_t maxPayloadBytes = kDefaultMaxPayloadBytes;  // the largest chunk a receiver accepts
};

using HeaderBytes = std::array<uint8_t, kHeaderSize>;

// Fills the checksum. The header must be valid (encoding does not check).
void encodeHeader(const FrameHeader& header, uint8_t* out);
HeaderBytes encodeHeader(const FrameHeader& header);

// Decodes and validates `size` bytes; anything but exactly kHeaderSize is an error.
Status decodeHeader(const uint8_t* data, size_t size, const DecodeLimits& limits,
                    FrameHeader* out);

std::string_view frameTypeName(FrameType t);

// --- Payloads of the control frames ------------------------------------------------------

inline constexpr size_t kNonceSize = 32;
using Nonce = std::array<uint8_t, kNonceSize>;
using AuthProof = std::array<uint8_t, 32>;  // HMAC-SHA256, core/wire/auth.h

// kChallenge: how this reducer authenticates, and the nonce a proof must answer.
enum class AuthMode : uint32_t {
  kOpen = 0,        // no job secret configured: any HELLO is admitted (proof ignored)
  kJobSecret = 1,   // HELLO must carry helloProof() under the job secret
};
struct ChallengePayload {
  AuthMode mode = AuthMode::kOpen;
  Nonce nonce{};  // fresh random bytes per connection
};
inline constexpr size_t kChallengePayloadSize = 40;

// kHello: which group, which member, which stream. Sent once per stream, after CHALLENGE.
struct HelloPayload {
  uint32_t worldSize = 0;
  uint16_t streamIndex = 0;   // 0..streamCount-1
  uint16_t streamCount = 0;   // streams this worker opens to this reducer
  uint16_t reducerIndex = 0;  // this reducer's place in the worker's list
  uint16_t reducerCount = 0;
  uint32_t timeoutMs = 0;     // the group's collective timeout; 0 = the reducer's default
  Nonce clientNonce{};   // the worker's fresh random bytes (zero when it has no secret)
  AuthProof authProof{};  // helloProof() under the job secret; zero when the worker has none
  // The job this worker proves itself for on a standing pool (its key derived from the pool's
  // secret, deriveJobSecret); empty: the pool's own secret. isValidJobName() or empty.
  std::string jobName;
  // The loss bound this worker asks for (RS_LOSS_DETECT_MS): 0, the reducer's; else at least
  // kMinLossDetectMs, and the reducer's bound caps it (HelloAckPayload::lossDetectMs).
  uint32_t lossDetectMs = 0;
};
// A fixed size, so that the reducer reads the whole HELLO before it parses any of it: the job
// name travels zero-padded in a 128-byte field after its length, the loss bound after it.
inline constexpr size_t kHelloPayloadSize = 216;
inline constexpr size_t kMaxJobNameBytes = 128;
// The ranges decodeHello() accepts, so that a sender can check its configuration first.
inline constexpr uint32_t kMaxWorldSize = 65536;
inline constexpr uint16_t kMaxStreamCount = 256;

// kHelloAck: what the reducer will enforce on this stream.
struct HelloAckPayload {
  uint32_t maxPayloadBytes = 0;
  uint32_t ioThreads = 0;
  uint32_t serverVersion = 0;  // major << 16 | minor << 8 | patch
  // The stream's loss bound, both ways (proto/WIRE.md, "Heartbeats and the loss bound"): a side
  // that waits on the other declares it lost after this long without a byte from it, and one
  // that owes the other something sends a HEARTBEAT after a third of it without sending. 0:
  // neither (the reducer's --loss-detect-ms 0). Else at least kMinLossDetectMs.
  uint32_t lossDetectMs = 0;
};
inline constexpr size_t kHelloAckPayloadSize = 16;

// The smallest loss bound a HELLO may ask for and a HELLO_ACK may set: heartbeats every third
// of it must not flood a stream, nor a scheduler's hiccup pass for a lost peer.
inline constexpr uint32_t kMinLossDetectMs = 100;

// kFailover / kLost carry the dead set D: the lost reducers' indices in the job's list, each a
// u16, strictly increasing, 1..kMaxDeadReducers of them, each below kMaxDeadReducers
// (cluster::DeadSet::kMaxReducers). Encoded and decoded by core/wire/failover_frames.h.
inline constexpr uint32_t kMaxDeadReducers = 1024;
inline constexpr size_t kDeadSetEntryBytes = 2;

// kError / kAbort carry a UTF-8 reason of at most this many bytes (kFabricDecline too, at
// least one byte).
inline constexpr size_t kMaxErrorMessageBytes = 1024;

// kFabricOffer / kFabricAccept carry a fabric grant (core/wire/fabric_frames.h): 40 fixed bytes,
// then the provider's name (1..64 bytes) and the endpoint's address (1..256 bytes).
inline constexpr uint32_t kFabricGrantFixedBytes = 40;
inline constexpr uint32_t kMaxFabricProviderBytes = 64;
inline constexpr uint32_t kMaxFabricAddressBytes = 256;
inline constexpr uint32_t kMaxFabricGrantBytes =
    kFabricGrantFixedBytes + kMaxFabricProviderBytes + kMaxFabricAddressBytes;

// A job name: 1..kMaxJobNameBytes characters of A-Z a-z 0-9 . _ - (printable in any log, and
// never a path or a shell word).
bool isValidJobName(std::string_view name);

std::array<uint8_t, kChallengePayloadSize> encodeChallenge(const ChallengePayload& challenge);
Status decodeChallenge(const uint8_t* data, size_t size, ChallengePayload* out);
std::array<uint8_t, kHelloPayloadSize> encodeHello(const HelloPayload& hello);
// A HELLO opens a normal stream (streamIndex below streamCount) or, with kFlagLane in its
// header, a lane (streamIndex at least streamCount): helloKind(header) says which.
enum class HelloKind { kStream, kLane };
inline HelloKind helloKind(const FrameHeader& hello) {
  return (hello.flags & kFlagLane) != 0 ? HelloKind::kLane : HelloKind::kStream;
}
Status decodeHello(const uint8_t* data, size_t size, HelloPayload* out,
                   HelloKind kind = HelloKind::kStream);
std::array<uint8_t, kHelloAckPayloadSize> encodeHelloAck(const HelloAckPayload& ack);
Status decodeHelloAck(const uint8_t* data, size_t size, HelloAckPayload* out);
// The reason is cut to kMaxErrorMessageBytes at a character boundary.
std::string encodeErrorMessage(std::string_view reason);
Status decodeErrorMessage(const uint8_t* data, size_t size, std::string* out);

}  // namespace rs::wire
