// TcpStream's SO_RCVLOWAT handling on a real loopback connection: the mark a read leaves on the
// socket decides when epoll wakes the reader, so it is read back with getsockopt.
#include <catch2/catch.hpp>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/write.hpp>
#include <sys/socket.h>
#include <vector>

#include "core/transport/tcp_stream.h"
#include "tests/support/wait_until.h"

namespace rs::transport {
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
  int lowWatermark() {
    int value = 0;
    socklen_t len = sizeof(value);
    REQUIRE(::getsockopt(reader->socket().native_handle(), SOL_SOCKET, SO_RCVLOWAT, &value, &len) == 0);
    return value;
  }
  // Writes `bytes` and runs until the pending read completed; returns what it read.
  size_t feed(size_t bytes, size_t* got) {
    std::vector<char> data(bytes, 'x');
    asio::write(writer, asio::buffer(data));
    // Until the read's handler ran (a state), within a deadline that only catches a hang.
    const auto end = std::chrono::steady_clock::now() + test::kStateDeadline;
    while (*got == 0 && std::chrono::steady_clock::now() < end)
      io.run_one_for(std::chrono::seconds(1));
    io.restart();
    return *got;
  }
};

}  // namespace

TEST_CASE("small reads leave SO_RCVLOWAT alone; large ones raise it; exact reads lower it",
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

}  // namespace rs::transport
