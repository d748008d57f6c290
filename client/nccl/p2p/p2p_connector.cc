// The connecting end: opens options.socketsPerConnection sockets to the listener named by the
// handle, each on its own io thread, retrying refused connects until options.connectTimeout,
// and introduces each with a hello (listener id, this connection's random id, socket index
// and count, striping threshold). The connection is up when every socket's hello went out and
// the listener acked it; a listener that closes instead refused us (a stale or foreign handle).
#include <asio/connect.hpp>
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>
#include <condition_variable>
#include <optional>
#include <spdlog/spdlog.h>

#include "client/nccl/p2p/p2p_comm.h"

namespace rs::client::p2p {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kFirstRetry = std::chrono::milliseconds(10);
constexpr auto kMaxRetry = std::chrono::milliseconds(500);

// Worth another try before the deadline: nobody listening yet, or the network hiccuped.
bool retryableConnectError(const std::error_code& ec) {
  return ec == asio::error::connection_refused || ec == asio::error::timed_out ||
         ec == asio::error::try_again || ec == asio::error::connection_reset ||
         ec == asio::error::connection_aborted || ec == asio::error::host_unreachable ||
         ec == asio::error::network_unreachable || ec == asio::error::no_buffer_space;
}

struct ConnectSocket {
  ConnectSocket(asio::io_context& io, uint32_t i)
      : socket(io), executor(io.get_executor()), retry(io), watchdog(io), index(i) {}

  asio::ip::tcp::socket socket;
  const asio::any_io_executor executor;
  asio::steady_timer retry;
  asio::steady_timer watchdog;  // fires at the deadline unless the socket is up by then
  const uint32_t index;
  // The socket's io thread only.
  std::chrono::milliseconds backoff = kFirstRetry;
  std::string lastError;
  HelloBytes hello{};
  AckBytes ack{};
  bool helloSent = false;
  bool acked = false;
};

class ConnectorCore : public std::enable_shared_from_this<ConnectorCore> {
 private:
  // Wraps a handler so that it counts as pending until it has run.
  template <typename F>
  auto counted(F&& handler) {
    return transport::countedHandler(shared_from_this(), pendingOps_, &ConnectorCore::opDone,
                                     std::forward<F>(handler));
  }

 public:
  ConnectorCore(P2pEngine& engine, const P2pOptions& options, asio::ip::tcp::endpoint endpoint,
                uint64_t listenerId)
      : options_(options),
        endpoint_(std::move(endpoint)),
        listenerId_(listenerId),
        connectionId_(randomId()),
        peerName_(describeEndpoint(endpoint_) + " (" +
                  std::to_string(options.socketsPerConnection) + " sockets)") {
    const size_t base = engine.nextIndex();
    for (uint32_t i = 0; i < options.socketsPerConnection; ++i)
      sockets_.push_back(std::make_unique<ConnectSocket>(engine.io(base + i), i));
  }

  void start() {
    deadline_ = Clock::now() + options_.connectTimeout;
    for (auto& s : sockets_)
      asio::post(s->executor, counted([this, s = s.get()] {
                   s->watchdog.expires_at(deadline_);
                   s->watchdog.async_wait(counted([this, s](const std::error_code& ec) {
                     if (!ec) onDeadline(*s);
                   }));
                   connect(*s);
                 }));
  }

  struct Connected {
    std::vector<asio::ip::tcp::socket> sockets;
    uint64_t minStripeBytes = 0;
    std::string peer;
  };

  // The sockets once all are up, nothing yet, or the final error.
  Result<std::optional<Connected>> poll() {
    std::lock_guard lock(mu_);
    if (!failure_.isOk()) return failure_;
    if (handedOff_)
      return failedPrecondition("p2p connect to " + peerName_ + ": already connected");
    if (ready_ < sockets_.size()) return std::optional<Connected>();
    // Every socket is past its last operation (its ack was read, its hello written).
    handedOff_ = true;
    closing_ = true;
    Connected c;
    c.minStripeBytes = options_.minStripeBytes;
    c.peer = peerName_;
    for (auto& s : sockets_) c.sockets.push_back(std::move(s->socket));
    return std::optional<Connected>(std::move(c));
  }

