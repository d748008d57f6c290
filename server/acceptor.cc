#include "server/acceptor.h"

#include <asio/steady_timer.hpp>
#include <fmt/format.h>

#include "core/common/endpoint.h"
#include "core/common/log.h"
#include "core/wire/auth.h"
#include "core/wire/control_frames.h"
#include "core/wire/frame.h"

namespace rs::server {
namespace {
// "tcp://10.0.0.7:41000" -> "10.0.0.7": the per-peer connection cap counts hosts, not ports.
std::string peerHost(const std::string& peerName) {
  const size_t scheme = peerName.find("://");
  const size_t begin = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t colon = peerName.rfind(':');
  return peerName.substr(begin, colon == std::string::npos || colon < begin ? std::string::npos
                                                                            : colon - begin);
}
}  // namespace

// One connection from accept until it is handed to its io thread (or refused).
class Acceptor::Handshake : public std::enable_shared_from_this<Handshake> {
 public:
  Handshake(Acceptor& owner, std::unique_ptr<transport::Stream> stream, std::string peer)
      : owner_(owner), stream_(std::move(stream)), peer_(std::move(peer)), timer_(owner.io_) {}

  const std::string& peer() const { return peer_; }
  // The pool took another address's connection in this one's place (Acceptor::makeRoom).
  void evict(const Status& why) { refuse(HandshakeFailure::kLimit, why, /*reply=*/true); }

  // Its entry in the acceptor's list of its peer's pending handshakes (Acceptor::enlist).
  PeerHandshakes::iterator place;

