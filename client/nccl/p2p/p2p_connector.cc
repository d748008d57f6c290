// The connecting end: opens options.socketsPerConnection streams to the listener named by the
// handle, each on its own io thread with its own transport::Connector (which retries refused
// connects until options.connectTimeout), and introduces each with a hello (listener id, this
// connection's random id, socket index and count, striping threshold). The connection is up
// when every socket's hello went out and the listener acked it; a listener that closes
// instead refused us (a stale or foreign handle).
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <condition_variable>
#include <optional>

#include "client/nccl/p2p/p2p_comm.h"
#include "core/common/log.h"
#include "core/transport/connector.h"
#include "core/transport/packed_host.h"
#include "core/transport/stream_error.h"

namespace rs::nccl::p2p {
namespace {

using Clock = std::chrono::steady_clock;
// NCCL's peers listen before they hand out the handle: a refusal is rare and brief.
constexpr transport::Backoff kBackoff{std::chrono::milliseconds(10),
                                      std::chrono::milliseconds(500)};

struct ConnectSocket {
  ConnectSocket(asio::io_context& io, const transport::Options& options, uint32_t i)
      : connector(transport::makeConnector(io, options, kBackoff)), executor(io.get_executor()),
        watchdog(io), index(i) {}

  const std::unique_ptr<transport::Connector> connector;
  std::unique_ptr<transport::Stream> stream;  // once connected
  const asio::any_io_executor executor;
  asio::steady_timer watchdog;  // from connected to the deadline, for the listener's ack
  const uint32_t index;
  // The socket's io thread only.
  HelloBytes hello{};
  transport::ConstBuffer helloBuffer{};
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
  ConnectorCore(P2pEngine& engine, const P2pOptions& options, Endpoint endpoint,
                uint64_t listenerId)
      : options_(options),
        endpoint_(std::move(endpoint)),
        listenerId_(listenerId),
        connectionId_(randomId()),
        peerName_("tcp://" + endpoint_.toString() + " (" +
                  std::to_string(options.socketsPerConnection) + " sockets)") {
    const size_t base = engine.nextIndex();
    for (uint32_t i = 0; i < options.socketsPerConnection; ++i)
      sockets_.push_back(
          std::make_unique<ConnectSocket>(engine.io(base + i), options.transport, i));
  }

  void start() {
    deadline_ = Clock::now() + options_.connectTimeout;
    for (auto& s : sockets_) asio::post(s->executor, counted([this, s = s.get()] { connect(*s); }));
  }

  struct Connected {
    std::vector<std::unique_ptr<transport::Stream>> streams;
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
    for (auto& s : sockets_) c.streams.push_back(std::move(s->stream));
    return std::optional<Connected>(std::move(c));
  }

  void close() {
    fail(abortedError("p2p connect to " + peerName_ + ": closed before it completed"));
    std::unique_lock lock(mu_);
    if (!drainedCv_.wait_for(lock, kDrainTimeout, [this] { return pendingOps_.count() == 0; }))
      rs::logger().warn("p2p connect to {}: closed, but its handlers did not finish within {} s",
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
    if (status.code() != StatusCode::kAborted) rs::logger().debug("{}", status.toString());
    failure_ = std::move(status);
    for (auto& s : sockets_)
      asio::post(s->executor, counted([s = s.get()] {
                   s->connector->cancel();
                   if (s->stream) s->stream->close();
                   s->watchdog.cancel();
                 }));
  }

  std::string where(const ConnectSocket& s) const {
    return "p2p connect to " + peerName_ + ", socket " + std::to_string(s.index);
  }

  // --- On the socket's io thread ---

  void connect(ConnectSocket& s) {
    if (closing()) return;
    s.connector->connect(endpoint_, options_.connectTimeout,
                         counted([this, &s](Result<std::unique_ptr<transport::Stream>> stream) {
                           onConnect(s, std::move(stream));
                         }));
  }

  void onConnect(ConnectSocket& s, Result<std::unique_ptr<transport::Stream>> stream) {
    if (closing()) return;
    // Out of time (kTimeout, with the last error) or an error not worth retrying.
    if (!stream)
      return fail(Status(stream.status().code(), where(s) + ": " + stream.status().message()));
    s.stream = std::move(*stream);
    // The listener's ack must come by the same deadline.
    s.watchdog.expires_at(deadline_);
    s.watchdog.async_wait(counted([this, &s](const std::error_code& ec) {
      if (!ec) onDeadline(s);
    }));
    Hello h;
    h.socketIndex = static_cast<uint16_t>(s.index);
    h.socketCount = static_cast<uint16_t>(sockets_.size());
    h.listenerId = listenerId_;
    h.connectionId = connectionId_;
    h.minStripeBytes = options_.minStripeBytes;
    s.hello = encodeHello(h);
    s.helloBuffer = {s.hello.data(), s.hello.size()};
    s.stream->asyncWriteAll(&s.helloBuffer, 1,
                            counted([this, &s](const std::error_code& e, size_t) {
                              if (e)
                                return fail(
                                    ioError(where(s) + ": sending the hello: " + e.message()));
                              s.helloSent = true;
                              stepDone(s);
                            }));
    s.stream->asyncReadExactly(s.ack.data(), s.ack.size(),
                               counted([this, &s](const std::error_code& e, size_t) {
                                 onAck(s, e);
                               }));
  }

  void onAck(ConnectSocket& s, const std::error_code& ec) {
    if (const auto end = transport::classify(ec);
        end == transport::StreamError::kPeerClosed || end == transport::StreamError::kLost)
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
    fail(timeoutError(where(s) + ": not connected within " + std::to_string(ms.count()) +
                      " ms (no ack from the listener)"));
  }

  const P2pOptions options_;
  const Endpoint endpoint_;
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
    return makeSendComm(engine_, std::move(c.streams), c.minStripeBytes, std::move(c.peer));
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
  const std::string host = transport::unpackHost({h.family, h.address, h.scopeId});
  auto core = std::make_shared<ConnectorCore>(
      *engine, options, Endpoint{host, h.port}, h.listenerId);
  core->start();
  return std::unique_ptr<P2pConnector>(
      new P2pConnector(std::make_unique<Impl>(std::move(engine), std::move(core))));
}

P2pConnector::P2pConnector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
P2pConnector::~P2pConnector() = default;

Result<std::unique_ptr<P2pSendComm>> P2pConnector::poll() { return impl_->poll(); }

}  // namespace rs::nccl::p2p
