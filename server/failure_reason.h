// The fixed sets of reasons under which the reducer counts failures: rejected frames, refused
// handshakes, aborted groups and lost members. They become metric labels, so each set is small and closed
// (never free text, never a group id: Prometheus keeps one series per label value).
#pragma once

#include <cstddef>
#include <string_view>

#include "core/common/status.h"

namespace rs::server {

// Why a frame on a joined stream was refused (the stream is closed and its group aborted).
enum class FrameRejection : uint8_t {
  kMalformed,       // the header fails decoding: magic, version, checksum, lengths, reserved bits
  kUnexpectedType,  // a frame type that has no place after the handshake (a second HELLO, ...)
  kWrongMember,     // names a group or rank other than the one the stream joined as
  kMisrouted,       // the chunk belongs to another reducer or stream index
  kOutOfOrder,      // chunk numbers on a stream must increase; a RECEIVED acknowledges a result
                    // sent, above the member's last one
  kDisagreement,    // seq, offset, count, dtype or op differ from what other members sent
  kDuplicate,       // a member sent the same chunk twice
};
inline constexpr size_t kNumFrameRejections = 7;

// Why a connection was refused before it joined a group.
enum class HandshakeFailure : uint8_t {
  kTimeout,   // no HELLO within --handshake-timeout-ms
  kClosed,    // the peer closed, or the socket failed, before its HELLO was in
  kMalformed, // the first frame is not a valid HELLO
  kRefused,   // the group refused it: parameters differ, stream taken, too many streams
  kAborted,   // the group it names was aborted
  kDraining,  // this reducer is draining and takes no new groups
  kLimit,     // --max-groups, a connection cap, the memory limit, or a handshake pool full
  kAuth,      // no proof, or a wrong or replayed one, of the job secret; another job's group
};
inline constexpr size_t kNumHandshakeFailures = 8;

// Why a group was aborted (each abort fails every collective the group had in flight).
enum class AbortReason : uint8_t {
  kTimeout,          // a chunk waited past the collective timeout
  kConnectionLost,   // a member's stream failed or ended inside a chunk
  kProtocolError,    // a member sent a frame that breaks the protocol
  kDisagreement,     // members disagree on a collective (or on the group's shape)
  kMemberAborted,    // a member sent ABORT, or left while its contribution was still needed
  kResourceLimit,    // a chunk that can never fit this reducer's memory
  kOther,            // anything else (an internal error)
};
inline constexpr size_t kNumAbortReasons = 7;

// How the reducer found a member lost (Shard::memberLost; each fails the member's group today,
// counted there too under its abort reason).
enum class MemberLoss : uint8_t {
  kSilent,        // not a byte for the stream's loss bound while the reducer waited on it
  kUnresponsive,  // the connection timed out: for the bound, its host acknowledged nothing
                  // sent to it, or it read nothing of it (TCP_USER_TIMEOUT, keep-alive)
};
inline constexpr size_t kNumMemberLosses = 2;

// Label values: "malformed", "unexpected_type", ... (snake_case, stable: dashboards use them).
std::string_view frameRejectionName(FrameRejection r);
std::string_view handshakeFailureName(HandshakeFailure r);
std::string_view abortReasonName(AbortReason r);
std::string_view memberLossName(MemberLoss r);

// The abort reason a status code stands for (every abort carries a Status).
AbortReason abortReasonFor(StatusCode code);
// Why the group registry refused a stream, from the status it returned.
HandshakeFailure handshakeFailureFor(StatusCode code);

}  // namespace rs::server