  void run() {
    timer_.expires_after(std::chrono::milliseconds(owner_.config_.handshakeTimeoutMs));
    timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
      if (ec || self->finished_) return;
      self->refuse(HandshakeFailure::kTimeout,
                   timeoutError(fmt::format("no HELLO within {} ms",
                                            self->owner_.config_.handshakeTimeoutMs)),
                   /*reply=*/false);
    });
    sendChallenge();
  }

 private:
  // The reducer speaks first: a fresh nonce that this connection's HELLO must answer, so that
  // a proof seen on one connection is worthless on any other.
  void sendChallenge() {
    wire::ChallengePayload c;
    c.mode = owner_.config_.secret.empty() ? wire::AuthMode::kOpen : wire::AuthMode::kJobSecret;
    auto nonce = wire::randomNonce();
    if (!nonce) return refuse(HandshakeFailure::kClosed, nonce.status(), false);
    c.nonce = nonce_ = *nonce;
    wire::FrameHeader h;
    h.type = wire::FrameType::kChallenge;
    h.payloadLength = wire::kChallengePayloadSize;
    challengeHeader_ = wire::encodeHeader(h);
    challengePayload_ = wire::encodeChallenge(c);
    buffers_[0] = {challengeHeader_.data(), challengeHeader_.size()};
    buffers_[1] = {challengePayload_.data(), challengePayload_.size()};
    writing_ = true;
    stream_->asyncWriteAll(buffers_, 2, [self = shared_from_this()](const std::error_code& ec,
                                                                    size_t) {
      self->writing_ = false;
      if (self->finished_) return self->stream_->close();  // refused meanwhile (timeout)
      if (ec)
        return self->refuse(HandshakeFailure::kClosed,
                            ioError("closed before CHALLENGE went out: " + ec.message()), false);
      self->stream_->asyncReadExactly(
          self->header_.data(), self->header_.size(),
          [self](const std::error_code& e, size_t) { self->onHeader(e); });
    });
  }

  // With a job secret, the HELLO must carry helloProof() for this connection's nonce, under
  // the pool's secret or, when it names a job, that job's key derived from it.
  Status checkProof(const wire::HelloPayload& p) const {
    const std::string& secret = owner_.config_.secret;
    if (secret.empty()) return Status::ok();
    if (wire::isEmptyProof(p.authProof))
      return failedPrecondition(
          "HELLO carries no auth proof, and this reducer requires the job secret (set "
          "RS_SECRET_FILE or RS_SECRET on the workers)");
    auto key = wire::helloKey(secret, p.jobName);  // the decoder checked the name
    if (!key) return key.status();
    if (!wire::proofsEqual(wire::helloProof(*key, nonce_, hello_, p), p.authProof))
      return failedPrecondition(
          p.jobName.empty()
              ? std::string("HELLO's auth proof is wrong for this connection: a different job "
                            "secret, or a proof replayed from another connection")
              : "HELLO's auth proof is wrong for job '" + p.jobName +
                    "' on this connection: not that job's secret (reduction-server "
                    "--derive-job-secret), or a proof replayed from another connection");
    return Status::ok();
  }

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
    if (Status s = checkProof(p); !s.isOk()) return refuse(HandshakeFailure::kAuth, s, true);
    if (p.streamCount > owner_.config_.maxStreamsPerWorker)
      return refuse(HandshakeFailure::kRefused, invalidArgument(fmt::format(
                        "{} streams per worker asked for; this reducer allows at most {} "
                        "(--max-streams-per-worker)",
                        p.streamCount, owner_.config_.maxStreamsPerWorker)),
                    true);
    // The proven job owns the group it creates; an open reducer proves nothing, so binds none.
    GroupParams params{p.worldSize,    p.streamCount, p.reducerIndex, p.reducerCount,
                       p.timeoutMs,    owner_.config_.secret.empty() ? std::string() : p.jobName,
                       (hello_.flags & wire::kFlagDeterministic) != 0,
                       (hello_.flags & wire::kFlagFp64Accumulator) != 0 ? Fp32Accumulator::kFp64
                                                                        : Fp32Accumulator::kFp32};
    auto group = owner_.registry_.joinStream(hello_.group, hello_.rank, p.streamIndex, params,
                                             peer_);
    if (!group) return refuse(handshakeFailureFor(group.status().code()), group.status(), true);
    finished_ = true;
    timer_.cancel();
    owner_.handshakeEnded(*this);
    owner_.handOff_(std::move(stream_), std::move(*group), hello_.rank, p.streamIndex);
  }

  // Counts, logs, optionally tells the peer why, and closes.
  void refuse(HandshakeFailure why, const Status& reason, bool reply) {
    if (finished_) return;
    finished_ = true;
    timer_.cancel();
    owner_.handshakeEnded(*this);
    owner_.countFailure(why);
    owner_.logRefusal(stream_->peerName(), reason);
    if (!reply || writing_) {  // writing_: the CHALLENGE's completion closes
      if (!writing_) stream_->close();
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
  std::unique_ptr<transport::Stream> stream_;
  const std::string peer_;  // the peer's address without the port
  asio::steady_timer timer_;
  wire::Nonce nonce_{};
  wire::HeaderBytes challengeHeader_{};
  std::array<uint8_t, wire::kChallengePayloadSize> challengePayload_{};
  bool writing_ = false;  // the CHALLENGE is going out
  wire::HeaderBytes header_{};
  std::array<uint8_t, wire::kHelloPayloadSize> payload_{};
  wire::FrameHeader hello_;
  bool finished_ = false;
  wire::ErrorFrame reply_;
  transport::ConstBuffer buffers_[2]{};
};

Acceptor::Acceptor(asio::io_context& io, const ServerConfig& config, GroupRegistry& registry,
                   HandOff handOff)
    : io_(io), config_(config), registry_(registry), handOff_(std::move(handOff)) {}

Status Acceptor::listen(const std::string& hostPort) {
  auto endpoint = parseEndpoint(
      hostPort, "the data address (--data-listen, RS_DATA_LISTEN or CLUSTER_SPEC)",
      PortZero::kAllowed);
  if (!endpoint) return endpoint.status();
  auto listener = transport::listen(io_, *endpoint, config_.transport, PortZero::kAllowed);
  if (!listener)
    return Status(listener.status().code(), "data plane " + listener.status().message());
  listener_ = std::move(*listener);
  return Status::ok();
}

void Acceptor::start() { acceptNext(); }

void Acceptor::stop() {
  if (listener_) listener_->close();
}

void Acceptor::acceptNext() {
  listener_->asyncAccept([this](const std::error_code& ec,
                                std::unique_ptr<transport::Stream> stream) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {
      rs::logger().warn("accept failed: {}", ec.message());
      acceptNext();
      return;
    }
    accepted_.fetch_add(1, std::memory_order_relaxed);
    std::string peer = peerHost(stream->peerName());
    if (Status full = makeRoom(peer); !full.isOk()) {
      countFailure(HandshakeFailure::kLimit);
      logRefusal(stream->peerName(), full);
      refuseAtAccept(*stream, full);
    } else {
      auto handshake = std::make_shared<Handshake>(*this, std::move(stream), std::move(peer));
      enlist(handshake);
      handshake->run();
    }
    acceptNext();
  });
}

