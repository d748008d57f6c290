// The fixed reason labels of the failure metrics: every value has a distinct, Prometheus-safe
// name, and every status code maps to a reason (none is free text).
#include "server/failure_reason.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

namespace {

using namespace rs::server;
using rs::StatusCode;

bool labelSafe(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  return true;
}

template <typename Enum, typename NameOf>
void checkNames(size_t n, NameOf nameOf) {
  std::set<std::string> seen;
  for (size_t i = 0; i < n; ++i) {
    const std::string_view name = nameOf(static_cast<Enum>(i));
    INFO("value " << i << ": " << name);
    CHECK(labelSafe(name));
    CHECK(name != "unknown");
    CHECK(seen.insert(std::string(name)).second);
  }
}

constexpr StatusCode kAllCodes[] = {
    StatusCode::kOk,          StatusCode::kInvalidArgument,    StatusCode::kProtocolError,
    StatusCode::kIoError,     StatusCode::kTimeout,            StatusCode::kAborted,
    StatusCode::kResourceExhausted, StatusCode::kFailedPrecondition, StatusCode::kUnavailable,
    StatusCode::kInternal};

TEST_CASE("failure reasons: each set has distinct snake_case names") {
  checkNames<FrameRejection>(kNumFrameRejections, frameRejectionName);
  checkNames<HandshakeFailure>(kNumHandshakeFailures, handshakeFailureName);
  checkNames<AbortReason>(kNumAbortReasons, abortReasonName);
}

TEST_CASE("failure reasons: abort statuses map to the reason an operator looks for") {
  CHECK(abortReasonFor(StatusCode::kTimeout) == AbortReason::kTimeout);
  CHECK(abortReasonFor(StatusCode::kIoError) == AbortReason::kConnectionLost);
  CHECK(abortReasonFor(StatusCode::kProtocolError) == AbortReason::kProtocolError);
  CHECK(abortReasonFor(StatusCode::kInvalidArgument) == AbortReason::kDisagreement);
  CHECK(abortReasonFor(StatusCode::kAborted) == AbortReason::kMemberAborted);
  CHECK(abortReasonFor(StatusCode::kResourceExhausted) == AbortReason::kResourceLimit);
  CHECK(abortReasonFor(StatusCode::kInternal) == AbortReason::kOther);
  for (StatusCode c : kAllCodes)
    CHECK(static_cast<size_t>(abortReasonFor(c)) < kNumAbortReasons);
}

TEST_CASE("failure reasons: a registry refusal says whether the group was full, gone or draining") {
  CHECK(handshakeFailureFor(StatusCode::kUnavailable) == HandshakeFailure::kDraining);
  CHECK(handshakeFailureFor(StatusCode::kResourceExhausted) == HandshakeFailure::kLimit);
  CHECK(handshakeFailureFor(StatusCode::kAborted) == HandshakeFailure::kAborted);
  CHECK(handshakeFailureFor(StatusCode::kInvalidArgument) == HandshakeFailure::kRefused);
  // A member of another job than the group's counts as an authentication failure.
  CHECK(handshakeFailureFor(StatusCode::kFailedPrecondition) == HandshakeFailure::kAuth);
  for (StatusCode c : kAllCodes)
    CHECK(static_cast<size_t>(handshakeFailureFor(c)) < kNumHandshakeFailures);
}

}  // namespace
