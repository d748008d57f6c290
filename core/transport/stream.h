// The transport contract: one ordered, reliable, full-duplex byte stream to a peer.
//
// The server's sessions and the client's connections are written against this interface, so a
// second transport (RDMA) slots in beside TCP without touching them. A stream belongs to one
// io_context: every call is made from, and every handler runs on, that context's thread, so an
// implementation needs no locks. At most one read and one write may be pending at a time (the
// callers keep their own queues). Handlers always run, also after close() (cancelled), which is
// what lets an owner know when its buffers are free. Streams come from a Listener (listener.h)
// or a Connector (connector.h).
//
// Errors are std::error_codes that stream_error.h sorts into classes, and an owner reads
// nothing else of them (but their message, for people): the peer closed its side in order
// (kPeerClosed: a read finds no more bytes), the connection was lost (kLost: a reset, a broken
// pipe), the loss bound passed (kTimedOut), this side cancelled (kCancelled: close(),
// stopWatchingPeer(), handOver()), or another failure (kFailed). Every implementation produces
// codes that classify() puts in the class meant; which codes is its own business.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

#include "core/common/endpoint.h"
#include "core/common/status.h"

namespace rs::transport {

struct ConstBuffer {
  const void* data;
  size_t size;
};

using IoHandler = std::function<void(const std::error_code& error, size_t bytes)>;
using WaitHandler = std::function<void(const std::error_code& error)>;

class Stream {
 public:
  virtual ~Stream() = default;

  // Reads exactly `size` bytes into `data` (an error or EOF before that fails the read).
  virtual void asyncReadExactly(void* data, size_t size, IoHandler handler) = 0;

  // Reads whatever is available, at least one byte and at most `size`. `wakeAt` is a hint: the
  // stream may wait until min(wakeAt, size) bytes are available before it completes (fewer
  // wake-ups and calls per byte), so that must not exceed what the peer is sure to send.
  virtual void asyncReadSome(void* data, size_t size, IoHandler handler, size_t wakeAt = 1) = 0;

  // Bytes that arrived and wait in the transport to be read. A read of at most this many
  // (asyncReadSome) completes with all of them, so a reader that must not stop inside an
  // element sizes its reads by it (FrameReader::readWhole).
  virtual uint64_t bytesQueued() const = 0;
  // Calls `handler` once a read would not wait: about `wakeAt` bytes are queued (a hint, as for
  // asyncReadSome), or the peer closed its side, or the connection failed (the next read says
  // which). Reads nothing. Counts as the pending read: none may be pending beside it.
  virtual void asyncWaitReadable(WaitHandler handler, size_t wakeAt = 1) = 0;

  // For an owner that has stopped reading (what arrives has nowhere to go yet) and must still
  // learn at once that the peer went away: calls `handler` with a kPeerClosed error once the
  // peer has closed its side, or with the connection's error (kLost, kTimedOut, ...) once it
  // failed, without reading anything. Bytes that arrive meanwhile stay queued for the next
  // read and wake nothing. A FIN queued behind bytes that do not fit the receive buffer cannot
  // arrive until they are read (TCP's flow control); an RST always can. The handler runs
  // cancelled after stopWatchingPeer() or close(). At most one watch at a time; reads and
  // writes may be pending beside it. False (and the handler never runs) when this stream
  // cannot watch now (out of descriptors, say).
  virtual bool watchPeerGone(WaitHandler handler) = 0;
  // Ends a watch (a no-op without one); its handler runs later, cancelled.
  virtual void stopWatchingPeer() = 0;

  // Writes every buffer, in order, as one gather write. The buffers (the array and the bytes)
  // must stay valid until the handler runs.
  virtual void asyncWriteAll(const ConstBuffer* buffers, size_t count, IoHandler handler) = 0;

  // Bytes handed to the transport so far (writes and trySendNow), counted in the same step that
  // hands them over, also in the middle of a write. So a handler that reads the peer's reply to
  // some byte always finds that byte counted here: a reply cannot outrun what was sent (the
  // client holds a reducer's results to this).
  virtual uint64_t bytesSent() const = 0;

  // Bytes that arrived from the peer so far: read, or waiting in the transport to be read. It
  // moves exactly when bytes arrive, also while the owner reads nothing or its thread was
  // held up, so that a peer is never taken for silent because this side was slow to look
  // (core/transport/liveness.h).
  virtual uint64_t bytesArrived() const = 0;

  // A last small message before close (an ABORT): sent at once and whole, or not at all when
  // the stream cannot take all of it now. Never blocks. No write may be pending (the bytes
  // would land inside another frame). True when it went out.
  virtual bool trySendNow(const void* data, size_t size) = 0;

  // Moves the stream onto `target`, for the hand-off from the thread that accepted it to the
  // io thread that will own it. No operation may be pending. This stream is left closed; the
  // returned one carries on with the same connection (and the same tuning) on `target`.
  virtual Result<std::unique_ptr<Stream>> moveTo(asio::io_context& target) = 0;

  // Hands the connection to a new stream on the same io context, for a last word after this
  // stream's owner let go of it (farewell.h): this stream's pending operations end cancelled,
  // and it is left closed without ending the connection (no FIN, no reset). A write in flight
  // stops where it is: what it had not handed over is the new owner's to send
  // (FrameWriter::restOfFrame). A transport that cannot returns an error.
  virtual Result<std::unique_ptr<Stream>> handOver() {
    return unavailableError("this transport cannot hand a stream over");
  }

  // Caps the rate this stream sends at (bytes per second; 0: no cap), so that the streams of
  // one host together fit its link (link_share.h). A transport that cannot pace ignores it.
  virtual void setPacingRate(uint64_t /*bytesPerSecond*/) {}

  // The transport's own net under the heartbeats (proto/WIRE.md, "Heartbeats and the loss
  // bound"): the stream fails (its pending and later operations end with an error) once the
  // peer's host has answered nothing for about `bound`, found by probes while the stream is
  // idle; with `unreadSendsToo`, also once bytes it sent stay unacknowledged, or unread by a
  // peer that reads nothing, for `bound`. That second half is for a side whose peer always
  // reads (the reducer: members read their results as they come), never for one whose peer may
  // rightly stop reading a while (a member, which the reducer's admission or lead limit may
  // hold back longer than the bound). 0 leaves the transport's defaults. A transport without
  // such a net ignores it.
  virtual void setLossBound(std::chrono::milliseconds /*bound*/, bool /*unreadSendsToo*/) {}

  // Half-close: the peer reads end-of-stream after what was written; reading goes on.
  virtual void shutdownSend() = 0;
  // Cancels pending operations and closes. Idempotent.
  virtual void close() = 0;
  virtual bool isOpen() const = 0;

  // Where the peer is ({"10.0.0.7", 41000}): the reducer's per-host limits key on its host.
  // Empty (no host, port 0) when the transport cannot say, e.g. a socket whose peer was gone
  // by the time it was accepted.
  virtual const Endpoint& peer() const = 0;
  // "tcp://1.2.3.4:5678" or similar, naming the transport too; for logs and error messages.
  virtual const std::string& peerName() const = 0;
  virtual asio::any_io_executor executor() = 0;
};

}  // namespace rs::transport
