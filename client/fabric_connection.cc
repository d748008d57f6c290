// A connection's fabric side (proto/WIRE.md, "The fabric"; client/connection.h): REDUCE payloads
// onto the stream's channel, RESULT payloads from its pieces. The headers, their checks and
// everything else are connection.cc's, on the stream. The channel is a transport::PayloadChannel
// (core/transport/payload_channel.h), so none of this needs libfabric to build; without it no
// connection has a channel.
#include <fmt/format.h>

#include <cstring>

#include "client/connection.h"

namespace rs::client {

void Connection::closeChannel() {
  // A channel handed to a Farewell is the Farewell's to close.
  if (channel_ && !channelHandedOver_)
    channel_->close(abortedError(name_ + ": the stream was closed"));
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
  channel_->asyncNextPiece(in_.payloadLength - pieceDone_,
                           counted([this](const Status& status, std::span<const std::byte> piece) {
                             onPiece(status, piece);
                           }));
}

void Connection::onPiece(const Status& status, std::span<const std::byte> piece) {
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
  if (piece.empty() || piece.size() > left)
    return fail(protocolError(fmt::format(
        "{}: a fabric piece of {} bytes for the result of chunk {}, of which {} bytes are left",
        name_, piece.size(), in_.chunk, left)));
  std::memcpy(pieceDst_ + pieceDone_, piece.data(), piece.size());
  pieceDone_ += piece.size();
  channelReceived_ += piece.size();
  channel_->release();  // one the channel refuses fails it: the next piece says so
  if (pieceDone_ < in_.payloadLength) return nextPiece();
  onPartIn();
}

}  // namespace rs::client
