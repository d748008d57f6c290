#include "core/transport/farewell.h"

#include <cstdint>

namespace rs::transport {

void Farewell::send(asio::io_context& io, std::unique_ptr<Stream> stream, std::string bytes,
                    std::chrono::milliseconds linger, std::shared_ptr<PayloadChannel> channel) {
  std::make_shared<Farewell>(io, std::move(stream), std::move(bytes), std::move(channel))
      ->start(linger);
}

Farewell::Farewell(asio::io_context& io, std::unique_ptr<Stream> stream, std::string bytes,
                   std::shared_ptr<PayloadChannel> channel)
    : stream_(std::move(stream)),
      channel_(std::move(channel)),
      bytes_(std::move(bytes)),
      sink_(64 << 10),
      timer_(io) {}

void Farewell::start(std::chrono::milliseconds linger) {
  timer_.expires_after(linger);
  timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (!ec) self->finish();
  });
  buffer_ = {bytes_.data(), bytes_.size()};
  stream_->asyncWriteAll(&buffer_, 1,
                         [self = shared_from_this()](const std::error_code& ec, size_t) {
                           if (ec) self->finish();
                         });
  drain();
  if (channel_) dropPieces();
}

// Reads (and drops) until the peer ends the connection: then nothing is left unread, and the
// close sends no reset.
void Farewell::drain() {
  stream_->asyncReadSome(sink_.data(), sink_.size(),
                         [self = shared_from_this()](const std::error_code& ec, size_t) {
                           if (ec) return self->finish();
                           self->drain();
                         });
}

// The peer's pieces (results it still writes) are taken and dropped, each slot given back, so
// its writes land and its sender never waits for a credit. A channel that fails stops this; the
// stream decides when the farewell ends.
void Farewell::dropPieces() {
  channel_->asyncNextPiece(SIZE_MAX, [self = shared_from_this()](const Status& status,
                                                                 std::span<const std::byte>) {
    if (!status.isOk() || self->done_) return;
    self->channel_->release();
    self->dropPieces();
  });
}

void Farewell::finish() {
  if (done_) return;
  done_ = true;
  timer_.cancel();
  stream_->close();
  if (channel_) channel_->close(abortedError("the farewell ended"));
}

}  // namespace rs::transport
