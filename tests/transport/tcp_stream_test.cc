// What only TcpStream has, on a real loopback connection (TCP only: the other transports have no
// sockets): its SO_RCVLOWAT handling (the mark a read leaves on the socket decides when epoll
// wakes the reader, so it is read back with getsockopt), the minimum RTO and the pacing that
// configureSocket and setPacing set, and the loss bound's keep-alive and user timeout. The
// Stream contract, over TCP and the in-memory stream alike, is in stream_test.cc.
#include <catch2/catch.hpp>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/write.hpp>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <cstdint>
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
