#include "core/transport/tcp/tcp_connector.h"

#include <asio/connect.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <fmt/format.h>

#include "core/transport/tcp/address.h"
#include "core/transport/tcp/socket_options.h"
#include "core/transport/tcp/tcp_stream.h"

namespace rs::transport::tcp {
namespace {

using Clock = std::chrono::steady_clock;

// Worth another try: nobody listening yet, or the network (or this host's) hiccuped.
bool peerNotUpYet(const std::error_code& ec) {
  return ec == asio::error::connection_refused || ec == asio::error::timed_out ||
         ec == asio::error::try_again || ec == asio::error::connection_reset ||
         ec == asio::error::connection_aborted || ec == asio::error::host_unreachable ||
         ec == asio::error::network_unreachable || ec == asio::error::network_down ||
         ec == asio::error::no_buffer_space || ec == std::errc::address_not_available;
}

// "120 s" or "300 ms".
std::string describeTimeout(std::chrono::milliseconds t) {
  if (t.count() % 1000 == 0) return fmt::format("{} s", t.count() / 1000);
  return fmt::format("{} ms", t.count());
}

}  // namespace

class TcpConnector::Dial : public std::enable_shared_from_this<Dial> {
 public:
  Dial(asio::io_context& io, const Endpoint& endpoint, std::chrono::milliseconds timeout,
       const TcpOptions& options, Backoff backoff,
       std::shared_ptr<std::atomic<uint64_t>> failures, ConnectHandler handler)
      : io_(io), endpoint_(endpoint), timeout_(timeout), options_(options),
        wait_(backoff.first), maxWait_(backoff.max), failures_(std::move(failures)),
        handler_(std::move(handler)), resolver_(io), socket_(io), retryTimer_(io),
        deadlineTimer_(io) {}

  void start() {
    deadline_ = Clock::now() + timeout_;
    deadlineTimer_.expires_at(deadline_);
    deadlineTimer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
      if (!ec) self->finish(self->timedOut());
    });
    attempt();
  }

  void cancel() {
    finish(abortedError("connecting to " + endpoint_.toString() + " was cancelled"));
  }

 private:
  void attempt() {
    if (done_) return;
    if (auto address = numericAddress(endpoint_.host)) {
      socket_.async_connect(asio::ip::tcp::endpoint(*address, endpoint_.port),
                            [self = shared_from_this()](const std::error_code& ec) {
                              self->onConnect(ec);
                            });
      return;
    }
    resolver_.async_resolve(
        endpoint_.host, std::to_string(endpoint_.port),
        [self = shared_from_this()](const std::error_code& ec,
                                    asio::ip::tcp::resolver::results_type results) {
          if (self->done_) return;
          // A name that does not resolve yet is a peer not up yet (its DNS record comes with it).
          if (ec) return self->attemptFailed("cannot resolve '" + self->endpoint_.host + "': " +
                                                 ec.message(),
                                             /*retry=*/true);
          asio::async_connect(self->socket_, results,
                              [self](const std::error_code& e, const asio::ip::tcp::endpoint&) {
                                self->onConnect(e);
                              });
        });
  }

  void onConnect(const std::error_code& ec) {
    if (done_) return;  // finish() closed the socket already
    if (ec) {
      std::error_code ignored;
      socket_.close(ignored);
      return attemptFailed(ec.message(), peerNotUpYet(ec));
    }
    if (Status s = configureSocket(socket_, options_); !s.isOk())
      return finish(Status(s.code(), "connecting to " + endpoint_.toString() + ": " + s.message()));
    finish(std::unique_ptr<Stream>(std::make_unique<TcpStream>(std::move(socket_))));
  }

  void attemptFailed(const std::string& why, bool retry) {
    failures_->fetch_add(1, std::memory_order_relaxed);
    lastError_ = why;
    if (!retry)
      return finish(unavailableError("cannot connect to " + endpoint_.toString() + ": " + why));
    const auto now = Clock::now();
    if (now >= deadline_) return finish(timedOut());
    retryTimer_.expires_after(std::min<Clock::duration>(wait_, deadline_ - now));
    wait_ = std::min(wait_ * 2, maxWait_);
    retryTimer_.async_wait([self = shared_from_this()](const std::error_code& e) {
      if (!e) self->attempt();
    });
  }

  Status timedOut() const {
    return timeoutError(fmt::format("cannot connect to {} within {}: {}", endpoint_.toString(),
                                    describeTimeout(timeout_),
                                    lastError_.empty() ? "no answer yet" : lastError_));
  }

  // The dial's one ending; the other pending handlers then find done_ and stop.
  void finish(Result<std::unique_ptr<Stream>> result) {
    if (done_) return;
    done_ = true;
    resolver_.cancel();
    retryTimer_.cancel();
    deadlineTimer_.cancel();
    std::error_code ignored;
    socket_.close(ignored);
    asio::post(io_,
               [h = std::move(handler_), r = std::move(result)]() mutable { h(std::move(r)); });
  }

  asio::io_context& io_;
  const Endpoint endpoint_;
  const std::chrono::milliseconds timeout_;
  const TcpOptions options_;
  std::chrono::milliseconds wait_;
  const std::chrono::milliseconds maxWait_;
  std::shared_ptr<std::atomic<uint64_t>> failures_;
  ConnectHandler handler_;
  asio::ip::tcp::resolver resolver_;
  asio::ip::tcp::socket socket_;
  asio::steady_timer retryTimer_;
  asio::steady_timer deadlineTimer_;
  Clock::time_point deadline_;
  std::string lastError_;
  bool done_ = false;
};

TcpConnector::TcpConnector(asio::io_context& io, const TcpOptions& options, Backoff backoff)
    : io_(io), options_(options), backoff_(backoff),
      failures_(std::make_shared<std::atomic<uint64_t>>(0)) {}

TcpConnector::~TcpConnector() { cancel(); }

void TcpConnector::connect(const Endpoint& endpoint, std::chrono::milliseconds timeout,
                           ConnectHandler handler) {
  cancel();  // one dial at a time: a previous one still running ends here
  dial_ = std::make_shared<Dial>(io_, endpoint, timeout, options_, backoff_, failures_,
                                 std::move(handler));
  dial_->start();
}

void TcpConnector::cancel() {
  if (dial_) dial_->cancel();
}

}  // namespace rs::transport::tcp
