#include "core/transport/fabric/fabric_channel.h"

#include <fmt/format.h>

#include <asio/post.hpp>
#include <algorithm>
#include <cstring>

#include "core/common/log.h"
#include "core/transport/fabric/fabric_hub.h"
#include "core/transport/fabric/fabric_immediate.h"

namespace rs::transport::fabric {

FabricChannel::FabricChannel(FabricHub& hub, uint16_t id, uint32_t serial, RingShape ring,
                             std::string name)
    : hub_(hub),
      io_(hub.io_),
      id_(id),
      serial_(serial),
      ring_(ring),
      name_(std::move(name)),
      releaseTimer_(hub.io_) {}

FabricChannel::~FabricChannel() = default;

Status FabricChannel::openRing() {
  ringBytes_ = AlignedBuffer(ring_.bytes());
  Result<RegisteredMemory> ring = RegisteredMemory::add(
      *hub_.domain_, ringBytes_.data(), ringBytes_.size(), RegisteredMemory::Access::kRemoteWrite);
  if (!ring.isOk()) return Status(ring.status().code(), who() + ": " + ring.status().message());
  ringMemory_ = std::move(*ring);
  controlBytes_ = AlignedBuffer(64);
  Result<RegisteredMemory> control = RegisteredMemory::add(
      *hub_.domain_, controlBytes_.data(), controlBytes_.size(), RegisteredMemory::Access::kLocal);
  if (!control.isOk()) {
    return Status(control.status().code(), who() + ": " + control.status().message());
  }
  controlMemory_ = std::move(*control);
  arrived_.assign(ring_.slots, false);
  arrivedBytes_.assign(ring_.slots, 0);
  return Status::ok();
}

std::string FabricChannel::who() const {
  return connected_ ? fmt::format("fabric channel '{}' (id {}, peer channel {})", name_, id_,
                                  peer_.channelId)
                    : fmt::format("fabric channel '{}' (id {})", name_, id_);
}

void FabricChannel::post(std::function<void()> f) { asio::post(io_, std::move(f)); }

ChannelGrant FabricChannel::grant() const {
  return {hub_.provider(), hub_.address(), id_, ring_, ringMemory_.remote()};
}

Status FabricChannel::connect(const ChannelGrant& peer) {
  if (!failure_.isOk()) return failure_;
  if (connected_) return failedPrecondition(who() + ": connected already");
  RS_RETURN_IF_ERROR(checkPeerGrant(peer, hub_.provider(), hub_.address().size(), who()));
  Result<FabricEndpoint::PeerId> id = hub_.peerFor(peer.address);
  if (!id.isOk()) return Status(id.status().code(), who() + ": " + id.status().message());
  // The send ring mirrors the peer's ring: a slot's bytes stay put until its write completed.
  sendBytes_ = AlignedBuffer(peer.ring.bytes());
  Result<RegisteredMemory> send = RegisteredMemory::add(
      *hub_.domain_, sendBytes_.data(), sendBytes_.size(), RegisteredMemory::Access::kLocal);
  if (!send.isOk()) return Status(send.status().code(), who() + ": " + send.status().message());
  sendMemory_ = std::move(*send);
  slotBusy_.assign(peer.ring.slots, false);
  slotJob_.assign(peer.ring.slots, nullptr);
  slotFromUser_.assign(peer.ring.slots, false);
  peer_ = peer;
  peerId_ = *id;
  connected_ = true;
  pump();
  sendCredits();
  hub_.kick();
  return Status::ok();
}

void FabricChannel::sendInto(const void* src, size_t bytes, const RemoteBuffer& window,
                             uint64_t offset, Done done) {
  if (failure_.isOk() && (offset > window.size || bytes > window.size - offset)) {
    fail(invalidArgument(fmt::format("{}: a payload of {} bytes at offset {} of the peer's "
                                     "window of {} bytes does not fit in it",
                                     who(), bytes, offset, window.size)));
  }
  queue(src, bytes, window, offset, std::move(done));
}

void FabricChannel::queue(const void* src, size_t bytes, std::optional<RemoteBuffer> window,
                          uint64_t offset, Done done) {
  if (!failure_.isOk()) {
    post([d = std::move(done), s = failure_] { d(s); });
    return;
  }
  auto job = std::make_unique<Job>();
  job->src = static_cast<const uint8_t*>(src);
  job->bytes = bytes;
  if (bytes > 0) job->region = hub_.userRegions_->find(src, bytes);
  job->done = std::move(done);
  job->window = window;
  job->windowOffset = offset;
  jobs_.push_back(std::move(job));
  pump();
  finishJobs();
  hub_.kick();
}

void FabricChannel::pump() {
  if (!connected_ || !failure_.isOk()) return;
  const uint32_t slotBytes = peer_.ring.slotBytes;
  for (auto& job : jobs_) {
    while (job->posted < job->bytes) {
      if (written_ - peerReleased_ >= peer_.ring.slots) return;  // no credit
      const uint32_t slot = static_cast<uint32_t>(written_ % peer_.ring.slots);
      if (slotBusy_[slot]) return;  // its last write has not completed: its bytes stay
      const size_t piece = std::min<size_t>(slotBytes, job->bytes - job->posted);
      const size_t offset = size_t{slot} * slotBytes;
      const uint8_t* from = job->src + job->posted;
      const bool fromUser = job->region != nullptr;
      if (!fromUser) std::memcpy(sendBytes_.data() + offset, from, piece);
      const RegisteredMemory& source = fromUser ? job->region->memory : sendMemory_;
      const size_t sourceOffset =
          fromUser ? static_cast<size_t>(from - job->region->memory.data()) : offset;
      const RemoteBuffer& target = job->window ? *job->window : peer_.ringBuffer;
      const uint64_t targetOffset = job->window ? job->windowOffset + job->posted : offset;
      Status s = hub_.endpoint_->postWrite(
          peerId_, source, sourceOffset, piece, target, targetOffset,
          encodeImmediate(peer_.channelId, written_),
          FabricHub::token(FabricHub::TokenKind::kWrite, serial_, slot));
      if (!s.isOk()) {
        if (hub_.endpoint_->postFoundQueueFull()) return hub_.retryLater(*this);
        return fail(Status(s.code(), who() + ": " + s.message()));
      }
      slotBusy_[slot] = true;
      slotJob_[slot] = job.get();
      slotFromUser_[slot] = fromUser;
      ++job->inFlight;
      if (fromUser) ++job->fromUserInFlight;
      (fromUser ? hub_.fromUser_ : hub_.throughRing_).fetch_add(piece, std::memory_order_relaxed);
      if (job->window) hub_.intoWindows_.fetch_add(piece, std::memory_order_relaxed);
      ++writesInFlight_;
      ++written_;
      job->posted += piece;
      bytesPosted_ += piece;
    }
  }
}

void FabricChannel::retry() {
  if (!failure_.isOk()) return;
  pump();
  sendCredits();
  finishJobs();
}

void FabricChannel::finishJobs() {
  while (!jobs_.empty() && jobs_.front()->posted == jobs_.front()->bytes &&
         jobs_.front()->inFlight == 0) {
    if (jobs_.front()->done) post([d = std::move(jobs_.front()->done)] { d(Status::ok()); });
    jobs_.pop_front();
  }
}

void FabricChannel::onWriteDone(uint32_t slot, const Status& status) {
  if (slot >= slotBusy_.size() || !slotBusy_[slot]) {
    return fail(internalError(fmt::format("{}: a write completion for slot {}, not in flight",
                                          who(), slot)));
  }
  --writesInFlight_;
  slotBusy_[slot] = false;
  const bool fromUser = slotFromUser_[slot];
  slotFromUser_[slot] = false;
  if (Job* job = std::exchange(slotJob_[slot], nullptr)) {
    --job->inFlight;
    if (fromUser) --job->fromUserInFlight;
    settle(*job);
  }
  if (!status.isOk()) return fail(Status(status.code(), who() + ": " + status.message()));
  pump();
  finishJobs();
}

void FabricChannel::payOwed(Job& job) {
  if (!job.owed) return;
  if (job.done) post([d = std::move(job.done), s = *job.owed] { d(s); });
  job.done = nullptr;
  job.owed.reset();
}

void FabricChannel::settle(Job& job) {
  if (job.fromUserInFlight > 0) return;
  if (job.owed) {
    payOwed(job);
    if (releaseArmed_ && !owes()) releaseTimer_.cancel();
  }
  if (job.inFlight == 0 && !draining_.empty()) {  // a failed channel's send, done with
    std::erase_if(draining_, [&](const std::unique_ptr<Job>& j) { return j.get() == &job; });
  }
}

void FabricChannel::asyncNextPiece(size_t expect, PieceHandler handler) {
  Status refused;
  if (!failure_.isOk()) {
    refused = failure_;
  } else if (handler_) {
    refused = failedPrecondition(who() + ": a piece is awaited already");
  } else if (expect == 0) {
    refused = invalidArgument(who() + ": awaiting a piece of 0 bytes");
  }
  if (!refused.isOk()) {
    post([h = std::move(handler), refused] { h(refused, {}); });
    return;
  }
  handler_ = std::move(handler);
  expect_ = expect;
  deliver();
  hub_.kick();
}

void FabricChannel::deliver() {
  if (!handler_ || deliveryPosted_ || !arrived_[consumed_ % ring_.slots]) return;
  deliveryPosted_ = true;
  post([self = shared_from_this()] {
    FabricChannel& c = *self;
    c.deliveryPosted_ = false;
    if (!c.handler_) return;  // failed meanwhile: fail() ran it
    const uint32_t slot = static_cast<uint32_t>(c.consumed_ % c.ring_.slots);
    const size_t piece = std::min<size_t>(c.ring_.slotBytes, c.expect_);
    c.arrived_[slot] = false;
    ++c.consumed_;
    PieceHandler h = std::move(c.handler_);
    c.handler_ = nullptr;
    h(Status::ok(), std::span<const uint8_t>(
                        reinterpret_cast<const uint8_t*>(c.ringBytes_.data()) +
                            size_t{slot} * c.ring_.slotBytes,
                        piece));
  });
}

Status FabricChannel::release() {
  if (!failure_.isOk()) return failure_;
  if (released_ == consumed_) return failedPrecondition(who() + ": no piece to release");
  ++released_;
  sendCredits();
  hub_.kick();
  return Status::ok();
}

void FabricChannel::sendCredits() {
  // One word in flight at a time; the next says everything released meanwhile (coalesced).
  if (!connected_ || creditInFlight_ || released_ == releasedSent_ || !failure_.isOk()) return;
  ControlWord w;
  w.channelId = peer_.channelId;
  w.kind = static_cast<uint8_t>(ControlKind::kCredit);
  w.value = static_cast<uint32_t>(released_);
  encodeControlWord(w, reinterpret_cast<uint8_t*>(controlBytes_.data()));
  Status s = hub_.endpoint_->postSend(peerId_, controlMemory_, 0, kControlWordBytes,
                                      FabricHub::token(FabricHub::TokenKind::kCredit, serial_, 0));
  if (!s.isOk()) {
    if (hub_.endpoint_->postFoundQueueFull()) return hub_.retryLater(*this);
    return fail(Status(s.code(), who() + ": credit word: " + s.message()));
  }
  creditInFlight_ = true;
  releasedSent_ = released_;
}

void FabricChannel::onCreditSent(const Status& status) {
  creditInFlight_ = false;
  if (!status.isOk()) return fail(Status(status.code(), who() + ": credit word: " + status.message()));
  sendCredits();
}

void FabricChannel::onArrival(uint32_t sequence, size_t bytes) {
  if (!failure_.isOk()) return;
  // Sequences are 20 bits: the window starts at the next piece to hand out and ends where the
  // peer's credits end (slots handed out and not released are not the peer's to write).
  const uint64_t full = consumed_ + ((sequence - consumed_) & kSequenceMask);
  if (full >= released_ + ring_.slots) {
    return fail(protocolError(fmt::format(
        "{}: a piece with sequence {} arrived; expected one in [{}, {}) (mod 2^20)", who(),
        sequence, consumed_ & kSequenceMask, (released_ + ring_.slots) & kSequenceMask)));
  }
  const uint32_t slot = static_cast<uint32_t>(full % ring_.slots);
  if (arrived_[slot]) {
    return fail(protocolError(fmt::format(
        "{}: the piece with sequence {} arrived twice (slot {}); expected each once", who(),
        sequence, slot)));
  }
  arrived_[slot] = true;
  arrivedBytes_[slot] = bytes;
  deliver();
}

void FabricChannel::onControl(const ControlWord& word) {
  if (!failure_.isOk()) return;
  if (word.kind != static_cast<uint8_t>(ControlKind::kCredit)) {
    return fail(protocolError(fmt::format(
        "{}: a control word of kind {} arrived; expected kind {} (credit)", who(), word.kind,
        static_cast<int>(ControlKind::kCredit))));
  }
  if (!connected_) {
    return fail(protocolError(who() + ": credits arrived before the channel was connected"));
  }
  const uint64_t released = peerReleased_ + static_cast<uint32_t>(word.value -
                                                                  static_cast<uint32_t>(peerReleased_));
  if (released > written_) {
    return fail(protocolError(fmt::format(
        "{}: credits for {} released slots arrived; {} pieces were written, so at most {} "
        "credits ({} slots) were expected",
        who(), word.value, written_, peer_.ring.slots, peer_.ring.slots)));
  }
  peerReleased_ = released;
  pump();
  finishJobs();
}

bool FabricChannel::wantsProgress() const {
  if (pendingOps() > 0) return true;
  if (!failure_.isOk()) return false;
  return static_cast<bool>(handler_) ||
         (connected_ && !jobs_.empty() && jobs_.back()->posted < jobs_.back()->bytes);
}

void FabricChannel::fail(Status why) {
  if (!failure_.isOk()) return;
  failure_ = std::move(why);
  logger().debug("{}", failure_.toString());
  closeWindows();  // a failed channel takes no piece: its windows are the caller's memory again
  if (handler_) {
    post([h = std::move(handler_), s = failure_] { h(s, {}); });
    handler_ = nullptr;
  }
  // A send whose writes still read the caller's memory keeps its done until they completed:
  // the caller may reuse that memory once done ran.
  for (Job*& job : slotJob_)
    if (job != nullptr && job->fromUserInFlight == 0) job = nullptr;
  for (auto& job : jobs_) {
    if (job->fromUserInFlight > 0) {
      if (job->done && !job->owed) job->owed = failure_;
      draining_.push_back(std::move(job));
    } else if (job->done) {
      post([d = std::move(job->done), s = failure_] { d(s); });
    }
  }
  jobs_.clear();
  armRelease();
}

void FabricChannel::armRelease() {
  const auto& bound = hub_.options_.releaseSourcesAfter;
  if (!bound || releaseArmed_ || !owes()) return;
  releaseArmed_ = true;
  releaseTimer_.expires_after(*bound);
  releaseTimer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
    self->releaseArmed_ = false;
    if (!ec) self->releaseOwed();
  });
}

