// The one mapping from the client library's Status codes to the ncclResult_t NCCL is told.
//
// NCCL reads ncclRemoteError as "a peer or the network failed" (its own socket transport returns
// it for a connection closed or reset under it) and reports it so to the job, which can then
// tell a lost worker or reducer from a bug or a broken host. So on a call that talks to peers
// (connect, accept, send, receive, test, CollNet connect, all-reduce) every failure that is not
// a bad call is ncclRemoteError: a peer or reducer that closed, reset, timed out, broke the
// protocol, sent ERROR (a reducer's limit included) or ABORT, or whose failure aborted the
// collective. A call with no peer (init, listen) fails only for local reasons (interfaces,
// sockets, ports, memory): ncclSystemError. Bad arguments, calls in the wrong state and broken
// invariants are ncclInternalError on both.
#pragma once

#include "client/nccl_plugin/nccl_net_abi.h"
#include "core/common/status.h"

namespace rs::plugin {

enum class CallSide {
  kLocal,  // init, listen: nothing but this process is involved
  kPeers,  // a peer or a reducer is at the other end of the call
};

constexpr ncclResult_t ncclResultFor(StatusCode code, CallSide side) {
  switch (code) {
    case StatusCode::kOk: return ncclSuccess;
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kInternal: return ncclInternalError;
    case StatusCode::kProtocolError:
    case StatusCode::kIoError:
    case StatusCode::kTimeout:
    case StatusCode::kAborted:
    case StatusCode::kResourceExhausted:
    case StatusCode::kUnavailable: break;
  }
  return side == CallSide::kPeers ? ncclRemoteError : ncclSystemError;
}

}  // namespace rs::plugin
