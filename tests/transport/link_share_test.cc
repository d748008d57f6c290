// Pacing to a share of the host's link (core/transport/link_share.h): the share arithmetic,
// and the pace a real TCP socket is left with (read back with getsockopt; TCP only: a transport
// that cannot pace ignores setPacingRate). Members paced in all-reduces:
// tests/dataplane/member_pacing_test.cc.
#include <catch2/catch.hpp>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/transport/link_share.h"
#include "core/transport/tcp/tcp_stream.h"

namespace rs::test {
namespace {

using transport::LinkShare;

uint64_t pacingRateOf(transport::tcp::TcpStream& stream) {
  uint64_t rate = 0;
  socklen_t len = sizeof(rate);
  REQUIRE(::getsockopt(stream.socket().native_handle(), SOL_SOCKET, SO_MAX_PACING_RATE, &rate,
                       &len) == 0);
  return len == sizeof(uint32_t) ? static_cast<uint32_t>(rate) : rate;
}

struct LoopbackStreams {
  asio::io_context io;
  std::vector<std::unique_ptr<transport::tcp::TcpStream>> streams;
  std::vector<asio::ip::tcp::socket> peers;
  explicit LoopbackStreams(int n) {
    asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    for (int i = 0; i < n; ++i) {
      peers.emplace_back(io);
      peers.back().connect(acceptor.local_endpoint());
      asio::ip::tcp::socket accepted(io);
      acceptor.accept(accepted);
      streams.push_back(std::make_unique<transport::tcp::TcpStream>(std::move(accepted)));
    }
  }
};

}  // namespace

TEST_CASE("the paced part of the link is divided among the busy streams only", "[link_share]") {
  CHECK(LinkShare::bytesPerSecondFromGbps(0) == 0);
  CHECK(LinkShare::bytesPerSecondFromGbps(-1) == 0);
  CHECK(LinkShare::bytesPerSecondFromGbps(8) == 1'000'000'000);
  CHECK(LinkShare::forProcess(0) == nullptr);
  auto link = LinkShare::forProcess(1'000'000);
  CHECK(LinkShare::forProcess(1'000'000) == link);  // one per rate in a process
  CHECK(LinkShare::forProcess(2'000'000) != link);
  const uint64_t paced = static_cast<uint64_t>(1'000'000 * LinkShare::kPacedFraction);
  CHECK(link->share() == paced);

  LinkShare::Pacer a(link), b(link), c(link);
  a.busy();
  a.busy();  // a stream counts once however many chunks it carries
  CHECK(link->busyStreams() == 1);
  CHECK(link->share() == paced);
  b.busy();
  c.busy();
  CHECK(link->busyStreams() == 3);
  CHECK(link->share() == paced / 3);
  b.idle();
  b.idle();
  CHECK(link->share() == paced / 2);
  {
    LinkShare::Pacer d(link);
    d.busy();
    CHECK(link->busyStreams() == 3);
  }  // a pacer that goes away busy leaves the count
  CHECK(link->busyStreams() == 2);
  a.idle();
  c.idle();
  CHECK(link->busyStreams() == 0);
  LinkShare::Pacer off;
  off.busy();
  CHECK_FALSE(off.enabled());
}

TEST_CASE("a busy TCP stream is left paced at its share, and follows it as others come and go",
          "[link_share]") {
  LoopbackStreams s(3);
  auto link = std::make_shared<LinkShare>(3'000'000);
  const uint64_t paced = static_cast<uint64_t>(3'000'000 * LinkShare::kPacedFraction);
  LinkShare::Pacer p0(link), p1(link), p2(link);
  p0.busy(LinkShare::kUnpacedBytes + 1);  // enough under way to be paced
  p0.refresh(*s.streams[0]);
  CHECK(pacingRateOf(*s.streams[0]) == paced);
  p1.busy();
  p2.busy();
  p0.refresh(*s.streams[0]);
  p1.refresh(*s.streams[1]);
  CHECK(pacingRateOf(*s.streams[0]) == paced / 3);
  CHECK(pacingRateOf(*s.streams[1]) == paced / 3);
  p1.idle();
  p2.idle();
  p0.refresh(*s.streams[0]);
  CHECK(pacingRateOf(*s.streams[0]) == paced);
  s.streams[2]->setPacingRate(0);  // 0: no cap
  CHECK(pacingRateOf(*s.streams[2]) >= (uint64_t{1} << 32) - 1);
}

}  // namespace rs::test

namespace rs::test {

TEST_CASE("a pace also bounded by the far end's link takes the smaller share", "[link_share]") {
  using transport::LinkShare;
  auto host = std::make_shared<LinkShare>(8'000'000);
  auto reducerA = std::make_shared<LinkShare>(1'000'000);  // e.g. its link / W
  auto reducerB = std::make_shared<LinkShare>(1'000'000);
  LinkShare::Pacer a1(host, reducerA), a2(host, reducerA), b1(host, reducerB);
  a1.busy();
  a2.busy();
  b1.busy();
  CHECK(host->busyStreams() == 3);
  CHECK(reducerA->busyStreams() == 2);
  CHECK(reducerB->busyStreams() == 1);
  // host: 0.9 x 8e6 / 3 = 2.4e6 each; reducer A: 0.9 x 1e6 / 2 = 450e3; B: 900e3.
  CHECK(std::min(host->share(), reducerA->share()) == reducerA->share());
  CHECK(reducerA->share() == static_cast<uint64_t>(1'000'000 * LinkShare::kPacedFraction) / 2);
  a2.idle();
  CHECK(reducerA->busyStreams() == 1);
  CHECK(host->busyStreams() == 2);
  b1.idle();
  a1.idle();
  CHECK(host->busyStreams() == 0);
  CHECK(reducerA->busyStreams() == 0);
}

}  // namespace rs::test

namespace rs::test {

TEST_CASE("a host with little under way is not paced, past the threshold it is",
          "[link_share]") {
  using transport::LinkShare;
  LoopbackStreams s(2);
  auto link = std::make_shared<LinkShare>(10'000'000);
  LinkShare::Pacer a(link), b(link);
  a.busy(LinkShare::kUnpacedBytes / 2);
  b.busy(LinkShare::kUnpacedBytes / 2);
  CHECK_FALSE(link->paced());
  a.refresh(*s.streams[0]);
  CHECK(pacingRateOf(*s.streams[0]) >= (uint64_t{1} << 32) - 1);  // never set: no cap
  b.busy(1);
  CHECK(link->paced());
  a.refresh(*s.streams[0]);
  CHECK(pacingRateOf(*s.streams[0]) == link->share());
  b.done(LinkShare::kUnpacedBytes / 2 + 1);
  CHECK(link->paced());  // still: a collective's tail is not let loose
  a.idle();
  b.idle();
  CHECK(link->bytesUnderWay() == 0);
  CHECK(link->busyStreams() == 0);
  CHECK_FALSE(link->paced());  // every stream idle: the next small collective goes unpaced
  a.busy(1);
  a.refresh(*s.streams[0]);
  CHECK(pacingRateOf(*s.streams[0]) >= (uint64_t{1} << 32) - 1);  // no cap
  a.idle();
}

}  // namespace rs::test
