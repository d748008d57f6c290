#include "core/transport/tcp/socket_options.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <climits>

namespace rs::transport::tcp {
namespace {
// Linux 6.15's per-socket minimum RTO (uapi value; Debian 12's headers predate it).
constexpr int kTcpRtoMinUs = 45;
// A tail loss probe with one segment in flight waits the minimum RTO (200 ms by default) on
// top of the round trip, for a delayed ACK that may never come. At W=8 over 100 Mbit/s, a
// worker's ACK dropped in its own full transmit queue left a reducer's last result segment
// waiting so: 1 MiB all-reduces took 300-360 ms in 6-7 of 30 iterations against 97-135 ms,
// with no retransmission timeout counted, and a 5 ms route rto_min removed every stall.
// Why 20 ms and not 5 (bench/RESULTS.md, "The minimum RTO and the CPU"): Linux (6.7+) also
// caps its delayed-ACK timer one tick below the minimum RTO, and at 5 ms (8 at 250 Hz) paced
// W=4 runs kept the machine 49-82% busy against 39-42% without the option, the reducers'
// CPU per byte up to 1.6x; at 20 ms, 44-50%. W=8 ran as well at 20 ms as at 5 (256 KiB: 24.2
// against 24.0 ms; 1 MiB: 30 of 30 iterations under 99 ms); at 40 ms 256 KiB took 28 ms.
// Reducers sit beside their workers, round trips are well under a millisecond, so 20 ms
// still leaves a wide margin against spurious retransmissions.
constexpr int kRtoMinMicroseconds = 20000;
// Unsent bytes a paced socket leaves in the kernel: kPacedUnsentMs of its pace, within these
// bounds (setPacing says why).
constexpr uint64_t kPacedUnsentMs = 32;
constexpr uint64_t kMinPacedUnsentBytes = 4 << 10;
constexpr uint64_t kMaxPacedUnsentBytes = 1 << 20;
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

void setLossTimeouts(int fd, std::chrono::milliseconds bound, bool unreadSendsToo) {
  constexpr int kProbes = 3;
  const auto seconds = [](std::chrono::milliseconds ms) {
    return static_cast<int>(std::clamp<int64_t>((ms.count() + 999) / 1000, 1, INT_MAX));
  };
  struct Option {
    int level, name, value;
  };
  const Option options[] = {{SOL_SOCKET, SO_KEEPALIVE, 1},
                            {IPPROTO_TCP, TCP_KEEPIDLE, seconds(bound / 2)},
                            {IPPROTO_TCP, TCP_KEEPINTVL, seconds(bound / (2 * kProbes))},
                            {IPPROTO_TCP, TCP_KEEPCNT, kProbes}};
  for (const Option& o : options)
    (void)::setsockopt(fd, o.level, o.name, &o.value, sizeof(o.value));
  if (!unreadSendsToo) return;
  const auto userTimeout =
      static_cast<unsigned int>(std::clamp<int64_t>(bound.count(), 1, UINT_MAX));
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &userTimeout, sizeof(userTimeout));
}

// Linux TCP paces by itself once a socket has a maximum pacing rate (no fq qdisc needed).
// A paced socket also keeps only about 32 ms of its pace unsent in the kernel
// (TCP_NOTSENT_LOWAT), so that a write ends when its bytes are nearly on their way, not when
// they were copied: the owner then counts the stream idle when it truly is, and the others'
// share does not rise while much of it still waits to leave at the old pace (a fixed 128 KiB
// was 175 ms of a stream's pace at W=8 over 100 Mbit/s). Why not less: a socket is writable
// again once its unsent bytes fall below half the limit, and at 2 ms (15 kB per stream at
// W=4 over 1 Gbit/s) a reducer's results outgrew that between the reads that release them,
// so its thread slept and woke on write space alone: twice the context switches of an
// unpaced reducer and 1.3-1.5x a paced relay's CPU per byte. From 24 ms up every write
// fits, the switches are the unpaced count, and the CPU is the relay's (bench/RESULTS.md,
// "The unsent limit"); W=8 and W=16 ran as fast.
int setPacing(int fd, uint64_t bytesPerSecond, int unsentLimit) {
  const uint64_t rate = bytesPerSecond == 0 ? ~uint64_t{0} : bytesPerSecond;
  if (::setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof(rate)) != 0) {
    const unsigned int rate32 = static_cast<unsigned int>(std::min<uint64_t>(rate, UINT_MAX));
    (void)::setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate32, sizeof(rate32));
  }
  if (bytesPerSecond == 0) return unsentLimit;  // unpaced: the unsent limit no longer matters
  const int unsent = static_cast<int>(
      std::clamp<uint64_t>(bytesPerSecond * kPacedUnsentMs / 1000, kMinPacedUnsentBytes,
                           kMaxPacedUnsentBytes));
  if (unsent != unsentLimit &&
      ::setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &unsent, sizeof(unsent)) == 0)
    return unsent;
  return unsentLimit;
}

}  // namespace rs::transport::tcp
