#include "server/handshake.h"

#include <fmt/format.h>

#include "core/common/log.h"
#include "core/wire/auth.h"

namespace rs::server {

void HandshakeRefusals::record(HandshakeFailure why, const std::string& peerName,
                               const Status& reason) {
  counts_[static_cast<size_t>(why)].fetch_add(1, std::memory_order_relaxed);
  const std::optional<uint64_t> unlogged = log_.admit();
  if (!unlogged) return;
  rs::logger().warn("refused data connection from {}: {}{}", peerName, reason.toString(),
                    log_.unloggedNote(*unlogged, "refusals"));
}

Handshake::Handshake(HandshakeOwner& owner, asio::io_context& io, const ServerConfig& config,
                     GroupRegistry& registry, HandshakeRefusals& refusals,
                     std::unique_ptr<transport::Stream> stream, std::string peer,
                     uint64_t number)
    : owner_(owner),
      config_(config),
      registry_(registry),
      refusals_(refusals),
      stream_(std::move(stream)),
      peer_(std::move(peer)),
      number_(number),
      timer_(io) {}

void Handshake::run() {
  timer_.expires_after(std::chrono::milliseconds(config_.handshakeTimeoutMs));
  timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (ec || self->finished_) return;
    self->refuse(HandshakeFailure::kTimeout,
                 timeoutError(fmt::format("no HELLO within {} ms",
                                          self->config_.handshakeTimeoutMs)),
                 /*reply=*/false);
  });
  sendChallenge();
}

void Handshake::evict(const Status& why) { refuse(HandshakeFailure::kLimit, why, /*reply=*/true); }

// The reducer speaks first: a fresh nonce that this connection's HELLO must answer, so that a
// proof seen on one connection is worthless on any other.
void Handshake::sendChallenge() {
  wire::ChallengePayload c;
  c.mode = config_.secret.empty() ? wire::AuthMode::kOpen : wire::AuthMode::kJobSecret;
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

Status Handshake::checkProof(const wire::HelloPayload& p) const {
  const std::string& secret = config_.secret;
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

void Handshake::onHeader(const std::error_code& ec) {
  if (finished_) return;
  if (ec)
    return refuse(HandshakeFailure::kClosed, ioError("closed before HELLO: " + ec.message()),
                  false);
  wire::FrameHeader h;
  wire::DecodeLimits limits;
  limits.maxPayloadBytes = config_.maxChunkBytes;
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

void Handshake::onPayload(const std::error_code& ec) {
  if (finished_) return;
  if (ec)
    return refuse(HandshakeFailure::kClosed, ioError("closed inside HELLO: " + ec.message()),
                  false);
  wire::HelloPayload p;
  const wire::HelloKind kind = wire::helloKind(hello_);
  if (Status s = wire::decodeHello(payload_.data(), payload_.size(), &p, kind); !s.isOk())
    return refuse(HandshakeFailure::kMalformed, s, true);
  if (Status s = checkProof(p); !s.isOk()) return refuse(HandshakeFailure::kAuth, s, true);
  if (p.streamCount > config_.maxStreamsPerWorker)
    return refuse(HandshakeFailure::kRefused,
                  invalidArgument(fmt::format(
                      "{} streams per worker asked for; this reducer allows at most {} "
                      "(--max-streams-per-worker)",
                      p.streamCount, config_.maxStreamsPerWorker)),
                  true);
  // The proven job owns the group it creates; an open reducer proves nothing, so binds none.
  GroupParams params{p.worldSize,    p.streamCount, p.reducerIndex, p.reducerCount,
                     p.timeoutMs,    config_.secret.empty() ? std::string() : p.jobName,
                     (hello_.flags & wire::kFlagDeterministic) != 0,
                     (hello_.flags & wire::kFlagFp64Accumulator) != 0 ? Fp32Accumulator::kFp64
                                                                      : Fp32Accumulator::kFp32,
                     (hello_.flags & wire::kFlagRejoin) != 0};
  // A lane carries a lost reducer's chunks to this survivor (proto/FAILOVER.md): its group
  // must be here already, and its dead set comes in its first frame.
  auto group = kind == wire::HelloKind::kLane
                   ? registry_.joinLane(hello_.group, hello_.rank, p.streamIndex, params, peer_)
                   : registry_.joinStream(hello_.group, hello_.rank, p.streamIndex, params, peer_);
  if (!group) return refuse(handshakeFailureFor(group.status().code()), group.status(), true);
  finished_ = true;
  timer_.cancel();
  owner_.handshakeEnded(*this);
  owner_.handOff(std::move(stream_), std::move(*group), hello_.rank, p.streamIndex,
                 config_.streamLossDetectMs(p.lossDetectMs),
                 (hello_.flags & wire::kFlagFabric) != 0);
}

void Handshake::refuse(HandshakeFailure why, const Status& reason, bool reply) {
  if (finished_) return;
  finished_ = true;
  timer_.cancel();
  // Counted before the owner hears of the end: whoever sees it ended sees it counted.
  refusals_.record(why, stream_->peerName(), reason);
  owner_.handshakeEnded(*this);
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

void Handshake::refuseAtAccept(transport::Stream& stream, const Status& why) {
  const wire::ErrorFrame frame = wire::errorFrame(GroupId{}, 0, why);
  std::string bytes(frame.header.begin(), frame.header.end());
  bytes += frame.reason;
  (void)stream.trySendNow(bytes.data(), bytes.size());
  stream.close();
}

}  // namespace rs::server
