#include "core/transport/tcp_stream.h"

#include <algorithm>
#include <climits>
#include <cstddef>

#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <netinet/in.h>
#include <netinet/tcp.h>

namespace rs::transport {

Status configureTcpSocket(asio::ip::tcp::socket& socket, const TcpOptions& options) {
  std::error_code ec;
  socket.set_option(asio::ip::tcp::no_delay(true), ec);
  if (ec) return ioError("setting TCP_NODELAY: " + ec.message());
  if (options.sendBufferBytes > 0) {
    socket.set_option(asio::socket_base::send_buffer_size(options.sendBufferBytes), ec);
    if (ec) return ioError("setting SO_SNDBUF: " + ec.message());
  }
  if (options.recvBufferBytes > 0) {
    socket.set_option(asio::socket_base::receive_buffer_size(options.recvBufferBytes), ec);
    if (ec) return ioError("setting SO_RCVBUF: " + ec.message());
  }
  if (options.keepAlive) {
    socket.set_option(asio::socket_base::keep_alive(true), ec);
    if (ec) return ioError("setting SO_KEEPALIVE: " + ec.message());
    const int fd = socket.native_handle();
    const int values[3] = {options.keepAliveIdleSeconds, options.keepAliveIntervalSeconds,
                           options.keepAliveProbes};
    const int names[3] = {TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT};
    for (int i = 0; i < 3; ++i) {
      if (::setsockopt(fd, IPPROTO_TCP, names[i], &values[i], sizeof(int)) != 0)
        return ioError("setting TCP keep-alive: " + std::system_category().message(errno));
    }
  }
  return Status::ok();
}

std::string describePeer(const asio::ip::tcp::socket& socket) {
  std::error_code ec;
  auto ep = socket.remote_endpoint(ec);
  if (ec) return "tcp://?";
  auto addr = ep.address();
  std::string host = addr.is_v6() ? "[" + addr.to_string() + "]" : addr.to_string();
  return "tcp://" + host + ":" + std::to_string(ep.port());
}

TcpStream::TcpStream(asio::ip::tcp::socket socket)
    : socket_(std::move(socket)), peerName_(describePeer(socket_)) {}

TcpStream::~TcpStream() { close(); }

Result<std::unique_ptr<TcpStream>> TcpStream::moveTo(std::unique_ptr<TcpStream> stream,
                                                     asio::io_context& target) {
  std::error_code ec;
  auto protocol = stream->socket_.local_endpoint(ec).protocol();
  if (ec) return ioError("moving " + stream->peerName_ + ": " + ec.message());
  int fd = stream->socket_.release(ec);
  if (ec) return ioError("moving " + stream->peerName_ + ": " + ec.message());
  asio::ip::tcp::socket moved(target);
  moved.assign(protocol, fd, ec);
  if (ec) {
    ::close(fd);
    return ioError("moving " + stream->peerName_ + ": " + ec.message());
  }
  auto result = std::make_unique<TcpStream>(std::move(moved));
  result->peerName_ = stream->peerName_;
  result->lowWatermark_ = stream->lowWatermark_;  // the socket keeps its SO_RCVLOWAT
  return result;
}

void TcpStream::asyncReadExactly(void* data, size_t size, IoHandler handler) {
  if (size == 0) {
    asio::post(socket_.get_executor(), [h = std::move(handler)] { h({}, 0); });
    return;
  }
  readExactlyFrom(static_cast<std::byte*>(data), size, 0, std::move(handler));
}

// asio::async_read's loop. A read-some may have left SO_RCVLOWAT above what this read still
// needs, which would delay its wake-up until the kernel's buffer-pressure fallback: lower it to
// exactly that. It is never raised here, so a stream that only reads exactly (the client)
// settles on a header's size and makes no setsockopt calls after that.
void TcpStream::readExactlyFrom(std::byte* data, size_t size, size_t done, IoHandler handler) {
  lowerLowWatermark(size - done);
  socket_.async_read_some(
      asio::buffer(data + done, size - done),
      [this, data, size, done, h = std::move(handler)](const std::error_code& ec,
                                                        size_t n) mutable {
        if (ec || done + n == size) {
          h(ec, done + n);
          return;
        }
        readExactlyFrom(data, size, done + n, std::move(h));
      });
}

void TcpStream::setLowWatermark(size_t bytes) {
  const int lowat = static_cast<int>(std::clamp<size_t>(bytes, 1, INT32_MAX));
  if (lowat == lowWatermark_ || !socket_.is_open()) return;
  if (::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat)) == 0)
    lowWatermark_ = lowat;
}

void TcpStream::lowerLowWatermark(size_t bytes) {
  if (static_cast<size_t>(lowWatermark_) > bytes) setLowWatermark(bytes);
}

// Below this, raising SO_RCVLOWAT saves a few wake-ups at most but costs a setsockopt per
// read, and a header read lowers it again: for 8 KiB chunks that was 8 of the reducer's 25
// system calls per W=4 all-reduce.
constexpr size_t kMinRaisedWake = 16 << 10;

void TcpStream::asyncReadSome(void* data, size_t size, IoHandler handler, size_t wakeAt) {
  // SO_RCVLOWAT: epoll reports the socket readable only once that much is queued, so a slow
  // link wakes the reader once per wakeAt bytes rather than once per few segments. A read
  // still returns what is there, and the kernel wakes a reader whose buffer is nearly full.
  // A mark above the wake is always lowered (it would delay this read's wake-up).
  const size_t wake = std::min(wakeAt, size);
  if (wake >= kMinRaisedWake) setLowWatermark(wake);
  else lowerLowWatermark(wake);
  socket_.async_read_some(asio::buffer(data, size), std::move(handler));
}

void TcpStream::shutdownSend() {
  std::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

void TcpStream::asyncWriteAll(const ConstBuffer* buffers, size_t count, IoHandler handler) {
  gather_.clear();
  for (size_t i = 0; i < count; ++i) gather_.emplace_back(buffers[i].data, buffers[i].size);
  asio::async_write(socket_, gather_, std::move(handler));
}

void TcpStream::close() {
  if (!socket_.is_open()) return;
  std::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace rs::transport
