#include "core/transport/tcp/tcp_stream.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>

#include <asio/execution/context.hpp>
#include <asio/post.hpp>
#include <asio/query.hpp>
#include <asio/read.hpp>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/transport/tcp/address.h"
#include "core/transport/tcp/socket_options.h"

namespace rs::transport::tcp {

TcpStream::TcpStream(asio::ip::tcp::socket socket)
    : socket_(std::move(socket)), peer_(remoteEndpoint(socket_)), peerName_(describePeer(peer_)) {}

TcpStream::~TcpStream() { close(); }

Result<std::unique_ptr<Stream>> TcpStream::moveTo(asio::io_context& target) {
  std::error_code ec;
  auto protocol = socket_.local_endpoint(ec).protocol();
  if (ec) return ioError("moving " + peerName_ + ": " + ec.message());
  int fd = socket_.release(ec);
  if (ec) return ioError("moving " + peerName_ + ": " + ec.message());
  asio::ip::tcp::socket moved(target);
  moved.assign(protocol, fd, ec);
  if (ec) {
    ::close(fd);
    return ioError("moving " + peerName_ + ": " + ec.message());
  }
  auto result = std::make_unique<TcpStream>(std::move(moved));
  result->peer_ = peer_;
  result->peerName_ = peerName_;
  result->lowWatermark_ = lowWatermark_;  // the socket keeps its SO_RCVLOWAT
  result->bytesSent_ = bytesSent_;
  result->bytesRead_ = bytesRead_;
  return std::unique_ptr<Stream>(std::move(result));
}

// Asio's release() ends the pending operations (operation_aborted) and gives up the socket
// without closing it; the watch's epoll set, if any, closes with this stream.
Result<std::unique_ptr<Stream>> TcpStream::handOver() {
  ++watch_;
  std::error_code ec;
  if (peerWatch_) peerWatch_->close(ec);
  auto& io = static_cast<asio::io_context&>(
      asio::query(socket_.get_executor(), asio::execution::context));
  return moveTo(io);
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
        bytesRead_ += n;
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
  socket_.async_read_some(asio::buffer(data, size),
                          [this, h = std::move(handler)](const std::error_code& ec, size_t n) {
                            bytesRead_ += n;
                            h(ec, n);
                          });
}

uint64_t TcpStream::bytesArrived() const { return bytesRead_ + bytesQueued(); }

// FIONREAD: the bytes in the socket's receive queue, in order. A receive of at most that many
// copies all of them (tcp_recvmsg takes from the queue until the length is met), which is what
// Stream::bytesQueued promises.
uint64_t TcpStream::bytesQueued() const {
  int queued = 0;
  if (socket_.is_open() && ::ioctl(const_cast<asio::ip::tcp::socket&>(socket_).native_handle(),
                                   FIONREAD, &queued) == 0 && queued > 0)
    return static_cast<uint64_t>(queued);
  return 0;
}

// epoll reports the socket readable once SO_RCVLOWAT bytes are queued, or at the peer's FIN or
// a failure. As for an exact read the mark is only lowered here, never raised.
void TcpStream::asyncWaitReadable(WaitHandler handler, size_t wakeAt) {
  lowerLowWatermark(std::max<size_t>(1, wakeAt));
  socket_.async_wait(asio::socket_base::wait_read,
                     [h = std::move(handler)](const std::error_code& ec) { h(ec); });
}

void TcpStream::setLossBound(std::chrono::milliseconds bound, bool unreadSendsToo) {
  if (socket_.is_open() && bound.count() > 0)
    setLossTimeouts(socket_.native_handle(), bound, unreadSendsToo);
}

void TcpStream::setPacingRate(uint64_t bytesPerSecond) {
  if (socket_.is_open())
    unsentLimit_ = setPacing(socket_.native_handle(), bytesPerSecond, unsentLimit_);
}

void TcpStream::shutdownSend() {
  std::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

// Asio's async_write, with each send's bytes counted in the same step as the send itself
// (bytesSent): async_write reports its progress only through handlers that run later, after
// which a read handler may already hold the peer's reply to those bytes.
void TcpStream::asyncWriteAll(const ConstBuffer* buffers, size_t count, IoHandler handler) {
  gather_.clear();
  for (size_t i = 0; i < count; ++i)
    if (buffers[i].size != 0)
      gather_.push_back({const_cast<void*>(buffers[i].data), buffers[i].size});
  unsent_ = 0;
  written_ = 0;
  writeHandler_ = std::move(handler);
  sendSome(/*initiating=*/true);
}

// Sends what the socket takes now; then waits for room, or ends the write.
void TcpStream::sendSome(bool initiating) {
  std::error_code error;
  while (unsent_ < gather_.size()) {
    if (!socket_.is_open()) {
      error = asio::error::bad_descriptor;
      break;
    }
    msghdr message{};
    message.msg_iov = gather_.data() + unsent_;
    message.msg_iovlen = std::min<size_t>(gather_.size() - unsent_, IOV_MAX);
    const ssize_t sent = ::sendmsg(socket_.native_handle(), &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      socket_.async_wait(asio::socket_base::wait_write, [this](const std::error_code& ec) {
        if (ec) return endWrite(ec, false);
        sendSome(false);
      });
      return;
    }
    if (sent < 0) {
      error = std::error_code(errno, asio::error::get_system_category());
      break;
    }
    bytesSent_ += static_cast<uint64_t>(sent);
    written_ += static_cast<size_t>(sent);
    for (size_t left = static_cast<size_t>(sent); left > 0;) {
      iovec& front = gather_[unsent_];
      const size_t taken = std::min(left, front.iov_len);
      front.iov_base = static_cast<std::byte*>(front.iov_base) + taken;
      front.iov_len -= taken;
      left -= taken;
      if (front.iov_len == 0) ++unsent_;
    }
  }
  endWrite(error, initiating);
}

// The handler never runs inside asyncWriteAll, whose caller may be in the middle of its own
// state change: a write that ends there completes through a post, as Asio's would.
void TcpStream::endWrite(const std::error_code& error, bool initiating) {
  IoHandler handler = std::move(writeHandler_);
  if (!initiating) return handler(error, written_);
  asio::post(socket_.get_executor(), [handler = std::move(handler), error, written = written_] {
    handler(error, written);
  });
}

// The kernel queues a small send whole when its send buffer has room for the bytes and one
// buffer's overhead, by its own accounting (SO_MEMINFO); only then is the send tried, so it
// cannot leave a cut frame behind.
constexpr uint32_t kSendOverheadBytes = 4096;

bool TcpStream::trySendNow(const void* data, size_t size) {
  if (!socket_.is_open()) return false;
  const int fd = socket_.native_handle();
  uint32_t memory[SK_MEMINFO_VARS] = {};
  socklen_t length = sizeof(memory);
  if (::getsockopt(fd, SOL_SOCKET, SO_MEMINFO, memory, &length) != 0 ||
      length < sizeof(uint32_t) * (SK_MEMINFO_WMEM_QUEUED + 1))
    return false;
  const uint64_t room = memory[SK_MEMINFO_SNDBUF] > memory[SK_MEMINFO_WMEM_QUEUED]
                            ? memory[SK_MEMINFO_SNDBUF] - memory[SK_MEMINFO_WMEM_QUEUED]
                            : 0;
  if (room < size + kSendOverheadBytes) return false;
  const ssize_t sent = ::send(fd, data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (sent > 0) bytesSent_ += static_cast<uint64_t>(sent);
  return sent == static_cast<ssize_t>(size);
}

// A wait for the socket's own readiness cannot serve: Asio re-arms it level-triggered, so bytes
// that sit unread complete it again and again. The watch has its own epoll set instead, holding
// the socket for EPOLLRDHUP alone (edge-triggered): a FIN or an error (EPOLLERR and EPOLLHUP
// are always reported) makes the set readable, while arriving bytes wake only the socket's
// readers (their wake-up names EPOLLIN, which the set does not ask for), so they cost nothing.
// A FIN that came before the watch began is found when the socket joins the set. Asio waits on
// the set, so stopping the watch cancels that wait alone.
bool TcpStream::watchPeerGone(WaitHandler handler) {
  if (!peerWatch_) {
    const int set = ::epoll_create1(EPOLL_CLOEXEC);
    if (set < 0) return false;
    std::error_code ec;
    auto watch = std::make_unique<asio::posix::stream_descriptor>(socket_.get_executor());
    watch->assign(set, ec);
    if (ec) {
      ::close(set);
      return false;
    }
    epoll_event interest{};
    interest.events = EPOLLRDHUP | EPOLLET;
    if (::epoll_ctl(set, EPOLL_CTL_ADD, socket_.native_handle(), &interest) != 0) return false;
    peerWatch_ = std::move(watch);
  }
  awaitPeerGone(++watch_, std::move(handler));
  return true;
}

void TcpStream::awaitPeerGone(uint64_t watch, WaitHandler handler) {
  peerWatch_->async_wait(
      asio::posix::descriptor_base::wait_read,
      [this, watch, h = std::move(handler)](const std::error_code& ec) mutable {
        // A wait that completed just before stopWatchingPeer() could not be cancelled.
        if (watch != watch_) return h(asio::error::operation_aborted);
        if (ec) return h(ec);
        if (const std::error_code gone = peerGone()) return h(gone);
        awaitPeerGone(watch, std::move(h));  // not the peer's end after all
      });
}

std::error_code TcpStream::peerGone() {
  pollfd state{socket_.native_handle(), POLLRDHUP, 0};
  if (::poll(&state, 1, 0) != 1) return {};
  if ((state.revents & (POLLERR | POLLHUP)) != 0) {
    int error = 0;
    socklen_t length = sizeof(error);
    ::getsockopt(state.fd, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) return {error, asio::error::get_system_category()};
    if ((state.revents & POLLERR) != 0) return asio::error::connection_reset;
    return asio::error::eof;
  }
  return (state.revents & POLLRDHUP) != 0 ? std::error_code(asio::error::eof) : std::error_code();
}

void TcpStream::stopWatchingPeer() {
  ++watch_;
  std::error_code ignored;
  if (peerWatch_) peerWatch_->cancel(ignored);
}

void TcpStream::close() {
  ++watch_;  // a watch's wait ends with operation_aborted, also one that had just completed
  std::error_code ignored;
  if (peerWatch_) peerWatch_->close(ignored);
  if (!socket_.is_open()) return;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace rs::transport::tcp
