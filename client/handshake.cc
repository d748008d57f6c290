#include "client/handshake.h"

#include <fmt/format.h>

#include "client/fabric_hubs.h"
#include "client/reducer_frames.h"
#include "core/common/log.h"
#include "core/wire/fabric_frames.h"
#if RS_HAVE_FABRIC
#include "core/transport/fabric/fabric_hub.h"
#include "core/transport/fabric/payload_over_fabric.h"
#endif

namespace rs::client {

Handshake::Handshake(const ClientOptions& options, const GroupSpec& group, asio::io_context& io,
                     uint32_t reducerIndex, uint32_t streamIndex, Endpoint endpoint,
                     std::string name, std::optional<Redial> redial,
                     transport::fabric::FabricHub* hub)
    : options_(options),
      group_(group),
      io_(io),
      reducerIndex_(reducerIndex),
      streamIndex_(streamIndex),
      endpoint_(std::move(endpoint)),
      name_(std::move(name)),
      redial_(redial),
      timeout_(redial ? redial->timeout : options.connectTimeout),
      timer_(io),
      probeTimer_(io),
      hub_(hub),
      // Lanes and redials stay on TCP (a redial's streams become streams later: on TCP too).
      askFabric_(hub != nullptr && !redial && streamIndex < options.streamsPerReducer) {}

template <typename F>
auto Handshake::counted(F&& handler) {
  return transport::countedHandler(shared_from_this(), pendingOps_, &Handshake::opDone,
                                   std::forward<F>(handler));
}

void Handshake::start(Done done) {
  done_ = std::move(done);
  deadline_ = std::chrono::steady_clock::now() + timeout_;
  connector_ = transport::makeConnector(io_, options_.transport);
  connector_->connect(endpoint_, timeout_,
                      counted([this](Result<std::unique_ptr<transport::Stream>> stream) {
                        onConnect(std::move(stream));
                      }));
}

void Handshake::cancel() {
  const auto self = shared_from_this();  // opDone may drop the owner's reference
  pendingOps_.add();  // so that the cancellations below cannot report before we are done here
  finish(abortedError(name_ + ": the handshake was cancelled"));
  opDone();
}

void Handshake::finish(Status outcome) {
  if (finished_) return;
  finished_ = true;
  outcome_ = std::move(outcome);
  if (connector_) connector_->cancel();
  timer_.cancel();
  probeTimer_.cancel();
  if (!outcome_.isOk() && stream_) stream_->close();
#if RS_HAVE_FABRIC
  if (!outcome_.isOk() && channel_) {
    channel_->close(outcome_);
    channel_.reset();
  }
#endif
}

void Handshake::opDone() {
  if (!pendingOps_.done() || !finished_ || reported_) return;
  reported_ = true;
  Done done = std::move(done_);
  done_ = nullptr;
  if (outcome_.isOk()) {
    std::shared_ptr<transport::PayloadChannel> channel;
#if RS_HAVE_FABRIC
    if (channel_) channel = std::make_shared<transport::fabric::PayloadOverFabric>(channel_);
#endif
    done(Handshaken{std::move(stream_), std::move(reader_), lossBound_, std::move(channel),
                    std::move(fabricNotUsed_)});
  } else {
    done(outcome_);
  }
}

void Handshake::onConnect(Result<std::unique_ptr<transport::Stream>> stream) {
  if (finished_) return;
  if (!stream) {
    // A reducer that never answered is unavailable to this member's callers, whether the
    // connector ran out of time or met an error not worth retrying.
    const Status& s = stream.status();
    return finish(Status(s.code() == StatusCode::kTimeout ? StatusCode::kUnavailable : s.code(),
                         fmt::format("reducer {} stream {}: {}", reducerIndex_, streamIndex_,
                                     s.message())));
  }
  stream_ = std::move(*stream);
  reader_ = std::make_unique<transport::FrameReader>();
  // A reducer that accepts and then says nothing, or part of a frame, must not hold this
  // member forever: the handshake ends by the same deadline as the dial.
  step_ = "waiting for CHALLENGE";
  timer_.expires_at(deadline_);
  timer_.async_wait(counted([this](const std::error_code& ec) {
    if (!ec) onDeadline();
  }));
  readHeader();  // the reducer speaks first: CHALLENGE
}

void Handshake::onDeadline() {
  if (finished_) return;
  // The fabric is never required: a probe that does not come back in time is a fallback.
  if (probing_)
    return abandonFabric(fmt::format("its probe did not complete within the connect timeout "
                                     "({} ms, RS_CONNECT_TIMEOUT_MS)",
                                     timeout_.count()));
  finish(timeoutError(fmt::format(
      "{}: still {} when the connect timeout ({} ms, {}) ran out: the reducer accepted the "
      "connection but did not finish the handshake",
      name_, step_, timeout_.count(),
      redial_ ? "a redial's, the rejoin back-off" : "RS_CONNECT_TIMEOUT_MS")));
}

void Handshake::readHeader() {
  reader_->readHeader(*stream_, counted([this, attempt = attempt_](const std::error_code& ec,
                                                                    size_t) {
    if (attempt == attempt_) onHeader(ec);
  }));
}

void Handshake::onHeader(const std::error_code& ec) {
  if (finished_) return;
  if (Status s = decodeReducerHeader(name_, ec, *reader_, options_.maxChunkBytes, &in_);
      !s.isOk())
    return finish(s);
  if (in_.type == wire::FrameType::kError || in_.type == wire::FrameType::kAbort) {
    step_ = "reading the reason of its ERROR or ABORT";
    errorText_.resize(in_.payloadLength);
    reader_->readExactly(*stream_, errorText_.data(), errorText_.size(),
                         counted([this](const std::error_code& e, size_t) { onErrorText(e); }));
    return;
  }
  if (ackRead_) return onFabricFrame();
  if (!helloSent_) {
    if (in_.type != wire::FrameType::kChallenge)
      return finish(protocolError(fmt::format("{}: expected CHALLENGE, got {}", name_,
                                              wire::frameTypeName(in_.type))));
    step_ = "reading CHALLENGE";
    reader_->readExactly(*stream_, challengeBytes_.data(), challengeBytes_.size(),
                         counted([this](const std::error_code& e, size_t) { onChallenge(e); }));
    return;
  }
  if (in_.type != wire::FrameType::kHelloAck)
    return finish(protocolError(fmt::format("{}: expected HELLO_ACK, got {}", name_,
                                            wire::frameTypeName(in_.type))));
  step_ = "reading HELLO_ACK";
  reader_->readExactly(*stream_, ackBytes_.data(), ackBytes_.size(),
                       counted([this](const std::error_code& e, size_t) { onHelloAck(e); }));
}

// The reducer's CHALLENGE says whether it wants the job secret; both sides must agree, so that
// a worker never joins a reducer that anyone could join, and a worker without the secret
// learns why it is refused.
void Handshake::onChallenge(const std::error_code& ec) {
  if (finished_) return;
  if (ec) return finish(ioError(name_ + ": reading CHALLENGE: " + ec.message()));
  wire::ChallengePayload c;
  if (Status s = wire::decodeChallenge(challengeBytes_.data(), challengeBytes_.size(), &c);
      !s.isOk())
    return finish(protocolError(name_ + ": " + s.message()));
  if (c.mode == wire::AuthMode::kOpen && !options_.secret.empty())
    return finish(failedPrecondition(
        name_ + " does not require authentication, but this worker has a job secret "
                "(RS_SECRET_FILE or RS_SECRET): refusing to join an open reducer; give the "
                "reducer the same secret (--secret-file)"));
  if (c.mode == wire::AuthMode::kJobSecret && options_.secret.empty())
    return finish(failedPrecondition(
        name_ + " requires the job secret, and this worker has none: set RS_SECRET_FILE or "
                "RS_SECRET to the job's secret"));
  sendHello(c.nonce);
}

void Handshake::sendHello(const wire::Nonce& reducerNonce) {
  const GroupSpec& g = group_;
  const ClientOptions& o = options_;
  wire::HelloPayload hello;
  hello.worldSize = g.worldSize;
  hello.streamIndex = static_cast<uint16_t>(streamIndex_);
  hello.streamCount = static_cast<uint16_t>(o.streamsPerReducer);
  hello.reducerIndex = static_cast<uint16_t>(reducerIndex_);
  hello.reducerCount = static_cast<uint16_t>(o.reducers.size());
  hello.timeoutMs = static_cast<uint32_t>(o.collectiveTimeout.count());
  hello.jobName = o.jobName;
  hello.lossDetectMs = static_cast<uint32_t>(o.lossDetect.count());
  // A stream index past the streams is a lane (proto/FAILOVER.md): the HELLO says so.
  const auto flags = static_cast<uint16_t>(
      (o.deterministic ? wire::kFlagDeterministic : 0) |
      (o.fp32Accumulator == Fp32Accumulator::kFp64 ? wire::kFlagFp64Accumulator : 0) |
      (streamIndex_ >= o.streamsPerReducer ? wire::kFlagLane : 0) |
      (redial_ ? wire::kFlagRejoin : 0) | (askFabric_ ? wire::kFlagFabric : 0));
  auto frame = wire::helloFrame(g.id, g.rank, std::move(hello), o.secret, reducerNonce, flags);
  if (!frame) return finish(frame.status());
  hello_ = *frame;
  helloBuffers_[0] = {hello_.header.data(), hello_.header.size()};
  helloBuffers_[1] = {hello_.payload.data(), hello_.payload.size()};
  stream_->asyncWriteAll(helloBuffers_, 2,
                         counted([this, attempt = attempt_](const std::error_code& ec, size_t) {
                           if (ec && attempt == attempt_)
                             finish(ioError("sending HELLO: " + ec.message()));
                         }));
  helloSent_ = true;
  step_ = "waiting for HELLO_ACK";
  readHeader();
}

void Handshake::onHelloAck(const std::error_code& ec) {
  if (finished_) return;
  if (ec) return finish(ioError(name_ + ": reading HELLO_ACK: " + ec.message()));
  wire::HelloAckPayload ack;
  if (Status s = wire::decodeHelloAck(ackBytes_.data(), ackBytes_.size(), &ack); !s.isOk())
    return finish(protocolError(name_ + ": " + s.message()));
  if (ack.maxPayloadBytes < options_.maxChunkBytes)
    return finish(invalidArgument(fmt::format(
        "{} accepts chunks of at most {} bytes, but this client's maximum chunk is {} bytes "
        "(lower RS_MAX_CHUNK or raise the reducer's --max-chunk)",
        name_, ack.maxPayloadBytes, options_.maxChunkBytes)));
  // The reducer caps what a member asks; one that answers more would make this member wait
  // longer for a silent reducer than it chose to. 0 is the operator turning detection off.
  const auto asked = static_cast<uint64_t>(options_.lossDetect.count());
  if (asked != 0 && ack.lossDetectMs > asked)
    return finish(protocolError(fmt::format(
        "{} announced a loss bound of {} ms, above the {} ms this member asked for "
        "(RS_LOSS_DETECT_MS): a reducer may only lower it",
        name_, ack.lossDetectMs, asked)));
  lossBound_ = std::chrono::milliseconds(ack.lossDetectMs);
  if (!askFabric_) return finish(Status::ok());
  ackRead_ = true;
  step_ = "waiting for FABRIC_OFFER or FABRIC_DECLINE";
  readHeader();
}

void Handshake::onErrorText(const std::error_code& ec) {
  if (finished_) return;
  Status refusal = reducerRefusal(name_, in_, errorText_, ec);
  // A reducer that predates the fabric refuses the flag, as WIRE.md has it: only then, and
  // only once, the HELLO goes again without it.
  if (askFabric_ && !ackRead_ &&
      refusal.message().find("unknown flag bits 0x0010") != std::string::npos)
    return redialWithoutFabric(refusal);
  finish(std::move(refusal));
}

// --- The fabric (proto/WIRE.md, "The fabric") ------------------------------------------------

void Handshake::redialWithoutFabric(const Status& refusal) {
  askFabric_ = false;
  fabricNotUsed_ = "the reducer predates the fabric: it refused the HELLO's fabric flag";
  rs::logger().debug("{}: {}; dialling again without it", name_, refusal.message());
  ++attempt_;  // what is pending on the old stream no longer speaks for the handshake
  stream_->close();
  oldStreams_.push_back(std::move(stream_));
  oldReaders_.push_back(std::move(reader_));
  helloSent_ = false;
  step_ = "dialling again without the fabric flag";
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline_ - std::chrono::steady_clock::now());
  connector_->connect(endpoint_, std::max(left, std::chrono::milliseconds(1)),
                      counted([this](Result<std::unique_ptr<transport::Stream>> stream) {
                        onConnect(std::move(stream));
                      }));
}

