// TcpStream on a real loopback connection: its SO_RCVLOWAT handling (the mark a read leaves on
// the socket decides when epoll wakes the reader, so it is read back with getsockopt), the
// move to another io_context, its gather writes and their count of bytes sent, the best-effort
// send of a last frame, the watch for a peer that goes away while nothing is read, the count
// of bytes arrived, and the loss bound's keep-alive and user timeout.
#include <catch2/catch.hpp>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/transport/tcp/socket_options.h"
#include "core/transport/tcp/tcp_stream.h"
#include "tests/support/run_until.h"
#include "tests/support/wait_until.h"

namespace rs::transport::tcp {
namespace {

struct LoopbackPair {
  asio::io_context io;
  asio::ip::tcp::socket writer{io};
  std::unique_ptr<TcpStream> reader;

  LoopbackPair() {
    asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    writer.connect(acceptor.local_endpoint());
    asio::ip::tcp::socket accepted(io);
    acceptor.accept(accepted);
    reader = std::make_unique<TcpStream>(std::move(accepted));
  }
  int lowWatermark() { return lowWatermarkOf(*reader); }
  static int lowWatermarkOf(TcpStream& stream) {
    int value = 0;
    socklen_t len = sizeof(value);
    REQUIRE(::getsockopt(stream.socket().native_handle(), SOL_SOCKET, SO_RCVLOWAT, &value,
                         &len) == 0);
    return value;
  }
  // Writes `bytes` and runs `context` until the pending read completed; returns what it read.
  size_t feed(size_t bytes, size_t* got) { return feedOn(io, bytes, got); }
  size_t feedOn(asio::io_context& context, size_t bytes, size_t* got) {
    std::vector<char> data(bytes, 'x');
    asio::write(writer, asio::buffer(data));
    // Until the read's handler ran (a state), within a deadline that only catches a hang.
    const auto end = std::chrono::steady_clock::now() + test::kStateDeadline;
    while (*got == 0 && std::chrono::steady_clock::now() < end)
      context.run_one_for(std::chrono::seconds(1));
    context.restart();
    return *got;
  }
};

}  // namespace

TEST_CASE("small reads leave SO_RCVLOWAT alone, large ones raise it, exact reads lower it",
          "[transport]") {
  LoopbackPair p;
  std::vector<char> buf(256 << 10);
  size_t got = 0;
  auto handler = [&](const std::error_code& ec, size_t n) {
    REQUIRE(!ec);
    got = n;
  };

  // 8 KiB wanted, wake at 64 KiB: the wake is capped at 8 KiB, below the threshold, so no
  // setsockopt and the kernel default (1) stays.
  p.reader->asyncReadSome(buf.data(), 8 << 10, handler, 64 << 10);
  CHECK(p.lowWatermark() == 1);
  CHECK(p.feed(8 << 10, &got) == (8 << 10));

  // 256 KiB wanted, wake at 64 KiB: raised to 64 KiB, and the read waits for all of it.
  got = 0;
  p.reader->asyncReadSome(buf.data(), buf.size(), handler, 64 << 10);
  CHECK(p.lowWatermark() == (64 << 10));
  CHECK(p.feed(64 << 10, &got) == (64 << 10));

  // An exact read of a 72-byte header lowers the mark to 72.
  got = 0;
  p.reader->asyncReadExactly(buf.data(), 72, handler);
  CHECK(p.lowWatermark() == 72);
  CHECK(p.feed(72, &got) == 72);

  // A small read with a mark already below its wake leaves it; one below the mark lowers it.
  got = 0;
  p.reader->asyncReadSome(buf.data(), 4 << 10, handler, 64 << 10);
  CHECK(p.lowWatermark() == 72);
  CHECK(p.feed(4 << 10, &got) == (4 << 10));
  got = 0;
  p.reader->asyncReadSome(buf.data(), 16, handler, 64 << 10);
  CHECK(p.lowWatermark() == 16);
  CHECK(p.feed(16, &got) == 16);
}

TEST_CASE("moveTo carries the connection, its name and its SO_RCVLOWAT to another io_context",
          "[transport]") {
  LoopbackPair p;
  std::vector<char> buf(256 << 10);
  size_t got = 0;
  auto handler = [&](const std::error_code& ec, size_t n) {
    REQUIRE(!ec);
    got = n;
  };
  p.reader->asyncReadSome(buf.data(), buf.size(), handler, 64 << 10);
  REQUIRE(p.feed(64 << 10, &got) == (64 << 10));
  REQUIRE(p.lowWatermark() == (64 << 10));
  const std::string name = p.reader->peerName();

  asio::io_context target;
  auto moved = p.reader->moveTo(target);
  REQUIRE(moved.isOk());
  std::unique_ptr<Stream> stream = std::move(*moved);
  CHECK_FALSE(p.reader->isOpen());  // the old one holds nothing any more
  CHECK(stream->isOpen());
  CHECK(stream->peerName() == name);
  CHECK(stream->executor() == asio::any_io_executor(target.get_executor()));
  auto& tcp = dynamic_cast<TcpStream&>(*stream);
  CHECK(LoopbackPair::lowWatermarkOf(tcp) == (64 << 10));

  // The same mark is known to the new stream: a wake at 64 KiB makes no setsockopt, and the
  // read completes on the target context.
  got = 0;
  stream->asyncReadSome(buf.data(), buf.size(), handler, 64 << 10);
  CHECK(LoopbackPair::lowWatermarkOf(tcp) == (64 << 10));
  CHECK(p.feedOn(target, 64 << 10, &got) == (64 << 10));
  // And it writes back to the same peer.
  const char hello[] = "hi";
  ConstBuffer out{hello, 2};
  bool written = false;
  stream->asyncWriteAll(&out, 1, [&](const std::error_code& ec, size_t n) {
    REQUIRE(!ec);
    REQUIRE(n == 2);
    written = true;
  });
  REQUIRE(test::waitUntil([&] {
    target.poll();
    return written;
  }));
  char back[2] = {};
  asio::read(p.writer, asio::buffer(back));
  CHECK(std::string(back, 2) == "hi");
}

TEST_CASE("trySendNow sends a small frame whole, or nothing when the send buffer is full",
          "[transport]") {
  LoopbackPair p;  // here the TcpStream sends and the plain socket receives
  const std::string frame(300, 'A');
  REQUIRE(p.reader->trySendNow(frame.data(), frame.size()));
  std::string first(frame.size(), '\0');
  asio::read(p.writer, asio::buffer(first));
  CHECK(first == frame);

  // The peer stops reading: fill the stream's send buffer until the kernel takes no more.
  const int fd = p.reader->socket().native_handle();
  const int small = 64 << 10;
  REQUIRE(::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0);
  const std::vector<char> filler(16 << 10, 'f');
  size_t queued = 0;
  auto fill = [&] {  // until the kernel takes no more
    for (;;) {
      const ssize_t n = ::send(fd, filler.data(), filler.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n < 0) {
        REQUIRE((errno == EAGAIN || errno == EWOULDBLOCK));
        return;
      }
      queued += static_cast<size_t>(n);
    }
  };
  // Until the peer's window is shut: all that was sent is acknowledged and the rest waits, so
  // no acknowledgement can make room any more.
  REQUIRE(test::waitUntil([&] {
    fill();
    int outq = 0, unsent = 0;
    REQUIRE(::ioctl(fd, SIOCOUTQ, &outq) == 0);
    REQUIRE(::ioctl(fd, SIOCOUTQNSD, &unsent) == 0);
    return unsent > 0 && outq == unsent;
  }));
  fill();
  CHECK_FALSE(p.reader->trySendNow(frame.data(), frame.size()));

  // Everything the peer receives before the end of the stream is filler: the frame did not go
  // out, not even in part.
  p.reader->close();
  std::string rest;
  std::vector<char> chunk(64 << 10);
  std::error_code ec;
  for (;;) {
    const size_t n = p.writer.read_some(asio::buffer(chunk), ec);
    rest.append(chunk.data(), n);
    if (ec) break;
  }
  CHECK(ec == asio::error::eof);
  CHECK(rest.size() == queued);
  CHECK(std::count(rest.begin(), rest.end(), 'f') == static_cast<std::ptrdiff_t>(rest.size()));
}

TEST_CASE("asyncWriteAll counts each byte in bytesSent as the kernel takes it, and delivers "
          "the gather exactly",
          "[transport]") {
  LoopbackPair p;  // here the TcpStream sends and the plain socket receives
  const int small = 64 << 10;  // so that the write below goes out in many sends
  REQUIRE(::setsockopt(p.reader->socket().native_handle(), SOL_SOCKET, SO_SNDBUF, &small,
                       sizeof(small)) == 0);
  REQUIRE(::setsockopt(p.writer.native_handle(), SOL_SOCKET, SO_RCVBUF, &small,
                       sizeof(small)) == 0);
  std::vector<uint8_t> head(72), body(3 << 20);
  for (size_t i = 0; i < head.size(); ++i) head[i] = static_cast<uint8_t>(i);
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<uint8_t>(i * 7 % 251);
  const ConstBuffer gather[] = {{head.data(), head.size()}, {nullptr, 0},
                                {body.data(), body.size()}};
  const uint64_t total = head.size() + body.size();
  bool done = false;
  std::error_code result;
  size_t written = 0;
  p.reader->asyncWriteAll(gather, 3, [&](const std::error_code& ec, size_t n) {
    done = true;
    result = ec;
    written = n;
  });
  CHECK_FALSE(done);  // never inside the call
  CHECK(p.reader->bytesSent() > 0);
  CHECK(p.reader->bytesSent() < total);

  // Whatever the peer has read was counted before it could read it.
  std::vector<uint8_t> received;
  std::vector<uint8_t> piece(16 << 10);
  size_t behind = 0;  // reads that found more than bytesSent counted
  while (received.size() < total) {
    if (received.size() == p.reader->bytesSent())  // all that went out is read: let more go
      REQUIRE(test::runUntil(p.io, [&] { return p.reader->bytesSent() > received.size(); }));
    const size_t n = p.writer.read_some(asio::buffer(piece));
    received.insert(received.end(), piece.begin(), piece.begin() + static_cast<std::ptrdiff_t>(n));
    if (received.size() > p.reader->bytesSent()) ++behind;
  }
  CHECK(behind == 0);
  REQUIRE(test::runUntil(p.io, [&] { return done; }));
  CHECK(result == std::error_code());
  CHECK(written == total);
  CHECK(p.reader->bytesSent() == total);
  std::vector<uint8_t> expected(head);
  expected.insert(expected.end(), body.begin(), body.end());
  CHECK(received == expected);
}

TEST_CASE("asyncWriteAll on a closed stream fails through its handler", "[transport]") {
  LoopbackPair p;
  p.reader->close();
  const char byte = 'x';
  const ConstBuffer one{&byte, 1};
  bool done = false;
  std::error_code result;
  p.reader->asyncWriteAll(&one, 1, [&](const std::error_code& ec, size_t) {
    done = true;
    result = ec;
  });
  CHECK_FALSE(done);
  REQUIRE(test::runUntil(p.io, [&] { return done; }));
  CHECK(result);
  CHECK(p.reader->bytesSent() == 0);
}

TEST_CASE("trySendNow on a closed stream sends nothing", "[transport]") {
  LoopbackPair p;
  p.reader->close();
  const char byte = 'x';
  CHECK_FALSE(p.reader->trySendNow(&byte, 1));
}

// What a parked session relies on (server/session.h): it reads nothing, yet learns at once that
// its member went away, and the bytes the member sent before stay for the read that resumes.
namespace {

// Bytes queued in the stream's receive buffer, unread.
int unreadBytes(TcpStream& stream) {
  int n = -1;
  REQUIRE(::ioctl(stream.socket().native_handle(), SIOCINQ, &n) == 0);
  return n;
}

struct Watch {
  bool done = false;
  std::error_code why;
  WaitHandler handler() {
    return [this](const std::error_code& ec) {
      done = true;
      why = ec;
    };
  }
};

}  // namespace

TEST_CASE("watchPeerGone sees the peer's FIN behind unread bytes, reads nothing, and idles while "
          "bytes arrive",
          "[transport]") {
  LoopbackPair p;
  Watch watch;
  REQUIRE(p.reader->watchPeerGone(watch.handler()));
  const std::vector<char> data(1000, 'd');
  asio::write(p.writer, asio::buffer(data));
  REQUIRE(test::waitUntil([&] { return unreadBytes(*p.reader) == 1000; }));
  // The arrival wakes the watch for one look at the socket; then it waits for the next event:
  // bytes that sit there run nothing (no spin), and nothing was read.
  p.io.poll();
  p.io.poll();
  CHECK(p.io.poll() == 0);
  CHECK_FALSE(watch.done);
  CHECK(unreadBytes(*p.reader) == 1000);

  p.writer.shutdown(asio::ip::tcp::socket::shutdown_send);
  REQUIRE(test::runUntil(p.io, [&] { return watch.done; }));
  CHECK(watch.why == asio::error::eof);
  CHECK(unreadBytes(*p.reader) == 1000);
  // The bytes are all there for a read, then the end of the stream.
  std::vector<char> got(2000);
  size_t n = 0;
  std::error_code ec;
  p.reader->asyncReadSome(got.data(), got.size(), [&](const std::error_code& e, size_t k) {
    ec = e;
    n = k;
  });
  REQUIRE(test::runUntil(p.io, [&] { return n != 0 || ec; }));
  CHECK(n == 1000);
}

TEST_CASE("watchPeerGone sees a FIN that came before it began, and a reset behind a full buffer",
          "[transport]") {
  LoopbackPair p;
  Watch watch;
  SECTION("closed before") {
    asio::write(p.writer, asio::buffer(std::string(100, 'x')));
    p.writer.shutdown(asio::ip::tcp::socket::shutdown_send);
    // Until the FIN is in (one look at the socket, as the watch's first).
    REQUIRE(test::waitUntil([&] {
      pollfd state{p.reader->socket().native_handle(), POLLRDHUP, 0};
      return ::poll(&state, 1, 0) == 1 && (state.revents & POLLRDHUP) != 0;
    }));
    REQUIRE(p.reader->watchPeerGone(watch.handler()));
    REQUIRE(test::runUntil(p.io, [&] { return watch.done; }));
    CHECK(watch.why == asio::error::eof);
  }
  SECTION("reset while the receive buffer is full") {
    REQUIRE(p.reader->watchPeerGone(watch.handler()));
    // The peer sends until the reader's buffer and window are full: nothing runs meanwhile.
    p.writer.non_blocking(true);
    const std::vector<char> block(256 << 10, 'z');
    std::error_code ec;
    while (!ec) p.writer.write_some(asio::buffer(block), ec);
    REQUIRE(ec == asio::error::would_block);
    p.io.poll();
    CHECK(p.io.poll() == 0);
    CHECK_FALSE(watch.done);
    const linger abortive{1, 0};
    ::setsockopt(p.writer.native_handle(), SOL_SOCKET, SO_LINGER, &abortive, sizeof(abortive));
    p.writer.close();
    REQUIRE(test::runUntil(p.io, [&] { return watch.done; }));
    CHECK(watch.why == asio::error::connection_reset);
  }
}

TEST_CASE("stopWatchingPeer ends the watch alone: a read right after it gets the queued bytes, "
          "and a close aborts a watch",
          "[transport]") {
  LoopbackPair p;
  Watch watch;
  REQUIRE(p.reader->watchPeerGone(watch.handler()));
  asio::write(p.writer, asio::buffer(std::string(300, 'y')));
  REQUIRE(test::waitUntil([&] { return unreadBytes(*p.reader) == 300; }));
  // Stopped and read in the same turn: the read does not wait behind the watch's wait for an
  // event that will not come (the bytes are already there).
  p.reader->stopWatchingPeer();
  std::vector<char> got(1000);
  size_t n = 0;
  p.reader->asyncReadSome(got.data(), got.size(), [&](const std::error_code&, size_t k) { n = k; });
  REQUIRE(test::runUntil(p.io, [&] { return watch.done && n != 0; }));
  CHECK(watch.why == asio::error::operation_aborted);
  CHECK(n == 300);

  Watch closed;
  REQUIRE(p.reader->watchPeerGone(closed.handler()));
  p.reader->close();
  REQUIRE(test::runUntil(p.io, [&] { return closed.done; }));
  CHECK(closed.why == asio::error::operation_aborted);
}

}  // namespace rs::transport::tcp

