#include "core/transport/tcp_stream.h"

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
  return result;
}

void TcpStream::asyncReadExactly(void* data, size_t size, IoHandler handler) {
  asio::async_read(socket_, asio::buffer(data, size), std::move(handler));
}

void TcpStream::asyncReadSome(void* data, size_t size, IoHandler handler) {
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