  void close() {
    fail(abortedError("p2p connect to " + peerName_ + ": closed before it completed"));
    std::unique_lock lock(mu_);
    if (!drainedCv_.wait_for(lock, kDrainTimeout, [this] { return pendingOps_.count() == 0; }))
      spdlog::warn("p2p connect to {}: closed, but its handlers did not finish within {} s",
                   peerName_, kDrainTimeout.count());
  }

 private:
  void opDone() {
    if (!pendingOps_.done()) return;
    std::lock_guard lock(mu_);
    if (closing_) drainedCv_.notify_all();
  }

  bool closing() {
    std::lock_guard lock(mu_);
    return closing_;
  }

  // First caller wins; closes every socket on its thread. Also how close() cancels.
  void fail(Status status) {
    std::lock_guard lock(mu_);
    if (closing_) return;
    closing_ = true;
    if (status.code() != StatusCode::kAborted) spdlog::debug("{}", status.toString());
    failure_ = std::move(status);
    for (auto& s : sockets_)
      asio::post(s->executor, counted([s = s.get()] {
                   std::error_code ignored;
                   s->socket.close(ignored);
                   s->retry.cancel();
                   s->watchdog.cancel();
                 }));
  }

  std::string where(const ConnectSocket& s) const {
    return "p2p connect to " + peerName_ + ", socket " + std::to_string(s.index);
  }

  // --- On the socket's io thread ---

  void connect(ConnectSocket& s) {
    if (closing()) return;
    s.socket.async_connect(endpoint_, counted([this, &s](const std::error_code& ec) {
      onConnect(s, ec);
    }));
  }

  void onConnect(ConnectSocket& s, const std::error_code& ec) {
    if (closing()) return;
    if (ec) {
      std::error_code ignored;
      s.socket.close(ignored);
      if (!retryableConnectError(ec))
        return fail(unavailableError(where(s) + ": " + ec.message()));
      // The watchdog ends the retries at the deadline.
      s.lastError = ec.message();
      s.retry.expires_after(s.backoff);
      s.backoff = std::min(s.backoff * 2, kMaxRetry);
      s.retry.async_wait(counted([this, &s](const std::error_code& e) {
        if (!e) connect(s);
      }));
      return;
    }
    if (Status st = transport::configureTcpSocket(s.socket, options_.tcp); !st.isOk())
      return fail(Status(st.code(), where(s) + ": " + st.message()));
    Hello h;
    h.socketIndex = static_cast<uint16_t>(s.index);
    h.socketCount = static_cast<uint16_t>(sockets_.size());
    h.listenerId = listenerId_;
    h.connectionId = connectionId_;
    h.minStripeBytes = options_.minStripeBytes;
    s.hello = encodeHello(h);
    asio::async_write(s.socket, asio::buffer(s.hello),
                      counted([this, &s](const std::error_code& e, size_t) {
                        if (e)
                          return fail(ioError(where(s) + ": sending the hello: " + e.message()));
                        s.helloSent = true;
                        stepDone(s);
                      }));
    asio::async_read(s.socket, asio::buffer(s.ack),
                     counted([this, &s](const std::error_code& e, size_t) { onAck(s, e); }));
  }

  void onAck(ConnectSocket& s, const std::error_code& ec) {
    if (ec == asio::error::eof || ec == asio::error::connection_reset)
      return fail(unavailableError(
          where(s) + ": the listener closed the connection instead of accepting it (a stale "
                     "handle, or another process on that port?)"));
    if (ec) return fail(ioError(where(s) + ": reading the ack: " + ec.message()));
    if (Status st = decodeAck(s.ack.data(), connectionId_); !st.isOk())
      return fail(Status(st.code(), where(s) + ": " + st.message()));
    s.acked = true;
    stepDone(s);
  }

