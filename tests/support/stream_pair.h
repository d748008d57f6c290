// A connected pair of streams for the transport tests, one kind per implementation, so that a
// test of the Stream contract runs over each (TEMPLATE_TEST_CASE(..., test::TcpPair,
// test::MemoryPair)): `local`, the stream under test, on `io`, which the test's thread runs;
// the peer's end, a stream of the same kind, on an io_context of its own that a thread of its
// own runs, driven by blocking calls (peerWrite, peerReadSome, ...) from the test's thread or
// any other, as a plain socket would be. Each blocking call returns once its handler ran; past
// kStateDeadline (a hang) it closes the peer's end, which ends the call with an error.
//   TcpPair: loopback TCP, both ends TcpStreams.
//   MemoryPair: memory::connectedPair, each end with the given receive buffer.
// What differs between them (filling a receive path, a reset, socket options) is here, so
// that the tests read alike; what only TCP has, a test reaches through tcp() and says so.
#pragma once

#include <catch2/catch.hpp>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <functional>
#include <future>
#include <linux/sockios.h>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "core/transport/memory/memory_stream.h"
#include "core/transport/stream.h"
#include "core/transport/tcp/tcp_stream.h"
#include "tests/support/run_until.h"
#include "tests/support/wait_until.h"

namespace rs::test {

class StreamPair {
 public:
  virtual ~StreamPair() {
    peerWork_.reset();
    if (thread_.joinable()) thread_.join();
  }
  StreamPair(const StreamPair&) = delete;
  StreamPair& operator=(const StreamPair&) = delete;

  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};

  // Runs `f` with the peer's stream on the peer's thread, and waits for it.
  void onPeer(const std::function<void(transport::Stream&)>& f) {
    std::promise<void> done;
    asio::post(peerIo_, [&] {
      f(*peer_);
      done.set_value();
    });
    done.get_future().wait();
  }
  // One operation on the peer's stream, started on its thread by `start`; its handler's result.
  std::pair<std::error_code, size_t> peerCall(
      const std::function<void(transport::Stream&, transport::IoHandler)>& start) {
    auto result = std::make_shared<std::promise<std::pair<std::error_code, size_t>>>();
    auto future = result->get_future();
    asio::post(peerIo_, [&, result] {
      start(*peer_, [result](const std::error_code& ec, size_t n) { result->set_value({ec, n}); });
    });
    if (future.wait_for(kStateDeadline) != std::future_status::ready)
      asio::post(peerIo_, [this] { peer_->close(); });  // a hang: its handler runs, aborted
    return future.get();
  }

  // The peer writes all of it (one gather write).
  std::error_code peerWrite(const void* data, size_t size) {
    const transport::ConstBuffer buffer{data, size};
    return peerCall([&](transport::Stream& s, transport::IoHandler h) {
             s.asyncWriteAll(&buffer, 1, std::move(h));
           }).first;
  }
  std::error_code peerWrite(const std::vector<uint8_t>& bytes) {
    return peerWrite(bytes.data(), bytes.size());
  }
  std::error_code peerReadExactly(void* data, size_t size) {
    return peerCall([&](transport::Stream& s, transport::IoHandler h) {
             s.asyncReadExactly(data, size, std::move(h));
           }).first;
  }
  size_t peerReadSome(void* data, size_t size, std::error_code& ec) {
    auto [error, n] = peerCall([&](transport::Stream& s, transport::IoHandler h) {
      s.asyncReadSome(data, size, std::move(h));
    });
    ec = error;
    return n;
  }
  void peerShutdownSend() {
    onPeer([](transport::Stream& s) { s.shutdownSend(); });
  }
  // An orderly close (which a peer with bytes left unread answers with a reset, as a kernel
  // does).
  void peerClose() {
    onPeer([](transport::Stream& s) { s.close(); });
  }
  // The connection fails as a lost one does: `local` gets connection_reset.
  virtual void peerReset() = 0;
  // The peer sends until `local`'s receive path takes no more (nothing pending afterwards);
  // returns what it sent.
  virtual size_t peerFill() = 0;
  // `sender` (the local stream, or one it moved to) sends, not in a pending write, until the
  // peer's receive path takes no more; the peer reads nothing meanwhile. Returns what it sent.
  virtual size_t localFill(transport::Stream& sender) = 0;
  // The peer's end of the stream (peerShutdownSend) has reached `local`.
  virtual bool peerEndArrived() = 0;
  // The local stream as TCP, for what only TCP has; null for another transport.
  virtual transport::tcp::TcpStream* tcp() { return nullptr; }

  std::unique_ptr<transport::Stream> local;

 protected:
  StreamPair() = default;
  void start(std::unique_ptr<transport::Stream> localEnd,
             std::unique_ptr<transport::Stream> peerEnd) {
    local = std::move(localEnd);
    peer_ = std::move(peerEnd);
    thread_ = std::thread([this] { peerIo_.run(); });
  }
  transport::Stream& peerStream() { return *peer_; }  // on the peer's thread only

  asio::io_context peerIo_;
  asio::executor_work_guard<asio::io_context::executor_type> peerWork_{peerIo_.get_executor()};

 private:
  std::unique_ptr<transport::Stream> peer_;
  std::thread thread_;
};

