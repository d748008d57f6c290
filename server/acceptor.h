// Accepts data connections and runs their handshake: the first frame must be a valid HELLO
// within the handshake timeout; the registry then admits the stream into its group and the
// data plane moves it to the io thread that owns its stream index. A refused connection gets
// an ERROR frame with the reason before it is closed.
#pragma once

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <array>
#include <atomic>

#include "core/common/status.h"
#include "server/config.h"
#include "server/failure_reason.h"

namespace rs::server {

class DataPlane;

class Acceptor {
 public:
  Acceptor(asio::io_context& io, const ServerConfig& config, DataPlane& plane);
  Status listen(const std::string& hostPort);
  void start();
  void stop();
  uint16_t port() const { return port_; }
  // Counters for stats and metrics (any thread).
  uint64_t accepted() const { return accepted_.load(std::memory_order_relaxed); }
  uint64_t handshakeFailures(HandshakeFailure why) const {
    return handshakeFailures_[static_cast<size_t>(why)].load(std::memory_order_relaxed);
  }
  int pendingHandshakes() const { return pendingHandshakes_.load(std::memory_order_relaxed); }

 private:
  class Handshake;
  void acceptNext();
  void countFailure(HandshakeFailure why) {
    handshakeFailures_[static_cast<size_t>(why)].fetch_add(1, std::memory_order_relaxed);
  }

  asio::io_context& io_;
  const ServerConfig& config_;
  DataPlane& plane_;
  asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::atomic<uint64_t> accepted_{0};  // TCP connections accepted, before their handshake
  std::array<std::atomic<uint64_t>, kNumHandshakeFailures> handshakeFailures_{};
  std::atomic<int> pendingHandshakes_{0};
};

// Splits "host:port" / "[v6]:port" and resolves it numerically or by name.
Result<asio::ip::tcp::endpoint> resolveListenAddress(const std::string& hostPort);

}  // namespace rs::server