Status Acceptor::makeRoom(const std::string& peer) {
  // The global cap bounds the descriptors and timers that silent connections hold; the per-peer
  // cap keeps one address from taking the whole pool, and the eviction below keeps addresses
  // that together fill it from keeping another one out.
  const auto mine = pendingByPeer_.find(peer);
  const size_t held = mine == pendingByPeer_.end() ? 0 : mine->second.size();
  if (held >= config_.maxPendingHandshakesPerPeer)
    return resourceExhausted(fmt::format(
        "peer {} already has {} handshakes pending (--max-pending-handshakes-per-peer)", peer,
        held));
  if (pendingHandshakes_.load() < static_cast<int>(config_.maxPendingHandshakes))
    return Status::ok();
  // The pool is full: the address holding the most (of those holding as many, the one whose
  // oldest is oldest) gives up its oldest, if it holds at least two more than `peer`.
  const PeerHandshakes* most = nullptr;
  for (const auto& [address, handshakes] : pendingByPeer_) {
    if (most == nullptr || handshakes.size() > most->size() ||
        (handshakes.size() == most->size() &&
         handshakes.front().number < most->front().number))
      most = &handshakes;
  }
  const std::shared_ptr<Handshake> oldest =
      most != nullptr && most->size() >= held + 2 ? most->front().handshake.lock() : nullptr;
  if (!oldest)
    return resourceExhausted(fmt::format(
        "{} handshakes already pending, and no address holds two more than {} (which holds {}) "
        "(--max-pending-handshakes)",
        config_.maxPendingHandshakes, peer, held));
  const Status why = resourceExhausted(fmt::format(
      "{} handshakes pending, {} of them from {}, the most of any address: its oldest made room "
      "for a connection from {} (--max-pending-handshakes)",
      config_.maxPendingHandshakes, most->size(), oldest->peer(), peer));
  evictions_.fetch_add(1, std::memory_order_relaxed);
  oldest->evict(why);  // ends it: handshakeEnded takes it off the lists
  return Status::ok();
}

void Acceptor::enlist(const std::shared_ptr<Handshake>& handshake) {
  PeerHandshakes& list = pendingByPeer_[handshake->peer()];
  handshake->place = list.insert(list.end(), {handshake, ++handshakesStarted_});
  pendingHandshakes_.fetch_add(1);
}

void Acceptor::handshakeEnded(const Handshake& handshake) {
  pendingHandshakes_.fetch_sub(1);
  auto it = pendingByPeer_.find(handshake.peer());
  it->second.erase(handshake.place);
  if (it->second.empty()) pendingByPeer_.erase(it);
}

void Acceptor::refuseAtAccept(transport::Stream& stream, const Status& why) {
  const wire::ErrorFrame frame = wire::errorFrame(GroupId{}, 0, why);
  std::string bytes(frame.header.begin(), frame.header.end());
  bytes += frame.reason;
  (void)stream.trySendNow(bytes.data(), bytes.size());
  stream.close();
}

void Acceptor::logRefusal(const std::string& peerName, const Status& why) {
  const std::optional<uint64_t> unlogged = refusalLog_.admit();
  if (!unlogged) return;
  rs::logger().warn("refused data connection from {}: {}{}", peerName, why.toString(),
                    refusalLog_.unloggedNote(*unlogged, "refusals"));
}

}  // namespace rs::server