void Handshake::onFabricFrame() {
  const std::string_view type = wire::frameTypeName(in_.type);
  if (in_.type != wire::FrameType::kFabricOffer && in_.type != wire::FrameType::kFabricDecline)
    return finish(protocolError(fmt::format(
        "{}: expected FABRIC_OFFER or FABRIC_DECLINE after HELLO_ACK (this worker's HELLO asked "
        "for the fabric), got {}",
        name_, type)));
  if (in_.group != group_.id || in_.rank != group_.rank)
    return finish(protocolError(fmt::format("{}: {} for group {} rank {}", name_, type,
                                            in_.group.toString(), in_.rank)));
  fabricBytes_.resize(in_.payloadLength);
  const bool offer = in_.type == wire::FrameType::kFabricOffer;
  step_ = offer ? "reading FABRIC_OFFER" : "reading FABRIC_DECLINE";
  reader_->readExactly(*stream_, fabricBytes_.data(), fabricBytes_.size(),
                       counted([this, offer](const std::error_code& e, size_t) {
                         if (offer) onFabricOffer(e);
                         else onFabricDecline(e);
                       }));
}

void Handshake::onFabricDecline(const std::error_code& ec) {
  if (finished_) return;
  if (ec) return finish(ioError(name_ + ": reading FABRIC_DECLINE: " + ec.message()));
  std::string reason;
  if (Status s = wire::parseFabricDecline(fabricBytes_.data(), fabricBytes_.size(), &reason);
      !s.isOk())
    return finish(protocolError(name_ + ": " + s.message()));
  fabricNotUsed_ = "the reducer declined: " + reason;
  finish(Status::ok());
}

