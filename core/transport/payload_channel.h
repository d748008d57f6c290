// Where a stream's REDUCE and RESULT payloads travel when they do not follow their headers on
// the stream: a channel beside it (today the fabric's RMA channel, core/transport/fabric/
// fabric_channel.h; proto/FABRIC.md). The stream keeps the headers and everything else; the
// channel carries the payloads' bytes, in the order of their headers, each side's receive ring
// filled by the other under credits. The session and the connection see only this interface,
// so neither needs libfabric to build.
//
// Everything runs on the io thread that owns the channel. Handlers never run inside the call
// that takes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "core/common/status.h"

namespace rs::transport {

class PayloadChannel {
 public:
  virtual ~PayloadChannel() = default;

  // Sends `bytes` from `src` behind every payload sent before. `src` stays valid until `done`
  // runs: OK once every byte is in the peer's memory, or the channel's failure.
  virtual void send(const void* src, size_t bytes, std::function<void(const Status&)> done) = 0;
  // Payload bytes handed to the network so far (all payloads, cumulative): what the peer may
  // have received.
  virtual uint64_t bytesPosted() const = 0;

  // The peer's next piece, in order: at most `expect` bytes (what is left of the payload the
  // caller is reading), in whole slots of the ring otherwise. `handler` gets the piece, or the
  // channel's failure; the piece stays valid until release().
  using PieceHandler = std::function<void(const Status&, std::span<const std::byte>)>;
  virtual void asyncNextPiece(size_t expect, PieceHandler handler) = 0;
  // The last piece handed out is used up: its slot goes back to the peer.
  virtual void release() = 0;

  // The owner lets go and the channel goes on without it (a member that moves away from a live
  // reducer, proto/FAILOVER.md: its Farewell keeps the channel): what is still unsent of each
  // payload is copied; each pending `done` and a waiting piece handler run with `why`, a
  // send's once no write reads its registered memory any more (bounded: a peer that completes
  // nothing does not hold it); the caller's memory is free once its send's done ran. The sends
  // go on from the copies under the peer's credits, and the ring stays registered until
  // close(). Nothing if the channel failed.
  virtual void detach(const Status& why) = 0;

  // Fails what is pending with `why` (handlers still run) and stops the peer's later writes
  // from landing. Idempotent.
  virtual void close(const Status& why) = 0;
};

}  // namespace rs::transport
