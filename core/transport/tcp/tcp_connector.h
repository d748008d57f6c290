// TCP implementation of transport::Connector: resolve (unless numeric), connect, tune.
#pragma once

#include <asio/io_context.hpp>
#include <atomic>
#include <memory>

#include "core/transport/connector.h"

namespace rs::transport::tcp {

class TcpConnector final : public Connector {
 public:
  TcpConnector(asio::io_context& io, const TcpOptions& options, Backoff backoff);
  ~TcpConnector() override;

  void connect(const Endpoint& endpoint, std::chrono::milliseconds timeout,
               ConnectHandler handler) override;
  void cancel() override;
  uint64_t failedAttempts() const override {
    return failures_->load(std::memory_order_relaxed);
  }

 private:
  class Dial;  // one connect(): its resolver, socket and timers outlive a cancel until they ran

  asio::io_context& io_;
  const TcpOptions options_;
  const Backoff backoff_;
  std::shared_ptr<std::atomic<uint64_t>> failures_;
  std::shared_ptr<Dial> dial_;  // the latest; finished or in progress
};

}  // namespace rs::transport::tcp
