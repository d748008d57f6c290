// The listening end: accepts sockets, reads each one's hello, acks it, and groups sockets by
// the connector's random connection id until one connector's full set has arrived; that set
// becomes a P2pRecvComm at the next tryAccept(). Several connectors may be mid-handshake at
// once and their sockets may interleave.
//
// A socket that speaks anything else, names another listener, or does not complete its
// connection's set by options.connectTimeout is closed (all of its set with it) and never
// surfaces in tryAccept(). Accepted sockets move round-robin to the engine's io threads; the
// listener and the expiry timer live on one of them. Shared state is guarded by mu_.
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <condition_variable>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>

#include "client/nccl/p2p/p2p_comm.h"
#include "core/common/log.h"
#include "core/transport/listener.h"
#include "core/transport/packed_host.h"

namespace rs::nccl::p2p {
namespace {

using Clock = std::chrono::steady_clock;

struct PendingSocket {
  PendingSocket(std::unique_ptr<transport::Stream> s, uint64_t i, Clock::time_point d)
      : stream(std::move(s)), executor(stream->executor()), id(i), deadline(d),
        peer(stream->peerName()) {}

  enum class State { kHello, kAcking, kAcked, kHanded, kDropped };

  std::unique_ptr<transport::Stream> stream;
  const asio::any_io_executor executor;
  const uint64_t id;  // accept order, so the map of pending sockets is in deadline order
  const Clock::time_point deadline;
  const std::string peer;
  State state = State::kHello;  // guarded by the listener's mutex
  HelloBytes helloBytes{};
  Hello hello;
  AckBytes ack{};
  transport::ConstBuffer ackBuffer{};
};

// One connector's sockets, by index.
struct Group {
  uint32_t count = 0;
  uint64_t minStripeBytes = 0;
  uint32_t acked = 0;
  std::vector<std::shared_ptr<PendingSocket>> members;
};

struct ReadyConnection {
  std::vector<std::unique_ptr<transport::Stream>> streams;
  uint64_t minStripeBytes = 0;
  std::string peer;
};

class ListenerCore : public std::enable_shared_from_this<ListenerCore> {
 private:
  // Wraps a handler so that it counts as pending until it has run.
  template <typename F>
  auto counted(F&& handler) {
    return transport::countedHandler(shared_from_this(), pendingOps_, &ListenerCore::opDone,
                                     std::forward<F>(handler));
  }

 public:
  ListenerCore(P2pEngine& engine, asio::io_context& io,
               std::unique_ptr<transport::Listener> listener, const P2pOptions& options,
               uint64_t listenerId)
      : engine_(engine), io_(io), options_(options), listenerId_(listenerId),
        name_("tcp://" + listener->localEndpoint().toString()), listener_(std::move(listener)),
        sweep_(io) {}

  void start() {
    asio::post(io_, counted([this] { accept(); }));
  }

  // A complete connection, nothing yet, or the listener's final error.
  Result<std::optional<ReadyConnection>> take() {
    std::lock_guard lock(mu_);
    if (!failure_.isOk()) return failure_;
    if (ready_.empty()) return std::optional<ReadyConnection>();
    ReadyConnection c = std::move(ready_.front());
    ready_.pop_front();
    return std::optional<ReadyConnection>(std::move(c));
  }

  void close() {
    std::deque<ReadyConnection> unclaimed;  // closed here, outside mu_
    {
      std::lock_guard lock(mu_);
      if (closing_) return;
      closing_ = true;
      std::vector<std::shared_ptr<PendingSocket>> all;
      for (auto& [id, ps] : pending_) all.push_back(ps);
      for (auto& ps : all) dropLocked(ps, "the listener was closed");
      unclaimed.swap(ready_);
      asio::post(io_, counted([this] {
                   listener_->close();
                   sweep_.cancel();
                 }));
    }
    unclaimed.clear();
    std::unique_lock lock(mu_);
    if (!drainedCv_.wait_for(lock, kDrainTimeout,
                             [this] { return pendingOps_.count() == 0; }))
      rs::logger().warn("p2p listener {}: closed, but its handlers did not finish within {} s",
                        name_, kDrainTimeout.count());
  }

 private:
  void opDone() {
    if (!pendingOps_.done()) return;
    std::lock_guard lock(mu_);
    if (closing_) drainedCv_.notify_all();
  }

  // --- Accepting (the listener's io thread) ---

  void accept() {
    listener_->asyncAccept(counted([this](const std::error_code& ec,
                                          std::unique_ptr<transport::Stream> stream) {
      onAccept(ec, std::move(stream));
    }));
  }