void Handshake::onFabricOffer(const std::error_code& ec) {
  if (finished_) return;
  if (ec) return finish(ioError(name_ + ": reading FABRIC_OFFER: " + ec.message()));
  wire::FabricGrant grant;
  // A grant that does not decode is the reducer's mistake, but only the fabric's: declined,
  // and the stream carries its data over TCP.
  if (Status s = wire::decodeFabricGrant(fabricBytes_.data(), fabricBytes_.size(), &grant);
      !s.isOk())
    return declineFabric(s.message());
#if RS_HAVE_FABRIC
  auto channel = hub_->openChannel(
      transport::fabric::RingShape{kResultRingSlots, kResultRingSlotBytes}, name_);
  if (!channel) return declineFabric(channel.status().message());
  channel_ = std::move(*channel);
  if (Status s = channel_->connect(transport::fabric::fromWireGrant(grant)); !s.isOk())
    return declineFabric(s.message());
  acceptFabric();
#else
  declineFabric("this worker was built without libfabric");
#endif
}

void Handshake::acceptFabric() {
#if RS_HAVE_FABRIC
  auto frame = wire::fabricAcceptFrame(group_.id, group_.rank,
                                       transport::fabric::toWireGrant(channel_->grant()));
  if (!frame) return declineFabric(frame.status().message());
  std::vector<uint8_t> bytes(frame->header.begin(), frame->header.end());
  bytes.insert(bytes.end(), frame->payload.begin(), frame->payload.end());
  step_ = "sending FABRIC_ACCEPT";
  sendFabricAnswer(std::move(bytes), /*thenProbe=*/true);
#endif
}