namespace rs::transport::tcp {
namespace {

// The minimum RTO that keeps a tail loss probe from waiting 200 ms, read back from the kernel.
// Linux older than 6.15 refuses the option (and the getsockopt): nothing to check there.
TEST_CASE("configureSocket sets a 20 ms minimum RTO where the kernel has the option",
          "[transport]") {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.open(asio::ip::tcp::v4());
  constexpr int kTcpRtoMinUs = 45;
  int before = 0;
  socklen_t len = sizeof(before);
  if (::getsockopt(socket.native_handle(), IPPROTO_TCP, kTcpRtoMinUs, &before, &len) != 0) {
    WARN("this kernel has no TCP_RTO_MIN_US: not checked");
    return;
  }
  CHECK(before == 200000);  // the kernel's default, so the check below sees our change
  REQUIRE(configureSocket(socket, TcpOptions{}).isOk());
  int after = 0;
  len = sizeof(after);
  REQUIRE(::getsockopt(socket.native_handle(), IPPROTO_TCP, kTcpRtoMinUs, &after, &len) == 0);
  // Kept in jiffies: 20 ms reads back rounded up to the tick (20 ms at 100, 250 and 1000 Hz).
  CHECK(after >= 20000);
  CHECK(after <= 30000);
}

// The pace and the unsent limit that goes with it, read back from the kernel.
TEST_CASE("setPacing sets the pacing rate and about 32 ms of it unsent", "[transport]") {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.open(asio::ip::tcp::v4());
  const int fd = socket.native_handle();
  auto readBack = [fd](int level, int name) {
    uint64_t value = 0;
    socklen_t len = sizeof(value);
    REQUIRE(::getsockopt(fd, level, name, &value, &len) == 0);
    return len == sizeof(uint32_t) ? static_cast<uint64_t>(static_cast<uint32_t>(value)) : value;
  };
  CHECK(setPacing(fd, 5'000'000, 0) == 160'000);  // 32 ms of 5 MB/s
  CHECK(readBack(SOL_SOCKET, SO_MAX_PACING_RATE) == 5'000'000);
  CHECK(readBack(IPPROTO_TCP, TCP_NOTSENT_LOWAT) == 160'000);
  CHECK(setPacing(fd, 100'000'000, 160'000) == 1 << 20);  // never over 1 MiB
  CHECK(readBack(IPPROTO_TCP, TCP_NOTSENT_LOWAT) == 1 << 20);
  CHECK(setPacing(fd, 100'000, 1 << 20) == 4096);  // never under 4 KiB
  CHECK(readBack(IPPROTO_TCP, TCP_NOTSENT_LOWAT) == 4096);
  CHECK(setPacing(fd, 0, 4096) == 4096);  // unpaced: the limit is left as it was
  CHECK(readBack(SOL_SOCKET, SO_MAX_PACING_RATE) >= UINT32_MAX);  // the kernel's "no limit"
}


TEST_CASE("bytesArrived counts bytes waiting unread as soon as they arrive, and reads do not "
          "move it",
          "[transport]") {
  LoopbackPair p;
  CHECK(p.reader->bytesArrived() == 0);
  std::vector<char> data(1000, 'a');
  asio::write(p.writer, asio::buffer(data));
  // Nothing is read: the bytes wait in the kernel and count.
  REQUIRE(test::waitUntil([&] { return p.reader->bytesArrived() == 1000; }));
  std::vector<char> got(400);
  size_t read = 0;
  p.reader->asyncReadExactly(got.data(), got.size(), [&](const std::error_code& ec, size_t n) {
    REQUIRE(!ec);
    read = n;
  });
  REQUIRE(test::runUntil(p.io, [&] { return read == 400; }));
  CHECK(p.reader->bytesArrived() == 1000);
  std::vector<char> rest(600 + 5);
  read = 0;
  p.reader->asyncReadSome(rest.data(), rest.size(), [&](const std::error_code& ec, size_t n) {
    REQUIRE(!ec);
    read = n;
  });
  REQUIRE(test::runUntil(p.io, [&] { return read == 600; }));
  CHECK(p.reader->bytesArrived() == 1000);
  asio::write(p.writer, asio::buffer(data.data(), 5));
  REQUIRE(test::waitUntil([&] { return p.reader->bytesArrived() == 1005; }));
  // A moved stream keeps its count.
  asio::io_context other;
  auto moved = p.reader->moveTo(other);
  REQUIRE(moved.isOk());
  CHECK((*moved)->bytesArrived() == 1005);
}

namespace {
int socketOption(int fd, int level, int name) {
  int value = -1;
  socklen_t len = sizeof(value);
  REQUIRE(::getsockopt(fd, level, name, &value, &len) == 0);
  return value;
}
}  // namespace

TEST_CASE("setLossBound sets keep-alive from the bound, and TCP_USER_TIMEOUT only when asked",
          "[transport]") {
  LoopbackPair p;
  const int fd = p.reader->socket().native_handle();
  p.reader->setLossBound(std::chrono::milliseconds(10000), /*unreadSendsToo=*/false);
  CHECK(socketOption(fd, SOL_SOCKET, SO_KEEPALIVE) == 1);
  CHECK(socketOption(fd, IPPROTO_TCP, TCP_KEEPIDLE) == 5);   // half the bound idle,
  CHECK(socketOption(fd, IPPROTO_TCP, TCP_KEEPINTVL) == 2);  // then 3 probes over the rest
  CHECK(socketOption(fd, IPPROTO_TCP, TCP_KEEPCNT) == 3);
  CHECK(socketOption(fd, IPPROTO_TCP, TCP_USER_TIMEOUT) == 0);  // the kernel's: none
  p.reader->setLossBound(std::chrono::milliseconds(10000), /*unreadSendsToo=*/true);
  CHECK(socketOption(fd, IPPROTO_TCP, TCP_USER_TIMEOUT) == 10000);
  // The kernel counts keep-alive in whole seconds: a short bound probes every second.
  p.reader->setLossBound(std::chrono::milliseconds(300), true);
  CHECK(socketOption(fd, IPPROTO_TCP, TCP_KEEPIDLE) == 1);
  CHECK(socketOption(fd, IPPROTO_TCP, TCP_KEEPINTVL) == 1);
  CHECK(socketOption(fd, IPPROTO_TCP, TCP_USER_TIMEOUT) == 300);
}

// The net a reducer's streams get: a member that stops reading (stopped, or its machine's
// kernel alive and its process not) ends the connection once its window has stayed shut for
// the bound, even with the peer's kernel answering every probe.
TEST_CASE("setLossBound with unreadSendsToo ends a connection whose peer stops reading",
          "[transport]") {
  LoopbackPair p;  // the TcpStream sends; the plain socket never reads
  p.reader->setLossBound(std::chrono::milliseconds(500), /*unreadSendsToo=*/true);
  std::vector<char> body(64 << 20, 'z');
  const ConstBuffer gather[] = {{body.data(), body.size()}};
  bool done = false;
  std::error_code result;
  const auto start = std::chrono::steady_clock::now();
  p.reader->asyncWriteAll(gather, 1, [&](const std::error_code& ec, size_t) {
    done = true;
    result = ec;
  });
  REQUIRE(test::runUntil(p.io, [&] { return done; }));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  INFO("the write ended after " << took.count() << " ms: " << result.message());
  CHECK(result == asio::error::timed_out);
  CHECK(p.reader->bytesSent() < body.size());
}

}  // namespace
}  // namespace rs::transport::tcp
