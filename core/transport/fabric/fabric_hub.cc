#include "core/transport/fabric/fabric_hub.h"

#include <fmt/format.h>
#include <rdma/fabric.h>

#include <asio/post.hpp>
#include <thread>

#include "core/common/log.h"
#include "core/transport/fabric/control_word.h"
#include "core/transport/fabric/fabric_immediate.h"

namespace rs::transport::fabric {

namespace {

// Tokens: kind (2 bits) | channel serial (32 bits) | index (30 bits: a slot, a receive buffer).
constexpr int kSerialShift = 30;
constexpr uint64_t kIndexMask = (uint64_t{1} << kSerialShift) - 1;
uint32_t tokenSerial(uint64_t t) { return static_cast<uint32_t>(t >> kSerialShift); }
uint32_t tokenIndex(uint64_t t) { return static_cast<uint32_t>(t & kIndexMask); }
uint64_t tokenKind(uint64_t t) { return t >> 62; }

// The provider's receive queue bounds what we keep posted; more than this many 8-byte buffers
// would only be registered memory nobody posts.
constexpr uint32_t kMaxReceives = 65536;
constexpr auto kMinBackoff = std::chrono::microseconds(50);
constexpr auto kMaxBackoff = std::chrono::microseconds(1000);

}  // namespace

uint64_t FabricHub::token(TokenKind kind, uint32_t serial, uint32_t index) {
  return (static_cast<uint64_t>(kind) << 62) | (static_cast<uint64_t>(serial) << kSerialShift) |
         (index & kIndexMask);
}

FabricHub::FabricHub(asio::io_context& io, FabricHubOptions options)
    : io_(io), options_(std::move(options)), timer_(io), byId_(kMaxChannels) {}

Result<std::unique_ptr<FabricHub>> FabricHub::open(asio::io_context& io, const FabricChoice& choice,
                                                   FabricHubOptions options) {
  std::unique_ptr<FabricHub> h(new FabricHub(io, std::move(options)));
  Result<FabricInfo> info = FabricInfo::probe(choice);
  if (!info.isOk()) return info.status();
  const bool rxCqData = (info->get()->mode & FI_RX_CQ_DATA) != 0;
  const size_t rxSize = info->get()->rx_attr->size;
  Result<std::unique_ptr<FabricDomain>> domain = FabricDomain::open(std::move(*info));
  if (!domain.isOk()) return domain.status();
  h->domain_ = std::move(*domain);
  h->userRegions_ =
      std::make_unique<UserRegions>(*h->domain_, "fabric hub '" + h->options_.name + "'");
  FabricEndpointOptions eo;
  eo.name = h->options_.name;
  eo.waitFd = h->options_.waitFd;
  eo.postTimeout = std::chrono::milliseconds(0);  // never block the io thread: retry_ instead
  Result<std::unique_ptr<FabricEndpoint>> ep = FabricEndpoint::open(*h->domain_, eo);
  if (!ep.isOk() && eo.waitFd) {
    // Not every provider gives its completion queue a wait fd: poll adaptively instead.
    logger().info("fabric hub '{}': {} gives no completion wait fd ({}); polling adaptively",
                  h->options_.name, h->domain_->provider(), ep.status().toString());
    eo.waitFd = false;
    ep = FabricEndpoint::open(*h->domain_, eo);
  }
  if (!ep.isOk()) return ep.status();
  h->endpoint_ = std::move(*ep);
  if (h->endpoint_->waitFd() >= 0) {
    h->waitFd_ = std::make_unique<asio::posix::stream_descriptor>(io, h->endpoint_->waitFd());
  }
  h->receivesForWrites_ = h->options_.receivesForWrites.value_or(rxCqData);
  h->receiveCapacity_ = static_cast<uint32_t>(std::min<size_t>(rxSize, kMaxReceives));
  if (h->receiveCapacity_ < h->options_.controlReceives) {
    return resourceExhausted(fmt::format("fabric hub '{}': {} receives for control words, the "
                                         "provider's queue holds {}",
                                         h->options_.name, h->options_.controlReceives,
                                         h->receiveCapacity_));
  }
  h->receiveBytes_ = AlignedBuffer(size_t{h->receiveCapacity_} * kControlWordBytes);
  Result<RegisteredMemory> m =
      RegisteredMemory::add(*h->domain_, h->receiveBytes_.data(), h->receiveBytes_.size(),
                            RegisteredMemory::Access::kLocal);
  if (!m.isOk()) return m.status();
  h->receiveMemory_ = std::move(*m);
  for (uint32_t i = h->receiveCapacity_; i-- > 0;) h->freeReceives_.push_back(i);
  RS_RETURN_IF_ERROR(h->topUpReceives());
  return h;
}

FabricHub::~FabricHub() {
  shutdown(abortedError("closed"));
  *alive_ = false;
  if (waitFd_) waitFd_->release();  // the fd is libfabric's
}

Status FabricHub::postReceive(uint32_t index) {
  RS_RETURN_IF_ERROR(endpoint_->postRecv(receiveMemory_, size_t{index} * kControlWordBytes,
                                         kControlWordBytes, token(TokenKind::kReceive, 0, index)));
  ++receivesPosted_;
  return Status::ok();
}

Status FabricHub::topUpReceives() {
  const uint64_t want = options_.controlReceives +
                        (receivesForWrites_ ? slotsOpen_ + options_.controlReceives : 0);
  while (receivesPosted_ < want && !freeReceives_.empty()) {
    const uint32_t index = freeReceives_.back();
    Status s = postReceive(index);
    if (!s.isOk()) return endpoint_->postFoundQueueFull() ? Status::ok() : s;  // next poll
    freeReceives_.pop_back();
  }
  return Status::ok();
}

Result<FabricEndpoint::PeerId> FabricHub::peerFor(const std::vector<uint8_t>& address) {
  // Many channels go to one peer endpoint: one address-vector entry for it.
  auto it = peers_.find(address);
  if (it != peers_.end()) return it->second;
  // Named by its order here: channels share the entry, so no one channel names it.
  Result<FabricEndpoint::PeerId> p =
      endpoint_->addPeer(address, fmt::format("{}'s peer endpoint #{}", options_.name, peers_.size()));
  if (p.isOk()) peers_.emplace(address, *p);
  return p;
}

Result<std::shared_ptr<FabricChannel>> FabricHub::openChannel(RingShape ring, std::string name) {
  if (!failure_.isOk()) return failure_;
  if (Status s = checkRingShape(ring); !s.isOk()) {
    return invalidArgument(fmt::format("channel '{}': {}", name, s.message()));
  }
  int id = -1;
  for (uint32_t i = 0; i < kMaxChannels; ++i) {
    const uint32_t candidate = (nextId_ + i) % kMaxChannels;
    if (!byId_[candidate]) {
      id = static_cast<int>(candidate);
      break;
    }
  }
  if (id < 0) {
    return resourceExhausted(fmt::format("fabric hub '{}': channel '{}': all {} channel ids in use",
                                         options_.name, name, kMaxChannels));
  }
  if (receivesForWrites_ &&
      options_.controlReceives * 2 + slotsOpen_ + ring.slots > receiveCapacity_) {
    return resourceExhausted(fmt::format("fabric hub '{}': channel '{}': {} more ring slots need "
                                         "as many posted receives; {} of {} are taken",
                                         options_.name, name, ring.slots, receivesPosted_,
                                         receiveCapacity_));
  }
  std::shared_ptr<FabricChannel> ch(
      new FabricChannel(*this, static_cast<uint16_t>(id), nextSerial_, ring, std::move(name)));
  RS_RETURN_IF_ERROR(ch->openRing());
  byId_[id] = ch;
  bySerial_[nextSerial_++] = ch;
  nextId_ = static_cast<uint16_t>((id + 1) % kMaxChannels);
  slotsOpen_ += ring.slots;
  openCount_.fetch_add(1, std::memory_order_relaxed);
  if (Status s = topUpReceives(); !s.isOk()) failAll(s);
  return ch;
}

void FabricHub::onChannelClosed(FabricChannel& channel) {
  if (byId_[channel.id()].get() == &channel) {
    // Kept alive by bySerial_ until reaped, so this call can return into the channel.
    byId_[channel.id()].reset();
    slotsOpen_ -= channel.ring().slots;
    openCount_.fetch_sub(1, std::memory_order_relaxed);
    closedSerials_.push_back(channel.serial_);
    lingering_.fetch_add(1, std::memory_order_relaxed);
  }
  // Reaped later, never from inside the channel's own call.
  asio::post(io_, [this, alive = alive_] {
    if (*alive) reapLingering();
  });
}

void FabricHub::retryLater(FabricChannel& channel) {
  if (channel.retryQueued_) return;
  channel.retryQueued_ = true;
  retry_.push_back(channel.shared_from_this());
}

void FabricHub::reapLingering() {
  for (size_t i = 0; i < closedSerials_.size();) {
    auto it = bySerial_.find(closedSerials_[i]);
    if (it == bySerial_.end() || it->second->pendingOps() == 0) {
      if (it != bySerial_.end()) {
        // Its registrations go now, with nothing left that uses them: whoever still holds the
        // channel may do so past this hub, and a registration open then keeps the domain from
        // closing.
        it->second->dropMemory();
        bySerial_.erase(it);
      }
      closedSerials_[i] = closedSerials_.back();
      closedSerials_.pop_back();
      lingering_.fetch_sub(1, std::memory_order_relaxed);
    } else {
      ++i;
    }
  }
}

bool FabricHub::wantsProgress() const {
  if (!retry_.empty()) return true;
  for (const auto& [serial, ch] : bySerial_) {
    if (ch->wantsProgress()) return true;
  }
  return false;
}

void FabricHub::kick() {
  if (!failure_.isOk()) return;
  if (scheduled_) {
    // A wait is armed: cut it short, the new work may need progress now (a wait fd says only
    // that completions are ready, not that a queued send wants the socket).
    if (parked_) {
      parked_ = false;
      if (waitFd_) waitFd_->cancel();
      timer_.cancel();
    }
    return;
  }
  if (!wantsProgress()) return;
  setScheduled(true);
  asio::post(io_, [this, alive = alive_] {
    if (*alive) pollOnce();
  });
}

void FabricHub::pollOnce() {
  setScheduled(true);  // kick() from dispatch decides nothing: this poll does, below
  parked_ = false;
  if (!failure_.isOk()) {
    setScheduled(false);
    return;
  }
  polls_.fetch_add(1, std::memory_order_relaxed);
  std::vector<FabricCompletion> got;
  Status s = endpoint_->poll(got, 64);
  for (FabricCompletion& c : got) dispatch(c);
  // Completions made room: what found the queue full goes again.
  std::vector<std::shared_ptr<FabricChannel>> retry = std::move(retry_);
  retry_.clear();
  for (auto& ch : retry) {
    ch->retryQueued_ = false;
    ch->retry();
  }
  if (s.isOk()) s = topUpReceives();
  if (!s.isOk()) {
    setScheduled(false);
    failAll(s);
    return;
  }
  reapLingering();
  if (!wantsProgress()) {
    setScheduled(false);
    backoff_ = std::chrono::microseconds(0);
    return;
  }
  if (!got.empty()) {
    backoff_ = std::chrono::microseconds(0);
    asio::post(io_, [this, alive = alive_] {
      if (*alive) pollOnce();
    });
    return;
  }
  park();
}

void FabricHub::park() {
  auto wake = [this, alive = alive_](const asio::error_code&) {
    if (*alive && scheduled_) pollOnce();
  };
  if (waitFd_ && endpoint_->tryWait()) {
    parked_ = true;
    waitFd_->async_wait(asio::posix::stream_descriptor::wait_read, wake);
    return;
  }
  // No fd, or fi_trywait says poll first: back off on the timer rather than spin on a provider
  // whose trywait keeps refusing without a completion to show for it.
  backoff_ = backoff_.count() == 0 ? kMinBackoff : std::min(backoff_ * 2, kMaxBackoff);
  parked_ = true;
  timer_.expires_after(backoff_);
  timer_.async_wait(wake);
}

void FabricHub::drop(const std::string& what) {
  dropped_.fetch_add(1, std::memory_order_relaxed);
  logger().debug("fabric hub '{}': dropped {}", options_.name, what);
}

void FabricHub::dispatch(FabricCompletion& c) {
  switch (c.op) {
    case FabricOp::kRemoteWrite: {
      if (c.consumedRecv && tokenKind(c.token) == static_cast<uint64_t>(TokenKind::kReceive)) {
        --receivesPosted_;
        freeReceives_.push_back(tokenIndex(c.token));
      }
      if (!c.status.isOk()) return drop(c.status.toString());
      const uint16_t id = immediateChannel(c.immediate);
      FabricChannel* ch = byId_[id].get();
      if (ch == nullptr) {
        return drop(fmt::format("a write with immediate {:#010x} for channel {}, not open",
                                c.immediate, id));
      }
      ch->onArrival(immediateSequence(c.immediate), c.bytes);
      return;
    }
    case FabricOp::kRecv: {
      const uint32_t index = tokenIndex(c.token);
      if (tokenKind(c.token) != static_cast<uint64_t>(TokenKind::kReceive) ||
          index >= receiveCapacity_) {
        return drop(fmt::format("a receive completion for no receive of ours: {}",
                                c.status.toString()));
      }
      --receivesPosted_;
      freeReceives_.push_back(index);
      if (!c.status.isOk()) return drop(c.status.toString());
      const std::optional<ControlWord> w = decodeControlWord(std::span<const uint8_t>(
          reinterpret_cast<const uint8_t*>(receiveBytes_.data()) + size_t{index} * kControlWordBytes,
          c.bytes));
      if (!w) return drop(fmt::format("a control message of {} bytes (expected {})", c.bytes,
                                      kControlWordBytes));
      FabricChannel* ch = w->channelId < kMaxChannels ? byId_[w->channelId].get() : nullptr;
      if (ch == nullptr) {
        return drop(fmt::format("a control word (kind {}) for channel {}, not open", w->kind,
                                w->channelId));
      }
      ch->onControl(*w);
      return;
    }
    case FabricOp::kWrite:
    case FabricOp::kSend: {
      auto it = bySerial_.find(tokenSerial(c.token));
      if (it == bySerial_.end()) {
        return drop(fmt::format("a completion of a {} for no channel: {}", fabricOpName(c.op),
                                c.status.toString()));
      }
      std::shared_ptr<FabricChannel> ch = it->second;  // its handlers may close it
      if (tokenKind(c.token) == static_cast<uint64_t>(TokenKind::kCredit)) {
        ch->onCreditSent(c.status);
      } else {
        ch->onWriteDone(tokenIndex(c.token), c.status);
      }
      return;
    }
  }
}

void FabricHub::failAll(const Status& why) {
  if (failure_.isOk()) {
    failure_ = Status(why.code(), fmt::format("fabric hub '{}': {}", options_.name, why.message()));
    logger().warn("{}", failure_.message());
  }
  for (auto& [serial, ch] : bySerial_) ch->fail(failure_);
}

void FabricHub::shutdown(const Status& why) {
  if (!endpoint_ || !endpoint_->isOpen()) return;
  if (failure_.isOk()) {  // a close, not a failure: no warning
    failure_ = Status(why.code(), fmt::format("fabric hub '{}': {}", options_.name, why.message()));
    logger().debug("{}", failure_.message());
  }
  failAll(failure_);
  // Our pending writes and credit words may still complete (the peer is alive); past the bound
  // the endpoint is aborted, which completes them as errors. Posted receives are no reason to
  // wait.
  std::vector<FabricCompletion> out;
  const auto deadline = std::chrono::steady_clock::now() + options_.shutdownBound;
  auto ours = [&] {
    for (auto& [serial, ch] : bySerial_) {
      if (ch->pendingOps() > 0) return true;
    }
    return false;
  };
  while (ours() && std::chrono::steady_clock::now() < deadline) {
    out.clear();
    if (!endpoint_->poll(out).isOk()) break;
    for (FabricCompletion& c : out) dispatch(c);
    if (out.empty()) std::this_thread::sleep_for(kMinBackoff);
  }
  out.clear();
  endpoint_->abort(failure_, out);
  for (FabricCompletion& c : out) dispatch(c);
  // Registrations go before the domain does, whoever still holds a channel.
  for (auto& [serial, ch] : bySerial_) {
    ch->close(failure_);
    ch->dropMemory();
  }
  bySerial_.clear();
  userRegions_->closeAll();
  closedSerials_.clear();
  retry_.clear();
  for (auto& ch : byId_) ch.reset();
  lingering_.store(0, std::memory_order_relaxed);
  openCount_.store(0, std::memory_order_relaxed);
  setScheduled(false);
  parked_ = false;
  if (waitFd_) waitFd_->cancel();
  timer_.cancel();
  (void)receiveMemory_.close();
}

}  // namespace rs::transport::fabric