// Each end writes its probe before any payload (WIRE.md, "The fabric"): ours delivered and the
// reducer's in, intact, prove the channel both ways; anything else is a fallback to TCP.
void Handshake::startProbe() {
#if RS_HAVE_FABRIC
  probing_ = true;
  step_ = "proving the fabric channel (a probe each way)";
  // Its own bound, short of the connect timeout's where that is later: a fabric that does not
  // carry data is a fallback to TCP after this, not after the whole connect timeout.
  const auto probeDeadline = std::chrono::steady_clock::now() + options_.fabricProbeTimeout;
  if (probeDeadline < deadline_) {
    probeTimer_.expires_at(probeDeadline);
    probeTimer_.async_wait(counted([this](const std::error_code& ec) {
      if (ec || finished_ || !probing_) return;
      abandonFabric(fmt::format("its probe did not complete within {} ms "
                                "(RS_FABRIC_PROBE_TIMEOUT_MS)",
                                options_.fabricProbeTimeout.count()));
    }));
  }
  probeOut_ = wire::fabricProbe(group_.id, group_.rank, wire::ProbeFrom::kMember);
  channel_->send(probeOut_.data(), probeOut_.size(), counted([this](const Status& s) {
                   if (finished_ || !probing_) return;
                   if (!s.isOk())
                     return abandonFabric("its probe was not delivered: " + s.message());
                   probeDelivered_ = true;
                   if (probeArrived_) probed();
                 }));
  channel_->asyncNextPiece(
      probeOut_.size(),
      counted([this](const Status& s, std::span<const uint8_t> piece) {
        if (finished_ || !probing_) return;
        if (!s.isOk()) return abandonFabric("the reducer's probe did not arrive: " + s.message());
        Status intact = wire::checkFabricProbe(piece.data(), piece.size(), group_.id,
                                               group_.rank, wire::ProbeFrom::kReducer);
        if (intact.isOk()) intact = channel_->release();
        if (!intact.isOk()) return abandonFabric(intact.message());
        probeArrived_ = true;
        if (probeDelivered_) probed();
      }));
#endif
}

