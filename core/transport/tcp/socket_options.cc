#include "core/transport/tcp/socket_options.h"

#include <netinet/in.h>
#include <netinet/tcp.h>

namespace rs::transport::tcp {
namespace {
// Linux 6.15's per-socket minimum RTO (uapi value; Debian 12's headers predate it).
constexpr int kTcpRtoMinUs = 45;
// A tail loss probe with one segment in flight waits the minimum RTO (200 ms by default) on
// top of the round trip, for a delayed ACK that may never come. At W=8 over 100 Mbit/s, a
// worker's ACK dropped in its own full transmit queue left a reducer's last result segment
// waiting so: 1 MiB all-reduces took 300-360 ms in 6-7 of 30 iterations against 97-135 ms,
// with no retransmission timeout counted, and a 5 ms route rto_min removed every stall
// (bench/RESULTS.md). Reducers sit beside their workers, round trips are well under a
// millisecond, so 5 ms (the kernel rounds it up to its tick, 8 ms at 250 Hz) still leaves a
// wide margin against spurious retransmissions.
constexpr int kRtoMinMicroseconds = 5000;
}  // namespace

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
  // Best effort: an older kernel refuses the option and keeps its 200 ms.
  const int rtoMin = kRtoMinMicroseconds;
  (void)::setsockopt(socket.native_handle(), IPPROTO_TCP, kTcpRtoMinUs, &rtoMin, sizeof(rtoMin));
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