bool FabricChannel::owes() const {
  auto owing = [](const std::unique_ptr<Job>& j) { return j->owed.has_value(); };
  return std::any_of(jobs_.begin(), jobs_.end(), owing) ||
         std::any_of(draining_.begin(), draining_.end(), owing);
}

void FabricChannel::releaseOwed() {
  size_t writes = 0;
  auto release = [&](Job& job) {
    if (job.owed) writes += job.fromUserInFlight;
    payOwed(job);
  };
  for (auto& job : jobs_) release(*job);
  for (auto& job : draining_) release(*job);
  if (writes == 0) return;
  logger().warn("{}: {} write(s) from the caller's registered memory not completed by the peer "
                "{} ms after the channel was let go; the memory goes back to its owner (the "
                "peer, unresponsive, was given up)",
                who(), writes, hub_.options_.releaseSourcesAfter->count());
}

void FabricChannel::detach(const Status& why) {
  if (!failure_.isOk()) return;
  for (auto& job : jobs_) {
    // What is posted is in the send ring already; the rest is copied, and the job goes on as
    // one of that many bytes, of which none is posted (its pieces in flight still count).
    // Its pieces in flight from the caller's memory hold the done back until they completed.
    const uint8_t* rest = job->src + job->posted;
    job->owned.assign(rest, rest + (job->bytes - job->posted));
    job->src = job->owned.data();
    job->bytes -= job->posted;
    job->windowOffset += job->posted;
    job->posted = 0;
    job->region = nullptr;
    if (job->done) job->owed = why;
    settle(*job);
  }
  if (handler_) {
    post([h = std::move(handler_), why] { h(why, {}); });
    handler_ = nullptr;
  }
  closeWindows();
  armRelease();
}