class TcpPair final : public StreamPair {
 public:
  TcpPair() {
    asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    asio::ip::tcp::socket dialled(peerIo_);
    dialled.connect(acceptor.local_endpoint());
    asio::ip::tcp::socket accepted(io);
    acceptor.accept(accepted);
    auto localEnd = std::make_unique<transport::tcp::TcpStream>(std::move(accepted));
    tcp_ = localEnd.get();
    fd_ = tcp_->socket().native_handle();
    start(std::move(localEnd), std::make_unique<transport::tcp::TcpStream>(std::move(dialled)));
  }

  // An abortive close: SO_LINGER 0 sends a reset. The socket's own close, not the stream's,
  // whose shutdown would send a FIN first.
  void peerReset() override {
    onPeer([](transport::Stream& s) {
      auto& socket = dynamic_cast<transport::tcp::TcpStream&>(s).socket();
      const linger abortive{1, 0};
      ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_LINGER, &abortive, sizeof(abortive));
      std::error_code ignored;
      socket.close(ignored);
    });
  }
  // Until the kernel takes no more: the local socket's receive buffer and window are full.
  size_t peerFill() override {
    size_t sent = 0;
    std::error_code ec;
    onPeer([&](transport::Stream& s) {
      auto& socket = dynamic_cast<transport::tcp::TcpStream&>(s).socket();
      socket.non_blocking(true);
      const std::vector<char> block(256 << 10, 'z');
      while (!ec) sent += socket.write_some(asio::buffer(block), ec);
      std::error_code ignored;
      socket.non_blocking(false, ignored);
    });
    REQUIRE(ec == asio::error::would_block);
    return sent;
  }
  // A small send buffer, then sends until the kernel takes no more and the peer's window is
  // shut: all that was sent is acknowledged and the rest waits, so no acknowledgement can make
  // room any more.
  size_t localFill(transport::Stream& sender) override {
    const int fd = dynamic_cast<transport::tcp::TcpStream&>(sender).socket().native_handle();
    const int small = 64 << 10;
    REQUIRE(::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0);
    const std::vector<char> filler(16 << 10, 'f');
    size_t queued = 0;
    auto fill = [&] {
      for (;;) {
        const ssize_t n = ::send(fd, filler.data(), filler.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
          REQUIRE((errno == EAGAIN || errno == EWOULDBLOCK));
          return;
        }
        queued += static_cast<size_t>(n);
      }
    };
    REQUIRE(waitUntil([&] {
      fill();
      int outq = 0, unsent = 0;
      REQUIRE(::ioctl(fd, SIOCOUTQ, &outq) == 0);
      REQUIRE(::ioctl(fd, SIOCOUTQNSD, &unsent) == 0);
      return unsent > 0 && outq == unsent;
    }));
    fill();
    return queued;
  }
  bool peerEndArrived() override {
    pollfd state{fd_, POLLRDHUP, 0};
    return ::poll(&state, 1, 0) == 1 && (state.revents & POLLRDHUP) != 0;
  }
  transport::tcp::TcpStream* tcp() override { return tcp_; }

 private:
  transport::tcp::TcpStream* tcp_ = nullptr;  // `local` as made (it may move elsewhere)
  int fd_ = -1;
};

class MemoryPair final : public StreamPair {
 public:
  explicit MemoryPair(size_t bufferBytes = transport::memory::MemoryStream::kDefaultBufferBytes) {
    auto [localEnd, peerEnd] = transport::memory::connectedPair(io, peerIo_, bufferBytes);
    bufferBytes_ = localEnd->bufferBytes();
    start(std::move(localEnd), std::move(peerEnd));
  }

  void peerReset() override {
    onPeer([](transport::Stream& s) {
      dynamic_cast<transport::memory::MemoryStream&>(s).resetConnection();
    });
  }
  // Whole, then in ever smaller pieces: trySendNow takes a piece whole or not at all.
  size_t peerFill() override {
    size_t sent = 0;
    onPeer([&](transport::Stream& s) { sent = fillBy(s); });
    return sent;
  }
  // One write of what the peer's buffer has room for, which completes once it is all in.
  size_t localFill(transport::Stream& sender) override {
    uint64_t queued = 0;
    onPeer([&](transport::Stream& s) { queued = s.bytesQueued(); });
    const std::vector<char> filler(bufferBytes_ - queued, 'f');
    const transport::ConstBuffer buffer{filler.data(), filler.size()};
    bool done = false;
    std::error_code result;
    sender.asyncWriteAll(&buffer, 1, [&](const std::error_code& ec, size_t) {
      done = true;
      result = ec;
    });
    REQUIRE(runUntil(io, [&] { return done; }));
    REQUIRE(!result);
    return filler.size();
  }
  bool peerEndArrived() override { return true; }  // a memory stream's end is there at once

 private:
  static size_t fillBy(transport::Stream& s) {
    const std::vector<char> block(64 << 10, 'z');
    size_t sent = 0;
    for (size_t piece = block.size(); piece > 0;) {
      if (s.trySendNow(block.data(), piece)) sent += piece;
      else piece /= 2;
    }
    return sent;
  }
  size_t bufferBytes_ = 0;
};

}  // namespace rs::test
