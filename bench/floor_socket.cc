#include "bench/floor_socket.h"

#include <sys/socket.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <cerrno>
#include <cstdio>
#include <system_error>
#include <thread>

#include "core/transport/tcp/address.h"
#include "core/transport/tcp/socket_options.h"

namespace rs::bench {
namespace {

// Asio only builds and tunes the sockets; their descriptors are released to the caller.
asio::io_context& ioContext() {
  static asio::io_context io;
  return io;
}

std::string errnoText() { return std::system_category().message(errno); }

Status writePortFile(const std::string& path, uint16_t port) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) return ioError("writing " + tmp + ": " + errnoText());
  std::fprintf(f, "%u %d\n", static_cast<unsigned>(port), static_cast<int>(::getpid()));
  if (std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0)
    return ioError("writing " + path + ": " + errnoText());
  return Status::ok();
}

}  // namespace

Result<int> listenOn(const Endpoint& where, const std::string& portFile) {
  auto address = transport::tcp::resolveNow(where);
  if (!address) return address.status();
  std::error_code ec;
  asio::ip::tcp::acceptor acceptor(ioContext());
  acceptor.open(address->protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(*address, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return ioError("listening on " + where.toString() + ": " + ec.message());
  if (!portFile.empty()) RS_RETURN_IF_ERROR(writePortFile(portFile, acceptor.local_endpoint().port()));
  return acceptor.release();
}

Result<int> acceptTuned(int listener, const transport::TcpOptions& options) {
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  const int fd = ::accept(listener, reinterpret_cast<sockaddr*>(&peer), &len);
  if (fd < 0) return ioError("accept: " + errnoText());
  std::error_code ec;
  asio::ip::tcp::socket socket(ioContext());
  socket.assign(peer.ss_family == AF_INET6 ? asio::ip::tcp::v6() : asio::ip::tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    return ioError("accept: " + ec.message());
  }
  RS_RETURN_IF_ERROR(transport::tcp::configureSocket(socket, options));
  return socket.release();
}

Result<int> connectTuned(const Endpoint& peer, const transport::TcpOptions& options,
                         std::chrono::milliseconds patience) {
  auto address = transport::tcp::resolveNow(peer);
  if (!address) return address.status();
  const auto deadline = std::chrono::steady_clock::now() + patience;
  for (;;) {
    std::error_code ec;
    asio::ip::tcp::socket socket(ioContext());
    socket.connect(*address, ec);
    if (!ec) {
      RS_RETURN_IF_ERROR(transport::tcp::configureSocket(socket, options));
      return socket.release();
    }
    if (ec != asio::error::connection_refused || std::chrono::steady_clock::now() > deadline)
      return ioError("connecting to " + peer.toString() + ": " + ec.message());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Status sendAll(int fd, const char* data, size_t bytes) {
  while (bytes > 0) {
    const ssize_t n = ::send(fd, data, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ioError("send: " + errnoText());
    data += n;
    bytes -= static_cast<size_t>(n);
  }
  return Status::ok();
}

Status recvAll(int fd, char* data, size_t bytes) {
  while (bytes > 0) {
    const ssize_t n = ::recv(fd, data, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return ioError("recv: the peer closed the connection");
    if (n < 0) return ioError("recv: " + errnoText());
    data += n;
    bytes -= static_cast<size_t>(n);
  }
  return Status::ok();
}

}  // namespace rs::bench
