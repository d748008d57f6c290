// transport::Listener over real loopback sockets: binding (port 0 only when asked for), the
// bound port, accepting a Stream that talks to the peer, and close.
#include <catch2/catch.hpp>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <string>

#include "core/transport/listener.h"
#include "tests/support/run_until.h"

namespace rs::transport {

using Catch::Matchers::Contains;
using test::runUntil;

TEST_CASE("listener: port 0 binds a free port that a peer reaches", "[transport]") {
  asio::io_context io;
  auto listener = listen(io, {"127.0.0.1", 0}, {}, PortZero::kAllowed);
  REQUIRE(listener.isOk());
  const uint16_t port = (*listener)->port();
  CHECK(port != 0);
  CHECK((*listener)->localEndpoint() == Endpoint{"127.0.0.1", port});

  std::error_code ec;
  std::unique_ptr<Stream> accepted;
  (*listener)->asyncAccept([&](const std::error_code& e, std::unique_ptr<Stream> s) {
    ec = e;
    accepted = std::move(s);
  });
  asio::ip::tcp::socket peer(io);
  peer.connect({asio::ip::make_address("127.0.0.1"), port});
  REQUIRE(runUntil(io, [&] { return accepted != nullptr || ec; }));
  REQUIRE(!ec);
  CHECK(accepted->peerName() ==
        "tcp://127.0.0.1:" + std::to_string(peer.local_endpoint().port()));

  // The stream carries bytes both ways.
  asio::write(peer, asio::buffer(std::string("ping")));
  char in[4] = {};
  bool read = false;
  accepted->asyncReadExactly(in, 4, [&](const std::error_code& e, size_t) {
    REQUIRE(!e);
    read = true;
  });
  REQUIRE(runUntil(io, [&] { return read; }));
  CHECK(std::string(in, 4) == "ping");
  ConstBuffer out{"pong", 4};
  bool written = false;
  accepted->asyncWriteAll(&out, 1, [&](const std::error_code& e, size_t) {
    REQUIRE(!e);
    written = true;
  });
  REQUIRE(runUntil(io, [&] { return written; }));
  char back[4] = {};
  asio::read(peer, asio::buffer(back));
  CHECK(std::string(back, 4) == "pong");
}

TEST_CASE("listener: port 0 is refused where the caller did not ask for it", "[transport]") {
  asio::io_context io;
  auto listener = listen(io, {"127.0.0.1", 0}, {});
  REQUIRE_FALSE(listener.isOk());
  CHECK(listener.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(listener.status().message(), Contains("127.0.0.1:0"));
  CHECK_THAT(listener.status().message(), Contains("port 0"));
}

TEST_CASE("listener: a name is resolved, a taken port is an error naming the address",
          "[transport]") {
  asio::io_context io;
  auto first = listen(io, {"localhost", 0}, {}, PortZero::kAllowed);
  REQUIRE(first.isOk());
  const Endpoint taken = (*first)->localEndpoint();
  auto second = listen(io, taken, {});
  REQUIRE_FALSE(second.isOk());
  INFO(second.status().toString());
  CHECK(second.status().code() == StatusCode::kIoError);
  CHECK_THAT(second.status().message(), Contains("cannot listen on " + taken.toString()));
  CHECK_THAT(second.status().message(), Contains("in use"));

  auto unknown = listen(io, {"no-such-host.invalid", 0}, {}, PortZero::kAllowed);
  REQUIRE_FALSE(unknown.isOk());
  CHECK_THAT(unknown.status().message(), Contains("no-such-host.invalid"));
}

TEST_CASE("listener: close ends a pending accept with operation_aborted", "[transport]") {
  asio::io_context io;
  auto listener = listen(io, {"127.0.0.1", 0}, {}, PortZero::kAllowed);
  REQUIRE(listener.isOk());
  std::error_code ec;
  int calls = 0;
  (*listener)->asyncAccept([&](const std::error_code& e, std::unique_ptr<Stream> s) {
    ec = e;
    ++calls;
    CHECK(s == nullptr);
  });
  (*listener)->close();
  (*listener)->close();  // idempotent
  io.run();              // returns once nothing is pending
  CHECK(calls == 1);
  CHECK(ec == asio::error::operation_aborted);
}

}  // namespace rs::transport