  void onAccept(const std::error_code& ec, std::unique_ptr<transport::Stream> stream) {
    std::lock_guard lock(mu_);
    if (closing_) return;
    if (ec) {  // the listener retried what passes; this does not
      failure_ = ioError("p2p listener " + name_ + ": accept failed: " + ec.message());
      rs::logger().debug("{}", failure_.message());
      return;
    }
    // Round-robin over the engine's io threads; the handshake runs on the stream's new one.
    auto moved = stream->moveTo(engine_.io(engine_.nextIndex()));
    if (!moved) {
      rs::logger().debug("p2p listener {}: dropping {}: {}", name_, stream->peerName(),
                         moved.status().message());
    } else {
      auto ps = std::make_shared<PendingSocket>(std::move(*moved), nextId_++,
                                                Clock::now() + options_.connectTimeout);
      pending_.emplace(ps->id, ps);
      asio::post(ps->executor, counted([this, ps] { readHello(ps); }));
      armSweepLocked();
    }
    accept();
  }

  // --- Handshake (the socket's io thread) ---

  void readHello(const std::shared_ptr<PendingSocket>& ps) {
    {
      std::lock_guard lock(mu_);
      if (ps->state != PendingSocket::State::kHello) return;
    }
    ps->stream->asyncReadExactly(ps->helloBytes.data(), ps->helloBytes.size(),
                                 counted([this, ps](const std::error_code& ec, size_t) {
                                   onHello(ps, ec);
                                 }));
  }

  void onHello(const std::shared_ptr<PendingSocket>& ps, const std::error_code& ec) {
    std::lock_guard lock(mu_);
    if (ps->state != PendingSocket::State::kHello) return;
    if (ec) return dropLocked(ps, "no hello (" + ec.message() + ")");
    Hello h;
    if (Status s = decodeHello(ps->helloBytes.data(), listenerId_, &h); !s.isOk())
      return dropLocked(ps, s.message());
    Group& g = groups_[h.connectionId];
    if (g.members.empty()) {
      g.count = h.socketCount;
      g.minStripeBytes = h.minStripeBytes;
      g.members.resize(h.socketCount);
    } else if (g.count != h.socketCount || g.minStripeBytes != h.minStripeBytes ||
               g.members[h.socketIndex] != nullptr) {
      dropLocked(ps, "hello disagrees with its connection's other sockets");
      return dropGroupLocked(h.connectionId, "a socket disagreed with the others");
    }
    g.members[h.socketIndex] = ps;
    ps->hello = h;
    ps->state = PendingSocket::State::kAcking;
    ps->ack = encodeAck(h.connectionId);
    ps->ackBuffer = {ps->ack.data(), ps->ack.size()};
    ps->stream->asyncWriteAll(&ps->ackBuffer, 1,
                              counted([this, ps](const std::error_code& e, size_t) {
                                onAckWritten(ps, e);
                              }));
  }

  void onAckWritten(const std::shared_ptr<PendingSocket>& ps, const std::error_code& ec) {
    std::lock_guard lock(mu_);
    if (ps->state != PendingSocket::State::kAcking) return;
    if (ec) return dropGroupLocked(ps->hello.connectionId, "sending an ack: " + ec.message());
    ps->state = PendingSocket::State::kAcked;
    auto it = groups_.find(ps->hello.connectionId);
    Group& g = it->second;
    if (++g.acked < g.count) return;
    // Complete. Every member is past its last operation, so its stream may change hands.
    ReadyConnection c;
    c.minStripeBytes = g.minStripeBytes;
    c.peer = g.members[0]->peer + " (" + std::to_string(g.count) + " sockets)";
    for (auto& m : g.members) {
      m->state = PendingSocket::State::kHanded;
      pending_.erase(m->id);
      c.streams.push_back(std::move(m->stream));
    }
    groups_.erase(it);
    ready_.push_back(std::move(c));
  }

  // --- Refusing and expiring ---

  // Closes the socket (on its io thread) and forgets it; a member takes its group with it.
  void dropLocked(const std::shared_ptr<PendingSocket>& ps, const std::string& why) {
    using State = PendingSocket::State;
    if (ps->state == State::kHanded || ps->state == State::kDropped) return;
    if (ps->state == State::kAcking || ps->state == State::kAcked)
      return dropGroupLocked(ps->hello.connectionId, ps->peer + ": " + why);
    if (!closing_) rs::logger().debug("p2p listener {}: refusing {}: {}", name_, ps->peer, why);
    ps->state = State::kDropped;
    pending_.erase(ps->id);
    asio::post(ps->executor, counted([ps] { ps->stream->close(); }));
  }

