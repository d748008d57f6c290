#include "client/nccl_plugin/nccl_result.h"

#include <catch2/catch.hpp>

using rs::StatusCode;
using rs::plugin::CallSide;
using rs::plugin::ncclResultFor;

namespace {
// What a peer or reducer causes on a call that talks to it: closed or reset (kUnavailable, or
// kIoError on a connection), timed out, broke the protocol, sent ERROR (its limits too) or ABORT.
constexpr StatusCode kFailures[] = {StatusCode::kUnavailable,   StatusCode::kIoError,
                                    StatusCode::kTimeout,       StatusCode::kProtocolError,
                                    StatusCode::kAborted,       StatusCode::kResourceExhausted};
}  // namespace

TEST_CASE("peer and reducer failures reach NCCL as ncclRemoteError") {
  for (StatusCode code : kFailures) {
    CAPTURE(rs::statusCodeName(code));
    CHECK(ncclResultFor(code, CallSide::kPeers) == ncclRemoteError);
  }
}

TEST_CASE("failures of calls with no peer are local: ncclSystemError") {
  for (StatusCode code : kFailures) {
    CAPTURE(rs::statusCodeName(code));
    CHECK(ncclResultFor(code, CallSide::kLocal) == ncclSystemError);
  }
}

TEST_CASE("bad calls and broken invariants stay ncclInternalError on both sides") {
  for (CallSide side : {CallSide::kLocal, CallSide::kPeers}) {
    for (StatusCode code :
         {StatusCode::kInvalidArgument, StatusCode::kFailedPrecondition, StatusCode::kInternal}) {
      CAPTURE(rs::statusCodeName(code));
      CHECK(ncclResultFor(code, side) == ncclInternalError);
    }
    CHECK(ncclResultFor(StatusCode::kOk, side) == ncclSuccess);
  }
}

TEST_CASE("the codes are NCCL's own values") {
  // nccl.h of NCCL 2.28: the plugin's copy of the enum must not drift.
  STATIC_REQUIRE(ncclSystemError == 2);
  STATIC_REQUIRE(ncclInternalError == 3);
  STATIC_REQUIRE(ncclRemoteError == 6);
}
