#include "core/transport/tcp/socket_options.h"

#include <netinet/in.h>
#include <netinet/tcp.h>

namespace rs::transport::tcp {

Status configureSocket(asio::ip::tcp::socket& socket, const TcpOptions& options) {
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

}  // namespace rs::transport::tcp