  void stepDone(ConnectSocket& s) {
    if (!s.helloSent || !s.acked) return;
    s.watchdog.cancel();
    std::lock_guard lock(mu_);
    ++ready_;
  }

  void onDeadline(ConnectSocket& s) {
    if (s.helloSent && s.acked) return;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(options_.connectTimeout);
    fail(timeoutError(where(s) + ": not connected within " + std::to_string(ms.count()) + " ms" +
                      (s.lastError.empty() ? std::string(" (no ack from the listener)")
                                           : " (last error: " + s.lastError + ")")));
  }

  const P2pOptions options_;
  const asio::ip::tcp::endpoint endpoint_;
  const uint64_t listenerId_;
  const uint64_t connectionId_;
  const std::string peerName_;
  Clock::time_point deadline_;  // set before any handler runs
  std::vector<std::unique_ptr<ConnectSocket>> sockets_;

  std::mutex mu_;
  bool closing_ = false;  // failed, closed, or handed off: no handler starts anything new
  bool handedOff_ = false;
  Status failure_;
  size_t ready_ = 0;
  transport::PendingOps pendingOps_;
  std::condition_variable drainedCv_;
};

}  // namespace

class P2pConnector::Impl {
 public:
  Impl(std::shared_ptr<P2pEngine> engine, std::shared_ptr<ConnectorCore> core)
      : engine_(std::move(engine)), core_(std::move(core)) {}
  ~Impl() { core_->close(); }

  Result<std::unique_ptr<P2pSendComm>> poll() {
    auto connected = core_->poll();
    if (!connected.isOk()) return connected.status();
    if (!connected->has_value()) return std::unique_ptr<P2pSendComm>();
    auto& c = **connected;
    return makeSendComm(engine_, std::move(c.sockets), c.minStripeBytes, std::move(c.peer));
  }

 private:
  std::shared_ptr<P2pEngine> engine_;
  std::shared_ptr<ConnectorCore> core_;
};

Result<std::unique_ptr<P2pConnector>> P2pConnector::start(std::shared_ptr<P2pEngine> engine,
                                                          const P2pOptions& options,
                                                          const void* handle) {
  if (!engine || handle == nullptr) return invalidArgument("p2p connect: null engine or handle");
  if (options.socketsPerConnection == 0 || options.socketsPerConnection > kMaxSocketsPerConnection)
    return invalidArgument("p2p connect: socketsPerConnection " +
                           std::to_string(options.socketsPerConnection) + " (expected 1.." +
                           std::to_string(kMaxSocketsPerConnection) + ")");
  if (options.minStripeBytes > kMaxMessageBytes)
    return invalidArgument("p2p connect: minStripeBytes " + std::to_string(options.minStripeBytes) +
                           " is above the largest message");
  if (options.connectTimeout.count() <= 0)
    return invalidArgument("p2p connect: connectTimeout must be positive");
  Handle h;
  RS_RETURN_IF_ERROR(decodeHandle(static_cast<const uint8_t*>(handle), &h));
  asio::ip::address address;
  if (h.family == 4) {
    asio::ip::address_v4::bytes_type b;
    std::copy(h.address.begin(), h.address.begin() + 4, b.begin());
    address = asio::ip::address_v4(b);
  } else {
    asio::ip::address_v6::bytes_type b;
    std::copy(h.address.begin(), h.address.end(), b.begin());
    address = asio::ip::address_v6(b, h.scopeId);
  }
  auto core = std::make_shared<ConnectorCore>(*engine, options,
                                              asio::ip::tcp::endpoint(address, h.port),
                                              h.listenerId);
  core->start();
  return std::unique_ptr<P2pConnector>(
      new P2pConnector(std::make_unique<Impl>(std::move(engine), std::move(core))));
}

P2pConnector::P2pConnector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
P2pConnector::~P2pConnector() = default;

Result<std::unique_ptr<P2pSendComm>> P2pConnector::poll() { return impl_->poll(); }

}  // namespace rs::client::p2p
