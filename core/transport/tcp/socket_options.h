// The tuning every TCP data connection gets, both ends alike: TCP_NODELAY, keep-alive, and the
// buffer sizes of TcpOptions; and the pace a stream is given (LinkShare decides the rate).
#pragma once

#include <chrono>
#include <cstdint>

#include <asio/ip/tcp.hpp>

#include "core/common/status.h"
#include "core/transport/options.h"

namespace rs::transport::tcp {

// Applies TCP_NODELAY and `options` to a connected socket.
Status configureSocket(asio::ip::tcp::socket& socket, const TcpOptions& options);

// The second net under a stream's heartbeats (Stream::setLossBound): keep-alive probes that end
// an idle connection whose peer's host stopped answering after about `bound` (idle for half of
// it, then 3 probes over the other half, each at least a second: the kernel counts in
// seconds), and with `unreadSendsToo` TCP_USER_TIMEOUT = `bound`, which also ends it once sent
// bytes stay unacknowledged for that long, or once the peer's window stays shut that long
// (Linux 5.11+ aborts a zero-window connection at the user timeout: a peer that does not read).
// Best effort: a kernel that refuses an option keeps its own.
void setLossTimeouts(int fd, std::chrono::milliseconds bound, bool unreadSendsToo);

// Paces the connected socket `fd` at `bytesPerSecond` (0: unpaced) and, paced, keeps about
// 32 ms of the pace unsent in the kernel (4 KiB to 1 MiB). `unsentLimit` is the
// TCP_NOTSENT_LOWAT the socket has now (0: never set); returns the one it has after. Best
// effort: a kernel that refuses leaves the socket as it was. The floor benchmarks pace their
// sockets with this too.
int setPacing(int fd, uint64_t bytesPerSecond, int unsentLimit);

}  // namespace rs::transport::tcp
