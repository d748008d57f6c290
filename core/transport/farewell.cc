#include "core/transport/farewell.h"

namespace rs::transport {

void Farewell::send(asio::io_context& io, std::unique_ptr<Stream> stream, std::string bytes,
                    std::chrono::milliseconds linger) {
  std::make_shared<Farewell>(io, std::move(stream), std::move(bytes))->start(linger);
}

Farewell::Farewell(asio::io_context& io, std::unique_ptr<Stream> stream, std::string bytes)
    : stream_(std::move(stream)), bytes_(std::move(bytes)), sink_(64 << 10), timer_(io) {}

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

void Farewell::finish() {
  if (done_) return;
  done_ = true;
  timer_.cancel();
  stream_->close();
}

}  // namespace rs::transport