void Handshake::probed() {
  probing_ = false;
  probeTimer_.cancel();
  finish(Status::ok());
}

// After FABRIC_ACCEPT: FABRIC_DECLINE tells the reducer that this stream's payloads go on TCP
// after all (WIRE.md), before any REDUCE.
void Handshake::abandonFabric(const std::string& why) {
  probing_ = false;
  probeTimer_.cancel();
  rs::logger().debug("{}: the fabric channel failed its probe: {}", name_, why);
  declineFabric("the fabric channel failed its probe: " + why);
}

void Handshake::declineFabric(const std::string& why) {
#if RS_HAVE_FABRIC
  if (channel_) {
    channel_->close(abortedError(name_ + ": the fabric was declined: " + why));
    channel_.reset();
  }
#endif
  fabricNotUsed_ = why;
  const wire::FabricFrame frame = wire::fabricDeclineFrame(group_.id, group_.rank, why);
  std::vector<uint8_t> bytes(frame.header.begin(), frame.header.end());
  bytes.insert(bytes.end(), frame.payload.begin(), frame.payload.end());
  step_ = "sending FABRIC_DECLINE";
  sendFabricAnswer(std::move(bytes));
}

// The handshake ends once the answer is written (an ACCEPT: once the probes went through): the
// connection's first frame follows it.
void Handshake::sendFabricAnswer(std::vector<uint8_t> frame, bool thenProbe) {
  fabricAnswer_ = std::move(frame);
  answerBuffer_ = {fabricAnswer_.data(), fabricAnswer_.size()};
  stream_->asyncWriteAll(&answerBuffer_, 1,
                      counted([this, thenProbe](const std::error_code& ec, size_t) {
                        if (finished_) return;
                        if (ec) return finish(ioError(fmt::format(
                                    "{}: {}: {}", name_, step_, ec.message())));
                        if (thenProbe) return startProbe();
                        finish(Status::ok());
                      }));
}

}  // namespace rs::client
