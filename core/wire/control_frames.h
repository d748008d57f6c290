// Building and parsing the frames that both ends make: REDUCE and RESULT headers from a
// chunk's fields, HEARTBEAT, and ERROR and ABORT frames (header plus reason). No I/O; frame.h holds the
// byte layout, this file what a sender fills in and what a receiver reads back.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/common/status.h"
#include "core/reduce/dtype.h"
#include "core/wire/frame.h"
#include "core/wire/group_id.h"

namespace rs::wire {

// What a REDUCE or RESULT header says about its chunk; payloadLength follows from it.
struct ChunkFields {
  GroupId group;
  uint32_t rank = 0;         // the sender (REDUCE) or the destination (RESULT)
  uint64_t seq = 0;
  uint64_t chunk = 0;
  uint64_t elemOffset = 0;   // first element within the collective
  uint32_t elemCount = 0;
  DataType dtype = DataType::kInt8;
  ReduceOp op = ReduceOp::kSum;
};

// payloadLength = elemCount x the size of dtype. The caller keeps that below 4 GiB (the
// client's chunk plan and the reducer's --max-chunk both do), as decodeHeader requires.
FrameHeader reduceHeader(const ChunkFields& chunk);
FrameHeader resultHeader(const ChunkFields& chunk);

// A frame of `type` that is its header alone, naming the group, the rank and `chunk` and nothing
// else (HEARTBEAT, RECEIVED, COMMIT, and the rejoin's: rejoin_frames.h).
FrameHeader headerOnly(FrameType type, const GroupId& group, uint32_t rank, uint64_t chunk);

// A HEARTBEAT (header only) on the stream of `rank` in `group`: the member's own rank, or the
// rank a reducer's stream serves.
HeaderBytes heartbeatFrame(const GroupId& group, uint32_t rank);

// The acknowledgements, header only, each with a watermark in `chunk`: RECEIVED (worker ->
// reducer, `rank` the sender): it holds the whole result of every chunk up to `chunk` on this
// stream; COMMIT (reducer -> worker, `rank` the destination): so does every member.
FrameHeader receivedHeader(const GroupId& group, uint32_t rank, uint64_t chunk);
FrameHeader commitHeader(const GroupId& group, uint32_t rank, uint64_t chunk);

// The HELLO that opens a worker's stream: the header names the group and rank, the payload the
// rest. With a secret (the pool's, or the job's derived one when hello.jobName is set) the
// payload gets a fresh client nonce and the proof answering the reducer's CHALLENGE nonce
// (auth.h); without one both stay zero. `flags`: the header's HELLO flags (kFlagDeterministic),
// covered by the proof. Fails only if the CSPRNG cannot be seeded.
struct HelloFrame {
  HeaderBytes header{};
  std::array<uint8_t, kHelloPayloadSize> payload{};
};
Result<HelloFrame> helloFrame(const GroupId& group, uint32_t rank, HelloPayload hello,
                              std::string_view secret, const Nonce& reducerNonce,
                              uint16_t flags = 0);

// An ERROR or ABORT frame ready to send: the header, then `reason` as its payload.
struct ErrorFrame {
  HeaderBytes header{};
  std::string reason;  // encodeErrorMessage's output: UTF-8, at most kMaxErrorMessageBytes
};

// ERROR: this request failed, the stream stays usable. ABORT: the group is dead. The reason's
// message is cut to kMaxErrorMessageBytes at a character boundary and made valid UTF-8
// (encodeErrorMessage), and its code becomes the header's status; an OK status, which no
// receiver accepts in these frames, is sent as INTERNAL. The result always decodes.
ErrorFrame errorFrame(const GroupId& group, uint32_t rank, const Status& reason);
ErrorFrame abortFrame(const GroupId& group, uint32_t rank, const Status& reason);

// What a peer's ERROR or ABORT frame said.
struct PeerError {
  bool abort = false;  // ABORT (the group is dead) rather than ERROR
  StatusCode code = StatusCode::kAborted;
  // Escaped (escapeText, core/common/text.h): the peer chose these bytes, and they go into
  // logs and Status messages, so control characters must not reach them as they are.
  std::string reason;
};

// The failure code an ERROR or ABORT header carries (decodeHeader checked its range; anything
// else reads as ABORTED).
StatusCode errorCode(const FrameHeader& header);

// Parses the payload of an ERROR or ABORT frame whose header decoded: the frame type, the
// header's status, the payload's size against the header's payloadLength and the limit, and
// the text (decodeErrorMessage); the reason comes out escaped. Failures are PROTOCOL_ERRORs
// starting "error message: ".
Status parseErrorFrame(const FrameHeader& header, const uint8_t* payload, size_t size,
                       PeerError* out);

}  // namespace rs::wire
