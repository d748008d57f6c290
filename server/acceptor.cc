#include "server/acceptor.h"

#include <asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "core/cluster/cluster_spec.h"
#include "core/transport/tcp_stream.h"
#include "core/wire/control_frames.h"
#include "core/wire/frame.h"
#include "server/data_plane.h"

namespace rs::server {
namespace {
constexpr int kMaxPendingHandshakes = 4096;
}

Result<asio::ip::tcp::endpoint> resolveListenAddress(const std::string& hostPort) {
  auto ep = cluster::parseEndpoint(hostPort, "listen address");
  // parseEndpoint refuses port 0, which a listener may ask for ("any free port").
  std::string host;
  uint16_t port = 0;
  if (ep) {
    host = ep->host;
    port = ep->port;
  } else if (hostPort.size() > 2 && hostPort.ends_with(":0")) {
    host = hostPort.substr(0, hostPort.size() - 2);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']')
      host = host.substr(1, host.size() - 2);
  } else {
    return ep.status();
  }
  std::error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  if (!ec) return asio::ip::tcp::endpoint(addr, port);
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec || results.empty())
    return invalidArgument("cannot resolve listen address '" + hostPort + "': " + ec.message());
  return results.begin()->endpoint();
}

// One connection from accept until it is handed to its io thread (or refused).
class Acceptor::Handshake : public std::enable_shared_from_this<Handshake> {
 public:
  Handshake(Acceptor& owner, asio::ip::tcp::socket socket)
      : owner_(owner),
        stream_(std::make_unique<transport::TcpStream>(std::move(socket))),
        timer_(owner.io_) {}

  void run() {
    if (Status s = transport::configureTcpSocket(stream_->socket(), owner_.config_.tcp);
        !s.isOk()) {
      refuse(HandshakeFailure::kClosed, s, /*reply=*/false);
      return;
    }
    timer_.expires_after(std::chrono::milliseconds(owner_.config_.handshakeTimeoutMs));
    timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
      if (ec || self->finished_) return;
      self->refuse(HandshakeFailure::kTimeout,
                   timeoutError(fmt::format("no HELLO within {} ms",
                                            self->owner_.config_.handshakeTimeoutMs)),
                   /*reply=*/false);
    });
    stream_->asyncReadExactly(header_.data(), header_.size(),
                              [self = shared_from_this()](const std::error_code& ec, size_t) {
                                self->onHeader(ec);
                              });
  }

 private:
  void onHeader(const std::error_code& ec) {
    if (finished_) return;
    if (ec) return refuse(HandshakeFailure::kClosed, ioError("closed before HELLO: " + ec.message()), false);
    wire::FrameHeader h;
    wire::DecodeLimits limits;
    limits.maxPayloadBytes = owner_.config_.maxChunkBytes;
    if (Status s = wire::decodeHeader(header_.data(), header_.size(), limits, &h); !s.isOk())
      return refuse(HandshakeFailure::kMalformed, s, /*reply=*/true);
    if (h.type != wire::FrameType::kHello)
      return refuse(HandshakeFailure::kMalformed,
                    protocolError(fmt::format("first frame is {}, expected HELLO",
                                              wire::frameTypeName(h.type))),
                    true);
    hello_ = h;
    stream_->asyncReadExactly(payload_.data(), payload_.size(),
                              [self = shared_from_this()](const std::error_code& ec, size_t) {
                                self->onPayload(ec);
                              });
  }

  void onPayload(const std::error_code& ec) {
    if (finished_) return;
    if (ec) return refuse(HandshakeFailure::kClosed, ioError("closed inside HELLO: " + ec.message()), false);
    wire::HelloPayload p;
    if (Status s = wire::decodeHello(payload_.data(), payload_.size(), &p); !s.isOk())
      return refuse(HandshakeFailure::kMalformed, s, true);
    if (p.streamCount > owner_.config_.maxStreamsPerWorker)
      return refuse(HandshakeFailure::kRefused, invalidArgument(fmt::format(
                        "{} streams per worker asked for; this reducer allows at most {} "
                        "(--max-streams-per-worker)",
                        p.streamCount, owner_.config_.maxStreamsPerWorker)),
                    true);
    GroupParams params{p.worldSize, p.streamCount, p.reducerIndex, p.reducerCount, p.timeoutMs};
    auto group = owner_.plane_.registry().joinStream(hello_.group, hello_.rank, p.streamIndex,
                                                     params);
    if (!group) return refuse(handshakeFailureFor(group.status().code()), group.status(), true);
    finished_ = true;
    timer_.cancel();
    owner_.pendingHandshakes_.fetch_sub(1);
    owner_.plane_.handOff(std::move(stream_), std::move(*group), hello_.rank, p.streamIndex);
  }

  // Counts, logs, optionally tells the peer why, and closes.
  void refuse(HandshakeFailure why, const Status& reason, bool reply) {
    if (finished_) return;
    finished_ = true;
    timer_.cancel();
    owner_.pendingHandshakes_.fetch_sub(1);
    owner_.countFailure(why);
    spdlog::warn("refused data connection from {}: {}", stream_->peerName(), reason.toString());
    if (!reply) {
      stream_->close();
      return;
    }
    reply_ = wire::errorFrame(hello_.group, hello_.rank, reason);
    buffers_[0] = {reply_.header.data(), reply_.header.size()};
    buffers_[1] = {reply_.reason.data(), reply_.reason.size()};
    stream_->asyncWriteAll(buffers_, 2, [self = shared_from_this()](const std::error_code&, size_t) {
      self->stream_->close();
    });
  }

  Acceptor& owner_;
  std::unique_ptr<transport::TcpStream> stream_;
  asio::steady_timer timer_;
  wire::HeaderBytes header_{};
  std::array<uint8_t, wire::kHelloPayloadSize> payload_{};
  wire::FrameHeader hello_;
  bool finished_ = false;
  wire::ErrorFrame reply_;
  transport::ConstBuffer buffers_[2]{};
};

Acceptor::Acceptor(asio::io_context& io, const ServerConfig& config, DataPlane& plane)
    : io_(io), config_(config), plane_(plane), acceptor_(io) {}

Status Acceptor::listen(const std::string& hostPort) {
  auto ep = resolveListenAddress(hostPort);
  if (!ep) return ep.status();
  std::error_code ec;
  acceptor_.open(ep->protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(*ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return ioError("data plane cannot listen on " + hostPort + ": " + ec.message());
  port_ = acceptor_.local_endpoint().port();
  return Status::ok();
}

void Acceptor::start() { acceptNext(); }

void Acceptor::stop() {
  std::error_code ignored;
  acceptor_.close(ignored);
}

void Acceptor::acceptNext() {
  acceptor_.async_accept([this](const std::error_code& ec, asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      spdlog::warn("accept failed: {}", ec.message());
      acceptNext();
      return;
    }
    accepted_.fetch_add(1, std::memory_order_relaxed);
    if (pendingHandshakes_.load() >= kMaxPendingHandshakes) {
      countFailure(HandshakeFailure::kLimit);
      spdlog::warn("refused {}: {} handshakes already pending", transport::describePeer(socket),
                   kMaxPendingHandshakes);
    } else {
      pendingHandshakes_.fetch_add(1);
      std::make_shared<Handshake>(*this, std::move(socket))->run();
    }
    acceptNext();
  });
}

}  // namespace rs::server
