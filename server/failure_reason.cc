#include "server/failure_reason.h"

namespace rs::server {

std::string_view frameRejectionName(FrameRejection r) {
  switch (r) {
    case FrameRejection::kMalformed: return "malformed";
    case FrameRejection::kUnexpectedType: return "unexpected_type";
    case FrameRejection::kWrongMember: return "wrong_member";
    case FrameRejection::kMisrouted: return "misrouted";
    case FrameRejection::kOutOfOrder: return "out_of_order";
    case FrameRejection::kDisagreement: return "disagreement";
    case FrameRejection::kDuplicate: return "duplicate";
  }
  return "unknown";
}

std::string_view handshakeFailureName(HandshakeFailure r) {
  switch (r) {
    case HandshakeFailure::kTimeout: return "timeout";
    case HandshakeFailure::kClosed: return "closed";
    case HandshakeFailure::kMalformed: return "malformed";
    case HandshakeFailure::kRefused: return "refused";
    case HandshakeFailure::kAborted: return "aborted";
    case HandshakeFailure::kDraining: return "draining";
    case HandshakeFailure::kLimit: return "limit";
    case HandshakeFailure::kAuth: return "auth";
  }
  return "unknown";
}

std::string_view abortReasonName(AbortReason r) {
  switch (r) {
    case AbortReason::kTimeout: return "timeout";
    case AbortReason::kConnectionLost: return "connection_lost";
    case AbortReason::kProtocolError: return "protocol_error";
    case AbortReason::kDisagreement: return "disagreement";
    case AbortReason::kMemberAborted: return "member_aborted";
    case AbortReason::kResourceLimit: return "resource_limit";
    case AbortReason::kOther: return "other";
  }
  return "unknown";
}

std::string_view memberLossName(MemberLoss r) {
  switch (r) {
    case MemberLoss::kSilent: return "silent";
    case MemberLoss::kUnresponsive: return "unresponsive";
  }
  return "unknown";
}

AbortReason abortReasonFor(StatusCode code) {
  switch (code) {
    case StatusCode::kTimeout: return AbortReason::kTimeout;
    case StatusCode::kIoError:
    case StatusCode::kUnavailable: return AbortReason::kConnectionLost;
    case StatusCode::kProtocolError: return AbortReason::kProtocolError;
    case StatusCode::kInvalidArgument: return AbortReason::kDisagreement;
    case StatusCode::kAborted: return AbortReason::kMemberAborted;
    case StatusCode::kResourceExhausted: return AbortReason::kResourceLimit;
    case StatusCode::kOk:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kInternal: return AbortReason::kOther;
  }
  return AbortReason::kOther;
}

HandshakeFailure handshakeFailureFor(StatusCode code) {
  switch (code) {
    case StatusCode::kAborted: return HandshakeFailure::kAborted;
    case StatusCode::kUnavailable: return HandshakeFailure::kDraining;
    case StatusCode::kResourceExhausted: return HandshakeFailure::kLimit;
    case StatusCode::kProtocolError: return HandshakeFailure::kMalformed;
    case StatusCode::kTimeout: return HandshakeFailure::kTimeout;
    case StatusCode::kIoError: return HandshakeFailure::kClosed;
    // The registry's only FAILED_PRECONDITION: a member of another job than the group's.
    case StatusCode::kFailedPrecondition: return HandshakeFailure::kAuth;
    default: return HandshakeFailure::kRefused;
  }
}

}  // namespace rs::server
