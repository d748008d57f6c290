// How a Stream's operation ended, in the transport's words: the one place that reads the error
// codes a Stream or a Listener hands its owner, so that sessions, connections and the p2p
// comms decide on these classes and never compare a socket library's codes themselves. A
// second transport (in-memory, libfabric) must produce codes that classify() reads the same
// way: the class is the contract (stream.h), the code behind it is the transport's.
//
// Which codes fall in which class, and why:
// - kPeerClosed: asio::error::eof. The peer ended its side in order, and everything it sent
//   before was read: how a member leaves between collectives. Only reads and watchPeerGone see it.
// - kLost: connection_reset, broken_pipe, connection_aborted. The connection ended under this
//   side without an orderly close: the peer's host reset it (its process closed or died with
//   bytes unread, or the host restarted), a write found the peer already gone (broken pipe: on
//   Linux the reset of a connection whose peer had closed), or the stack aborted it. Nothing
//   more will flow, and this side did not ask for it.
// - kTimedOut: timed_out. The transport's own net gave up on a silent peer (setLossBound, TCP
//   keep-alive and TCP_USER_TIMEOUT): the peer's host answered nothing for the loss bound. Apart
//   from kLost because owners act on it differently (a member or reducer lost as unresponsive).
// - kCancelled: operation_aborted. This side ended the operation: close(), stopWatchingPeer(),
//   handOver(), a listener's close(). Not a failure: the owner is already tearing down.
// - kFailed: anything else (out of descriptors or memory, a bad descriptor, or a host or
//   network unreachable, which Linux reports instead of timed_out when an ICMP error came while
//   it retransmitted): a failure whose own message says what went wrong.
// Each class matches Asio's code and the std::errc one alike (eof has none: it is Asio's), so an
// implementation may return Asio's codes or std::make_error_code(std::errc::...).
#pragma once

#include <cstdint>
#include <system_error>

namespace rs::transport {

enum class StreamError : uint8_t {
  kNone,        // no error: the operation completed
  kPeerClosed,  // the peer ended its side in order
  kLost,        // the connection broke without an orderly close
  kTimedOut,    // the transport's loss net found the peer silent
  kCancelled,   // this side ended the operation
  kFailed,      // anything else; the code's message says what
};

StreamError classify(const std::error_code& error);

// Short forms for the questions owners ask most.
inline bool peerClosed(const std::error_code& error) {
  return classify(error) == StreamError::kPeerClosed;
}
inline bool timedOut(const std::error_code& error) {
  return classify(error) == StreamError::kTimedOut;
}
inline bool cancelled(const std::error_code& error) {
  return classify(error) == StreamError::kCancelled;
}

// "peer closed", "lost", ...: the class's name, for tests and logs.
const char* toString(StreamError error);

}  // namespace rs::transport
