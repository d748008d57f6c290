// A connection's fabric side (proto/WIRE.md, "The fabric"; client/connection.h): REDUCE payloads
// onto the stream's channel, RESULT payloads from its pieces. The headers, their checks and
// everything else are connection.cc's, on the stream. Built without libfabric, no connection
// has a channel and none of this runs.
#include <fmt/format.h>

#include <cstring>

#include "client/connection.h"
#if RS_HAVE_FABRIC
#include "core/transport/fabric/fabric_channel.h"
#endif

namespace rs::client {

#if RS_HAVE_FABRIC

uint64_t Connection::channelBytesPosted() const { return channel_->bytesPosted(); }

void Connection::closeChannel() {
  if (channel_) channel_->close(abortedError(name_ + ": the stream was closed"));
}

void Connection::sendOnChannel(const void* data, uint32_t bytes, std::shared_ptr<void> keep) {
  channelQueued_ += bytes;
  channelUnsent_ += bytes;
  channel_->send(data, bytes,
                 counted([this, bytes, keep = std::move(keep)](const Status& status) {
                   channelUnsent_ -= bytes;
                   if (closed_) return;
                   // A payload that did not reach the reducer: the reducer is lost, as for a
                   // stream whose write failed.
                   if (!status.isOk())
                     return readFailed(Status(status.code(), fmt::format(
                                                  "{}: the fabric channel: {}", name_,
                                                  status.message())));
                   feedWriter();
                 }));
}

// A part's payload comes in the channel's pieces of at most this member's slot size, a multiple
// of 64 bytes, and the part is whole elements: each piece is whole elements, so copying piece by
// piece never leaves an element half result, half input (in place).
void Connection::readPieces(void* dst) {
  pieceDst_ = static_cast<std::byte*>(dst);
  pieceDone_ = 0;
  nextPiece();
}

void Connection::nextPiece() {
  channel_->asyncNextPiece(
      in_.payloadLength - pieceDone_,
      counted([this](const Status& status, std::span<const uint8_t> piece) {
        onPiece(status, piece.data(), piece.size());
      }));
}

void Connection::onPiece(const Status& status, const uint8_t* piece, size_t bytes) {
  if (closed_ || !status.isOk()) {
    countPartial(pieceDone_);
    if (closed_) return;
    return readFailed(Status(status.code(),
                             fmt::format("{}: the fabric channel, reading the result of chunk {} "
                                         "({} of its {} bytes in): {}",
                                         name_, in_.chunk, pieceDone_, in_.payloadLength,
                                         status.message())));
  }
  const size_t left = in_.payloadLength - pieceDone_;
  if (bytes == 0 || bytes > left)
    return fail(protocolError(fmt::format(
        "{}: a fabric piece of {} bytes for the result of chunk {}, of which {} bytes are left",
        name_, bytes, in_.chunk, left)));
  std::memcpy(pieceDst_ + pieceDone_, piece, bytes);
  pieceDone_ += bytes;
  channelReceived_ += bytes;
  if (Status s = channel_->release(); !s.isOk()) {
    countPartial(pieceDone_);
    return readFailed(Status(s.code(), fmt::format("{}: the fabric channel: {}", name_,
                                                   s.message())));
  }
  if (pieceDone_ < in_.payloadLength) return nextPiece();
  onPartIn();
}

#else  // without libfabric: never a channel

uint64_t Connection::channelBytesPosted() const { return 0; }
void Connection::closeChannel() {}
void Connection::sendOnChannel(const void*, uint32_t, std::shared_ptr<void>) {}
void Connection::readPieces(void*) {}
void Connection::nextPiece() {}
void Connection::onPiece(const Status&, const uint8_t*, size_t) {}

#endif

}  // namespace rs::client