Result<RemoteBuffer> FabricChannel::openWindow(void* data, size_t bytes) {
  if (!failure_.isOk()) return failure_;
  if (bytes == 0) return invalidArgument(who() + ": a window of 0 bytes");
  std::shared_ptr<const UserRegion> region = hub_.userRegions_->find(data, bytes);
  // Regions taken off the list since their window opened are let go (find() synced the list).
  std::erase_if(windows_, [&](const Window& w) { return !hub_.userRegions_->holds(w.regionId); });
  if (!region) {
    return invalidArgument(fmt::format("{}: no registered buffer holds the window of {} bytes "
                                       "at {}",
                                       who(), bytes, data));
  }
  auto it = std::find_if(windows_.begin(), windows_.end(),
                         [&](const Window& w) { return w.regionId == region->id; });
  if (it == windows_.end()) {
    Result<RegisteredMemory> m =
        RegisteredMemory::add(*hub_.domain_, region->memory.data(), region->memory.size(),
                              RegisteredMemory::Access::kRemoteWrite);
    if (!m.isOk()) {
      return Status(m.status().code(), fmt::format("{}: a window's buffer of {} bytes: {}", who(),
                                                   region->memory.size(), m.status().message()));
    }
    windows_.push_back(Window{region->id, std::move(*m)});
    it = std::prev(windows_.end());
  }
  return it->memory.remote(static_cast<uint8_t*>(data) - it->memory.data(), bytes);
}

void FabricChannel::closeWindows() {
  for (Window& w : windows_) (void)w.memory.close();
  windows_.clear();
}

void FabricChannel::close(const Status& why) {
  if (closed_) return;
  closed_ = true;
  fail(why.isOk() ? abortedError(who() + ": closed") : why);
  (void)ringMemory_.close();
  hub_.onChannelClosed(*this);
  hub_.kick();  // a wait armed for this channel's work ends now, not at the next completion
}

void FabricChannel::dropMemory() {
  releaseTimer_.cancel();
  // The endpoint is gone: no write reads the callers' memory any more.
  for (auto& job : draining_) payOwed(*job);
  draining_.clear();
  std::fill(slotJob_.begin(), slotJob_.end(), nullptr);
  closeWindows();
  (void)ringMemory_.close();
  (void)controlMemory_.close();
  (void)sendMemory_.close();
}

}  // namespace rs::transport::fabric
