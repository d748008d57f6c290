// transport::Connector over real loopback sockets: it dials a peer that is not up yet and
// gets through once it is, gives up at its time limit naming the endpoint and the last error,
// and stops at once when cancelled. Every wait is for a state (a failed attempt counted, a
// handler run), never for a time.
#include <catch2/catch.hpp>

#include <asio/io_context.hpp>
#include <optional>
#include <string>

#include "core/transport/connector.h"
#include "core/transport/listener.h"
#include "tests/support/run_until.h"

namespace rs::transport {
namespace {

using Catch::Matchers::Contains;
using test::runUntil;

using namespace std::chrono_literals;

// A loopback port where nothing listens now (it did a moment ago: connects are refused).
uint16_t closedPort(asio::io_context& io) {
  auto listener = listen(io, {"127.0.0.1", 0}, {}, PortZero::kAllowed);
  REQUIRE(listener.isOk());
  return (*listener)->port();
}

// What a dial ended with, and how often its handler ran.
struct DialOutcome {
  int calls = 0;
  std::optional<Result<std::unique_ptr<Stream>>> result;
  ConnectHandler handler() {
    return [this](Result<std::unique_ptr<Stream>> r) {
      ++calls;
      result.emplace(std::move(r));
    };
  }
};

}  // namespace

TEST_CASE("connector: dials before the listener exists and gets through once it is up",
          "[transport]") {
  asio::io_context io;
  const uint16_t port = closedPort(io);
  auto connector = makeConnector(io, {}, Backoff{std::chrono::milliseconds(5), 50ms});
  DialOutcome out;
  connector->connect({"127.0.0.1", port}, 120s, out.handler());
  CHECK(out.calls == 0);  // never inside connect()

  // Refused at least once: the peer is not up yet, and the connector keeps trying.
  REQUIRE(runUntil(io, [&] { return connector->failedAttempts() >= 1; }));
  CHECK(out.calls == 0);

  auto listener = listen(io, {"127.0.0.1", port}, {});
  REQUIRE(listener.isOk());
  std::unique_ptr<Stream> accepted;
  (*listener)->asyncAccept([&](const std::error_code& ec, std::unique_ptr<Stream> s) {
    REQUIRE(!ec);
    accepted = std::move(s);
  });
  REQUIRE(runUntil(io, [&] { return out.calls == 1 && accepted != nullptr; }));
  REQUIRE(out.result->isOk());
  std::unique_ptr<Stream> dialled = std::move(out.result->value());
  CHECK(dialled->peerName() == "tcp://127.0.0.1:" + std::to_string(port));

  // The two ends are one connection.
  ConstBuffer hello{"hello", 5};
  dialled->asyncWriteAll(&hello, 1, [](const std::error_code& ec, size_t) { REQUIRE(!ec); });
  char in[5] = {};
  bool read = false;
  accepted->asyncReadExactly(in, 5, [&](const std::error_code& ec, size_t) {
    REQUIRE(!ec);
    read = true;
  });
  REQUIRE(runUntil(io, [&] { return read; }));
  CHECK(std::string(in, 5) == "hello");
  CHECK(out.calls == 1);
}

TEST_CASE("connector: a name resolves and connects", "[transport]") {
  asio::io_context io;
  auto listener = listen(io, {"localhost", 0}, {}, PortZero::kAllowed);
  REQUIRE(listener.isOk());
  std::unique_ptr<Stream> accepted;
  (*listener)->asyncAccept([&](const std::error_code&, std::unique_ptr<Stream> s) {
    accepted = std::move(s);
  });
  auto connector = makeConnector(io, {});
  DialOutcome out;
  connector->connect({"localhost", (*listener)->port()}, 120s, out.handler());
  REQUIRE(runUntil(io, [&] { return out.calls == 1 && accepted != nullptr; }));
  INFO(out.result->status().toString());
  CHECK(out.result->isOk());
}

TEST_CASE("connector: the time limit ends the dial, naming the endpoint and the last error",
          "[transport]") {
  asio::io_context io;
  const uint16_t port = closedPort(io);
  auto connector = makeConnector(io, {});
  DialOutcome out;
  connector->connect({"127.0.0.1", port}, 300ms, out.handler());
  REQUIRE(runUntil(io, [&] { return out.calls == 1; }));
  REQUIRE_FALSE(out.result->isOk());
  const Status& s = out.result->status();
  INFO(s.toString());
  CHECK(s.code() == StatusCode::kTimeout);
  CHECK_THAT(s.message(), Contains("cannot connect to 127.0.0.1:" + std::to_string(port)));
  CHECK_THAT(s.message(), Contains("within 300 ms"));
  CHECK_THAT(s.message(), Contains("refused"));
  CHECK(connector->failedAttempts() >= 1);
  io.run();  // nothing of the dial is left pending
  CHECK(out.calls == 1);
}

TEST_CASE("connector: cancel ends a retrying dial at once, with its handler run once",
          "[transport]") {
  asio::io_context io;
  const uint16_t port = closedPort(io);
  auto connector = makeConnector(io, {});
  DialOutcome out;
  connector->connect({"127.0.0.1", port}, 24h, out.handler());  // a cancel that waited would hang
  REQUIRE(runUntil(io, [&] { return connector->failedAttempts() >= 1; }));
  connector->cancel();
  CHECK(out.calls == 0);  // never inside cancel()
  connector->cancel();    // nothing more to end
  io.run();               // returns once the dial's resolver, socket and timers are done
  REQUIRE(out.calls == 1);
  CHECK(out.result->status().code() == StatusCode::kAborted);
  CHECK_THAT(out.result->status().message(), Contains("127.0.0.1:" + std::to_string(port)));
}

TEST_CASE("connector: destroying it ends the dial like cancel", "[transport]") {
  asio::io_context io;
  const uint16_t port = closedPort(io);
  DialOutcome out;
  {
    auto connector = makeConnector(io, {});
    connector->connect({"127.0.0.1", port}, 24h, out.handler());
  }
  io.run();
  REQUIRE(out.calls == 1);
  CHECK(out.result->status().code() == StatusCode::kAborted);
}

}  // namespace rs::transport