  void dropGroupLocked(uint64_t connectionId, const std::string& why) {
    auto it = groups_.find(connectionId);
    if (it == groups_.end()) return;
    std::vector<std::shared_ptr<PendingSocket>> members = std::move(it->second.members);
    groups_.erase(it);
    if (!closing_) rs::logger().debug("p2p listener {}: dropping a connection: {}", name_, why);
    for (auto& m : members) {
      if (!m || m->state == PendingSocket::State::kDropped) continue;
      m->state = PendingSocket::State::kDropped;
      pending_.erase(m->id);
      asio::post(m->executor, counted([m] { m->stream->close(); }));
    }
  }

  // One timer for every pending socket: deadlines grow with accept order, so it waits for the
  // oldest. Runs on the listener's thread, like everything that touches the timer.
  void armSweepLocked() {
    if (sweepArmed_ || pending_.empty() || closing_) return;
    sweepArmed_ = true;
    sweep_.expires_at(pending_.begin()->second->deadline);
    sweep_.async_wait(counted([this](const std::error_code&) { onSweep(); }));
  }

  void onSweep() {
    std::lock_guard lock(mu_);
    sweepArmed_ = false;
    if (closing_) return;
    const auto now = Clock::now();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(options_.connectTimeout);
    while (!pending_.empty() && pending_.begin()->second->deadline <= now) {
      std::shared_ptr<PendingSocket> ps = pending_.begin()->second;
      dropLocked(ps, "its connection was not complete within " + std::to_string(ms.count()) +
                         " ms");
    }
    armSweepLocked();
  }

  P2pEngine& engine_;  // the Impl holds the engine until close() has drained
  asio::io_context& io_;  // the listener's and the sweep's
  const P2pOptions options_;
  const uint64_t listenerId_;
  const std::string name_;
  std::unique_ptr<transport::Listener> listener_;
  asio::steady_timer sweep_;

  std::mutex mu_;
  bool closing_ = false;
  Status failure_;
  uint64_t nextId_ = 0;
  bool sweepArmed_ = false;
  std::map<uint64_t, std::shared_ptr<PendingSocket>> pending_;
  std::unordered_map<uint64_t, Group> groups_;
  std::deque<ReadyConnection> ready_;
  transport::PendingOps pendingOps_;
  std::condition_variable drainedCv_;
};

}  // namespace

class P2pListener::Impl {
 public:
  Impl(std::shared_ptr<P2pEngine> engine, std::shared_ptr<ListenerCore> core)
      : engine_(std::move(engine)), core_(std::move(core)) {}
  ~Impl() { core_->close(); }

  Result<std::unique_ptr<P2pRecvComm>> tryAccept() {
    auto ready = core_->take();
    if (!ready.isOk()) return ready.status();
    if (!ready->has_value()) return std::unique_ptr<P2pRecvComm>();
    ReadyConnection& c = **ready;
    return makeRecvComm(engine_, std::move(c.streams), c.minStripeBytes, std::move(c.peer));
  }

 private:
  std::shared_ptr<P2pEngine> engine_;
  std::shared_ptr<ListenerCore> core_;
};

Result<std::unique_ptr<P2pListener>> P2pListener::listen(std::shared_ptr<P2pEngine> engine,
                                                         const P2pOptions& options,
                                                         void* handle) {
  if (!engine || handle == nullptr) return invalidArgument("p2p listen: null engine or handle");
  if (options.connectTimeout.count() <= 0)
    return invalidArgument("p2p listen: connectTimeout must be positive");
  const std::optional<transport::PackedHost> host = transport::packHost(options.listenAddress);
  if (!host)
    return invalidArgument("p2p listen: listenAddress '" + options.listenAddress +
                           "' is not an IP address");
  if (host->unspecified())
    return invalidArgument("p2p listen: listenAddress '" + options.listenAddress +
                           "' names no interface; the peer needs an address to connect to");

  const size_t index = engine->nextIndex();
  asio::io_context& io = engine->io(index);
  // An ephemeral port: NCCL carries the handle, with the port in it, to the peer.
  auto listener = transport::listen(io, {options.listenAddress, 0}, options.transport,
                                    PortZero::kAllowed);
  if (!listener) return Status(listener.status().code(), "p2p " + listener.status().message());
  const uint16_t port = (*listener)->port();

  Handle h;
  h.listenerId = randomId();
  h.port = port;
  h.family = host->family;
  h.address = host->address;
  h.scopeId = host->scopeId;
  encodeHandle(h, static_cast<uint8_t*>(handle));

  auto core = std::make_shared<ListenerCore>(*engine, io, std::move(*listener), options,
                                             h.listenerId);
  core->start();
  return std::unique_ptr<P2pListener>(
      new P2pListener(std::make_unique<Impl>(std::move(engine), std::move(core))));
}

P2pListener::P2pListener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
P2pListener::~P2pListener() = default;

Result<std::unique_ptr<P2pRecvComm>> P2pListener::tryAccept() { return impl_->tryAccept(); }

}  // namespace rs::nccl::p2p
