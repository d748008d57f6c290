#include "client/nccl/p2p/p2p_comm.h"

#include <asio/post.hpp>

#include "core/common/log.h"
#include "core/transport/stream_error.h"
#include "core/wire/group_id.h"

namespace rs::nccl::p2p {

CommCore::CommCore(std::vector<std::unique_ptr<transport::Stream>> streams,
                   uint64_t minStripeBytes, std::string peerName, bool channelsStartWaiting)
    : count_(static_cast<uint32_t>(streams.size())),
      minStripe_(minStripeBytes),
      peerName_(std::move(peerName)) {
  for (uint32_t i = 0; i < count_; ++i) {
    channels_.push_back(std::make_unique<Channel>(std::move(streams[i]), i));
    channels_.back()->waiting = channelsStartWaiting;
  }
  free_.reserve(pool_.size());
  for (auto it = pool_.rbegin(); it != pool_.rend(); ++it) {
    it->comm = this;
    free_.push_back(&*it);
  }
}

CommCore::~CommCore() = default;

void CommCore::start() {
  for (auto& ch : channels_)
    asio::post(ch->executor, counted([this, c = ch.get()] { startChannel(*c); }));
}

Status CommCore::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

void CommCore::release(P2pRequest* request) {
  std::lock_guard lock(mu_);
  request->state.store(P2pRequest::State::kFree, std::memory_order_relaxed);
  free_.push_back(request);
}

Result<P2pRequest*> CommCore::post(std::byte* data, uint64_t size) {
  std::lock_guard lock(mu_);
  if (closing_) return failure_;
  if (free_.empty()) return static_cast<P2pRequest*>(nullptr);
  P2pRequest* r = free_.back();
  free_.pop_back();
  r->seq = nextSeq_++;
  r->data = data;
  r->size = size;
  r->piecesLeft = count_;
  r->totalKnown = false;
  r->total = 0;
  r->bytes = 0;
  r->state.store(P2pRequest::State::kPending, std::memory_order_relaxed);
  active_[r->seq % kMaxRequestsInFlight] = r;
  // Posting under mu_ keeps the wake-ups in step with `waiting`; a post runs nothing inline.
  for (auto& ch : channels_) {
    if (!ch->waiting) continue;
    ch->waiting = false;
    asio::post(ch->executor, counted([this, c = ch.get()] { resume(*c); }));
  }
  return r;
}

void CommCore::pieceDoneLocked(P2pRequest* request, uint64_t bytes) {
  if (--request->piecesLeft > 0) return;
  request->bytes = bytes;
  request->state.store(P2pRequest::State::kDone, std::memory_order_release);
}

void CommCore::fail(Status status) {
  std::lock_guard lock(mu_);
  if (closing_) return;
  closing_ = true;
  if (status.code() != StatusCode::kAborted)
    rs::logger().debug("p2p {}: {}", peerName_, status.toString());
  failure_ = std::move(status);
  // Counted under mu_, so the drain cannot be declared before these have run.
  for (auto& ch : channels_)
    asio::post(ch->executor, counted([c = ch.get()] { c->stream->close(); }));
}

void CommCore::opDone() {
  if (!pendingOps_.done()) return;
  std::lock_guard lock(mu_);
  if (drainedLocked()) drainedCv_.notify_all();
}

bool CommCore::drainedLocked() {
  if (drained_) return true;
  // Once closing_, nothing starts new operations outside a running handler, so a zero count
  // stays zero.
  if (!closing_ || pendingOps_.count() != 0) return false;
  drained_ = true;
  for (auto& r : pool_) {
    if (r.state.load(std::memory_order_relaxed) == P2pRequest::State::kPending)
      r.state.store(P2pRequest::State::kFailed, std::memory_order_release);
  }
  return true;
}

void CommCore::close() {
  fail(abortedError(peerName_ + ": the connection was closed"));
  std::unique_lock lock(mu_);
  if (!drainedCv_.wait_for(lock, kDrainTimeout, [this] { return drainedLocked(); }))
    rs::logger().warn("p2p {}: closed, but its socket handlers did not finish within {} s",
                      peerName_, kDrainTimeout.count());
}

std::string CommCore::where(const Channel& channel) const {
  return peerName_ + ", socket " + std::to_string(channel.index);
}

Status CommCore::socketError(const Channel& channel, const std::string& doing,
                             const std::error_code& error) const {
  switch (transport::classify(error)) {
    case transport::StreamError::kPeerClosed:
      return unavailableError(where(channel) + ": the peer closed the connection");
    case transport::StreamError::kLost:  // reset, broken pipe: the system's words say which
      return unavailableError(where(channel) + ": the connection was lost (" + doing + ": " +
                              error.message() + ")");
    default:
      return ioError(where(channel) + ": " + doing + ": " + error.message());
  }
}

// --- Public surface ------------------------------------------------------------------------

Status testRequest(P2pRequest* request, bool* done, size_t* bytes) {
  if (request == nullptr || done == nullptr)
    return invalidArgument("testRequest: null request or null done flag");
  *done = false;
  if (bytes != nullptr) *bytes = 0;
  switch (request->state.load(std::memory_order_acquire)) {
    case P2pRequest::State::kPending:
      return Status::ok();
    case P2pRequest::State::kDone:
      *done = true;
      if (bytes != nullptr) *bytes = request->bytes;
      request->comm->release(request);
      return Status::ok();
    case P2pRequest::State::kFailed: {
      Status failure = request->comm->failure();
      request->comm->release(request);
      return failure;
    }
    case P2pRequest::State::kFree:
      break;
  }
  return failedPrecondition("testRequest: the request was already completed and freed");
}

uint64_t randomId() {
  for (;;) {
    const GroupId g = GroupId::random();
    if (const uint64_t id = g.hi ^ g.lo; id != 0) return id;
  }
}

}  // namespace rs::nccl::p2p
