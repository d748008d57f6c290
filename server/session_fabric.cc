// A session's fabric (proto/FABRIC.md; proto/WIRE.md, "The fabric"): the offer after HELLO_ACK,
// the member's answer, and the payloads that travel on the channel while their headers travel
// on the stream. A channel's failure fails the stream as a failed read or write does.
#include <fmt/format.h>

#include <utility>

#include "core/common/log.h"
#include "core/wire/fabric_frames.h"
#include "server/session.h"

namespace rs::server {

namespace {
transport::FrameWriter::Frame fabricFrame(const wire::FabricFrame& frame) {
  return transport::ownedFrame(frame.header,
                               std::string(frame.payload.begin(), frame.payload.end()));
}
}  // namespace

void Session::offerFabric() {
  Result<FabricOffer> offer =
      isLane() ? Result<FabricOffer>(unavailableError("a lane carries its data over TCP"))
               : owner_.offerFabric(*this);
  Status why = offer.status();
  if (offer) {
    auto frame = wire::fabricOfferFrame(group_->id(), rank_, offer->grant);
    if (frame) {
      channel_ = std::move(offer->channel);
      fabricCharge_ = std::move(offer->charge);
      fabricState_ = FabricState::kOffered;
      writer_.enqueue(fabricFrame(*frame));
      return;
    }
    offer->channel->close(frame.status());
    why = frame.status();
  }
  rs::logger().debug("{}: fabric declined: {}", name_, why.message());
  writer_.enqueue(fabricFrame(wire::fabricDeclineFrame(group_->id(), rank_, why.message())));
}

void Session::handleFabricAnswer() {
  if (!fromThisMember()) return;
  fabricAnswer_.resize(in_.payloadLength);
  readInFlight_ = true;
  reader_.readExactly(*stream_, fabricAnswer_.data(), fabricAnswer_.size(),
                      [self = shared_from_this()](const std::error_code& ec, size_t) {
                        self->onFabricAnswer(ec);
                      });
}

void Session::onFabricAnswer(const std::error_code& ec) {
  if (!readDone(ec)) return;
  if (ec) return ioFailed(ec, fmt::format("read failed inside {}", wire::frameTypeName(in_.type)));
  if (in_.type == wire::FrameType::kFabricDecline) {
    std::string reason;
    if (Status s = wire::parseFabricDecline(fabricAnswer_.data(), fabricAnswer_.size(), &reason);
        !s.isOk())
      return reject(FrameRejection::kMalformed, s);
    rs::logger().debug("{}: the member declined the fabric{}: {}", name_,
                       fabricState_ == FabricState::kActive ? " after accepting it" : "", reason);
    channel_->close(unavailableError("the member declined the fabric: " + reason));
    channel_.reset();
    fabricCharge_ = {};
    fabricState_ = FabricState::kNone;
    return readHeader();
  }
  wire::FabricGrant grant;
  if (Status s = wire::decodeFabricGrant(fabricAnswer_.data(), fabricAnswer_.size(), &grant);
      !s.isOk())
    return reject(FrameRejection::kMalformed, s);
  // The member takes the fabric as agreed once it sent this: a grant that cannot be used
  // fails the stream rather than leave the two ends disagreeing on where payloads go.
  if (Status s = owner_.acceptFabric(*channel_, grant); !s.isOk())
    return fail(Status(s.code(), "the member's fabric grant: " + s.message()));
  fabricState_ = FabricState::kActive;
  exchangeProbes();
  readHeader();
}

// The probes (WIRE.md, "The fabric"): ours written, the member's awaited at once, beside the
// stream's reading. Awaiting it is what has this side's fabric make progress, so that the
// member's probe lands and its writer learns so: an idle hub lands nothing. A probe that fails
// either way is not this side's verdict: the member declines after all and the stream goes on
// over TCP; one that goes on over the fabric regardless meets the channel's failure.
void Session::exchangeProbes() {
  probeOut_ = wire::fabricProbe(group_->id(), rank_, wire::ProbeFrom::kReducer);
  channel_->send(probeOut_.data(), probeOut_.size(), [self = shared_from_this()](const Status& s) {
    if (self->closed_ || s.isOk()) return;
    rs::logger().debug("{}: the fabric probe to the member failed: {}", self->name_, s.message());
  });
  channel_->asyncNextPiece(
      wire::kFabricProbeBytes,
      [self = shared_from_this(), channel = channel_](const Status& status,
                                                      std::span<const std::byte> piece) {
        // A channel given up meanwhile (the member declined after all) is no longer ours.
        if (self->closed_ || self->channel_ != channel) return;
        self->onMemberProbe(status, piece);
      });
}

bool Session::fabricAsAgreed() {
  const bool flagged = (in_.flags & wire::kFlagFabric) != 0;
  if (flagged == (fabricState_ == FabricState::kActive)) {
    fabricUsed_ = fabricUsed_ || flagged;
    return true;
  }
  reject(FrameRejection::kUnexpectedType,
         protocolError(flagged ? fmt::format("REDUCE for chunk {} with the fabric flag on a "
                                             "stream without a fabric channel",
                                             in_.chunk)
                               : fmt::format("REDUCE for chunk {} without the fabric flag on a "
                                             "stream whose payloads travel on the fabric",
                                             in_.chunk)));
  return false;
}

void Session::readFabricPiece() {
  readInFlight_ = true;
  // Nothing is read from the stream meanwhile: a member that goes away must still be seen.
  watchPeer();
  // The member's probe comes before its first payload: onMemberProbe goes on from here.
  if (memberProbe_ != MemberProbe::kIn) {
    if (memberProbe_ == MemberProbe::kAwaited) return void(payloadAwaitsProbe_ = true);
    return onFabricPiece(probeFailure_, {});
  }
  channel_->asyncNextPiece(
      static_cast<size_t>(frameLeft_),
      [self = shared_from_this()](const Status& status, std::span<const std::byte> piece) {
        self->onFabricPiece(status, piece);
      });
}

void Session::onMemberProbe(const Status& status, std::span<const std::byte> piece) {
  Status verdict = status;
  if (status.isOk()) {
    verdict = wire::checkFabricProbe(reinterpret_cast<const uint8_t*>(piece.data()), piece.size(),
                                     group_->id(), rank_, wire::ProbeFrom::kMember);
    channel_->release();
  }
  if (verdict.isOk()) {
    memberProbe_ = MemberProbe::kIn;
  } else {
    memberProbe_ = MemberProbe::kFailed;
    probeFailure_ = status.isOk() ? verdict
                                  : Status(status.code(), "before the member's probe: " +
                                                              status.message());
    rs::logger().debug("{}: the member's fabric probe: {}", name_, probeFailure_.message());
    // Wrong bytes are the member's fault (or the fabric's): that fails the stream at once.
    if (status.isOk()) return fail(probeFailure_);
  }
  if (!std::exchange(payloadAwaitsProbe_, false)) return;
  stream_->stopWatchingPeer();
  readFabricPiece();
}

void Session::onFabricPiece(const Status& status, std::span<const std::byte> piece) {
  if (!closed_) stream_->stopWatchingPeer();
  if (!readDone({})) return;
  if (!status.isOk())
    return fail(ioError(fmt::format("fabric failed inside chunk {}: {}", in_.chunk,
                                    status.message())));
  Slot& slot = *slot_;
  if (slot.dead()) return;  // the group was aborted while this piece was on its way
  // Pieces are whole elements: slots are multiples of 64 bytes and a payload is whole elements.
  const size_t folded = slot.fold(rank_, piece.data(), piece.size());
  channel_->release();
  if (folded != piece.size())
    return fail(protocolError(fmt::format("a fabric piece of {} bytes inside chunk {} is not "
                                          "whole elements ({} folded)",
                                          piece.size(), in_.chunk, folded)));
  frameLeft_ -= piece.size();
  stats_.bytesIn.fetch_add(piece.size(), std::memory_order_relaxed);
  group_->counters().bytesIn.fetch_add(piece.size(), std::memory_order_relaxed);
  afterFold(slot);
}

void Session::sendResultOnFabric(const std::shared_ptr<Slot>& slot, uint64_t from,
                                 uint32_t bytes) {
  // Counted as handed over, as TCP's are once in the socket: a member that has its result
  // may close before this thread polls the write's completion, which then reports the close.
  stats_.bytesOut.fetch_add(bytes, std::memory_order_relaxed);
  group_->counters().bytesOut.fetch_add(bytes, std::memory_order_relaxed);
  // The slot holds the result until the channel has it in the member's memory.
  channel_->send(slot->resultData(from), bytes,
                 [self = shared_from_this(), slot](const Status& s) {
                   if (self->closed_ || s.isOk()) return;
                   self->fail(ioError(fmt::format("fabric failed sending the result of chunk {}: {}",
                                                  slot->chunk(), s.message())));
                 });
}

}  // namespace rs::server
