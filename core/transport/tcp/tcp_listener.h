// TCP implementation of transport::Listener over an Asio acceptor.
#pragma once

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>

#include "core/common/log_limiter.h"
#include "core/transport/listener.h"

namespace rs::transport::tcp {

class TcpListener final : public Listener {
 public:
  // Resolves, binds (SO_REUSEADDR) and listens. Port 0 only with PortZero::kAllowed.
  static Result<std::unique_ptr<TcpListener>> open(asio::io_context& io, const Endpoint& endpoint,
                                                   const TcpOptions& options, PortZero portZero);
  ~TcpListener() override;

  void asyncAccept(AcceptHandler handler) override;
  uint16_t port() const override { return local_.port; }
  const Endpoint& localEndpoint() const override { return local_; }
  uint64_t acceptErrors() const override { return acceptErrors_.load(std::memory_order_relaxed); }
  void close() override;

 private:
  TcpListener(asio::io_context& io, const TcpOptions& options);
  void onAccept(const std::error_code& ec, asio::ip::tcp::socket socket, AcceptHandler handler);
  // One line per kAcceptErrorLogPeriod at most, with the count of the errors not logged.
  void logAcceptError(const std::error_code& ec);

  const TcpOptions options_;
  asio::ip::tcp::acceptor acceptor_;
  asio::steady_timer retry_;  // the pause after a passing accept error
  Endpoint local_;
  std::string name_;  // "tcp://127.0.0.1:41000", for logs
  std::atomic<uint64_t> acceptErrors_{0};
  LogLimiter errorLog_{1, std::chrono::seconds(10)};
};

}  // namespace rs::transport::tcp
