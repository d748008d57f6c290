// A communicator takes a lost reducer back (proto/FAILOVER.md, "A reducer comes back"): while it
// is the only reducer lost, it is redialled with back-off (RS_REJOIN_MS), on the io threads and
// beside the collectives, which go on under the dead set. A reducer restarted there offers the
// rejoin once every member's streams are in; this member answers with its next chunk and holds
// its collectives until JOIN_AT(T). Collectives below T run as before; the first at T waits
// until every chunk of the reducer below T is committed, then the redialled connections become
// its streams, the lanes close (they hold nothing), the dead set is empty and its generation one
// more, so that a stale LOST from before cannot put the reducer back. A redial that fails, or a
// rejoin cancelled before JOIN_AT, costs the next back-off; after JOIN_AT a loss is an ordinary
// one.
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include "client/communicator_core.h"
#include "core/cluster/dead_view.h"
#include "core/cluster/sharding.h"
#include "core/common/log.h"

namespace rs::client {

namespace {
// The first redial after a loss, as a fraction of RS_REJOIN_MS.
constexpr int kFirstRedialDivisor = 16;
// The reducers' --loss-detect-ms default: the hold's bound where RS_LOSS_DETECT_MS is unset.
constexpr std::chrono::milliseconds kDefaultLossBound{10000};
}  // namespace

FailoverStats CommunicatorCore::failover() const {
  FailoverStats s;
  s.lostNow = lostNow_.load(std::memory_order_relaxed);
  s.rejoins = rejoins_.load(std::memory_order_relaxed);
  s.rejoinsCancelled = rejoinsCancelled_.load(std::memory_order_relaxed);
  s.generation = s.rejoins;  // one generation per rejoin taken
  s.redialUp = redialUp_.load(std::memory_order_relaxed);
  return s;
}

void CommunicatorCore::scheduleRedialLocked() {
  if (options_.rejoin.count() == 0 || !dead_ || dead_->size() != 1 || adopting_ ||
      failedFlag_.load(std::memory_order_acquire) || rejoin_.phase != Rejoin::Phase::kIdle)
    return;
  const uint32_t reducer = dead_->nthDead(0);
  if (rejoin_.reducer != reducer || rejoin_.backoff.count() == 0) {
    rejoin_.reducer = reducer;
    rejoin_.backoff = std::max(std::chrono::milliseconds(1), options_.rejoin / kFirstRedialDivisor);
    rejoin_.lostSince = std::chrono::steady_clock::now();
  }
  rejoin_.phase = Rejoin::Phase::kBackingOff;
  armRejoinTimerLocked(rejoin_.backoff);
}

void CommunicatorCore::armRejoinTimerLocked(std::chrono::milliseconds wait) {
  // The timer is ios_[0]'s: armed there, whichever thread asks. A later arming, or anything
  // that moves the attempt on, makes this one stale.
  const uint64_t attempt = ++rejoin_.attempt;
  asio::post(*ios_.front(), [weak = weak_from_this(), this, attempt, wait] {
    auto self = weak.lock();
    if (!self) return;
    if (!rejoinTimer_) rejoinTimer_ = std::make_unique<asio::steady_timer>(*ios_.front());
    rejoinTimer_->expires_after(wait);
    rejoinTimer_->async_wait([weak, this, attempt](const std::error_code& ec) {
      auto again = weak.lock();
      if (!again || ec) return;
      redial(attempt);
    });
  });
}

void CommunicatorCore::redial(uint64_t attempt) {
  std::vector<std::shared_ptr<Connection>> start;
  {
    std::lock_guard lock(submitMu_);
    if (attempt != rejoin_.attempt) {
      // The hold's bound for an answered rejoin (the same timer): JOIN_AT did not come.
      return;
    }
    if (rejoin_.phase == Rejoin::Phase::kAnswered)
      return endRedialLocked(unavailableError(fmt::format(
                                 "no JOIN_AT within {} ms of this member's JOIN (twice the "
                                 "redial's loss bound)",
                                 2 * rejoin_.bound.count())),
                             /*cancelled=*/true);
    if (rejoin_.phase != Rejoin::Phase::kBackingOff) return;
    if (failedFlag_.load(std::memory_order_acquire) || !dead_ || dead_->size() != 1 ||
        adopting_) {
      rejoin_.phase = Rejoin::Phase::kIdle;
      return;
    }
    const uint32_t r = rejoin_.reducer;
    rejoin_.phase = Rejoin::Phase::kDialing;
    rejoin_.streams.clear();
    rejoin_.connected = 0;
    // Reaching the reducer and its handshake within the back-off (at least a second): a
    // reducer that is not back yet costs one refused dial per redial.
    const auto timeout = std::max(std::chrono::milliseconds(1000), rejoin_.backoff);
    for (uint32_t s = 0; s < streams_; ++s) {
      const size_t io = ioIndexOf(static_cast<size_t>(r) * streams_ + s);
      rejoin_.streams.push_back(std::make_shared<Connection>(
          *this, options_, group_, *ios_[io], *ackTimers_[io], r, s, options_.reducers[r],
          reducerLinks_[r], std::nullopt, Handshake::Redial{timeout}));
    }
    start = rejoin_.streams;
    std::lock_guard state(mu_);
    live_ += start.size();
  }
  rs::logger().debug("group {} rank {}: redialling reducer {} ({}) to take it back",
                     group_.id.toString().substr(0, 8), group_.rank, rejoin_.reducer,
                     options_.reducers[rejoin_.reducer].toString());
  for (auto& c : start) asio::post(c->executorContext(), [c] { c->start(); });
}

void CommunicatorCore::endRedialLocked(const Status& why, bool cancelled) {
  const uint32_t r = rejoin_.reducer;
  for (auto& c : rejoin_.streams) asio::post(c->executorContext(), [c] { c->close(); });
  rejoin_.streams.clear();
  rejoin_.connected = 0;
  redialUp_.store(false, std::memory_order_relaxed);
  rejoin_.phase = Rejoin::Phase::kIdle;
  ++rejoin_.attempt;  // its timer, and its connections' callbacks, are stale now
  {
    std::lock_guard lock(mu_);
    holding_ = false;
    switchAt_.reset();
    cv_.notify_all();
  }
  if (cancelled) {
    rejoinsCancelled_.fetch_add(1, std::memory_order_relaxed);
    rs::logger().info("group {} rank {}: the rejoin of reducer {} ({}) was cancelled: {}; this "
                      "member goes on without it and redials in {} ms",
                      group_.id.toString().substr(0, 8), group_.rank, r,
                      options_.reducers[r].toString(), why.message(),
                      std::min(options_.rejoin, rejoin_.backoff * 2).count());
  } else {
    rs::logger().debug("group {} rank {}: redial of reducer {} failed: {}",
                       group_.id.toString().substr(0, 8), group_.rank, r, why.message());
  }
  rejoin_.backoff = std::min(options_.rejoin, rejoin_.backoff * 2);
  scheduleRedialLocked();
}

namespace {
// The index of `c` among the redial's streams, or -1 (a stale attempt's).
int redialIndex(const std::vector<std::shared_ptr<Connection>>& streams, const Connection& c) {
  for (size_t i = 0; i < streams.size(); ++i)
    if (streams[i].get() == &c) return static_cast<int>(i);
  return -1;
}
}  // namespace

void CommunicatorCore::onJoinOffer(Connection& connection) {
  std::lock_guard lock(submitMu_);
  if (redialIndex(rejoin_.streams, connection) != 0) return;  // a cancelled attempt's
  if (rejoin_.phase != Rejoin::Phase::kDialing) {
    return endRedialLocked(protocolError(fmt::format("{}: JOIN_OFFER out of turn",
                                                     connection.name())),
                           /*cancelled=*/true);
  }
  rejoin_.phase = Rejoin::Phase::kAnswered;
  rejoin_.answer = nextChunk_;
  {
    std::lock_guard state(mu_);
    holding_ = true;
    rejoinGate_.store(true, std::memory_order_release);
  }
  connection.sendJoin(rejoin_.answer);
  // The hold is bounded: twice the loss bound (the reducer's own wait for every answer is its
  // bound), RS_LOSS_DETECT_MS or the reducers' default where it is unset.
  rejoin_.bound = options_.lossDetect.count() != 0 ? options_.lossDetect : kDefaultLossBound;
  armRejoinTimerLocked(2 * rejoin_.bound);
}

void CommunicatorCore::onJoinAt(Connection& connection, uint64_t at) {
  std::lock_guard lock(submitMu_);
  if (redialIndex(rejoin_.streams, connection) != 0) return;
  if (rejoin_.phase != Rejoin::Phase::kAnswered || at < rejoin_.answer) {
    return endRedialLocked(
        protocolError(fmt::format("{}: JOIN_AT chunk {} {}", connection.name(), at,
                                  rejoin_.phase != Rejoin::Phase::kAnswered
                                      ? "out of turn"
                                      : fmt::format("below this member's JOIN, chunk {}",
                                                    rejoin_.answer))),
        /*cancelled=*/true);
  }
  rejoin_.phase = Rejoin::Phase::kAt;
  rejoin_.at = at;
  ++rejoin_.attempt;  // the hold's timer is stale
  std::lock_guard state(mu_);
  holding_ = false;
  switchAt_ = SwitchAt{rejoin_.reducer, at};
  cv_.notify_all();
}

bool CommunicatorCore::onRejoinEnded(Connection& connection, const Status& why) {
  std::lock_guard lock(submitMu_);
  if (redialIndex(rejoin_.streams, connection) < 0) {
    // Closed by a cancel (a stale attempt's), or taken back meanwhile: then a stream.
    for (const auto& c : connections_)
      if (c.get() == &connection) return false;
    return true;
  }
  switch (rejoin_.phase) {
    case Rejoin::Phase::kDialing:
      // Not there yet (refused, reset), or a reducer that refused the rejoin: the next redial.
      // One that took all of this member's streams and then ends (it cancels: another member
      // never came) is a cancel.
      endRedialLocked(why, rejoin_.connected == streams_);
      return true;
    case Rejoin::Phase::kAnswered:
      endRedialLocked(why, /*cancelled=*/true);
      return true;
    case Rejoin::Phase::kAt:
      // After JOIN_AT the others take the reducer back at T: so does this member, and then it
      // loses it as an ordinary loss (switchToRejoinedLocked).
      rejoin_.lostAfterAt = true;
      rs::logger().warn("group {} rank {}: {} after JOIN_AT: the reducer is taken back at "
                        "chunk {} and lost again",
                        group_.id.toString().substr(0, 8), group_.rank, why.message(),
                        rejoin_.at);
      return true;
    case Rejoin::Phase::kIdle:
    case Rejoin::Phase::kBackingOff:
      return true;
  }
  return true;
}

bool CommunicatorCore::committedBelow(uint32_t reducer, uint64_t at) const {
  for (uint32_t s = 0; s < streams_; ++s)
    if (ledger_.watermark(reducer, s) < at) return false;
  return true;
}

bool CommunicatorCore::gateOpenLocked() const {
  if (failed_ || holding_) return failed_;
  if (!switchAt_) return true;
  // The collective at the rejoin point waits for the commit of the reducer's chunks below it.
  return nextChunkSeen_.load(std::memory_order_acquire) < switchAt_->chunk ||
         committedBelow(switchAt_->reducer, switchAt_->chunk);
}

Result<std::unique_lock<std::mutex>> CommunicatorCore::lockForSubmit(
    std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (rejoinGate_.load(std::memory_order_acquire) &&
        !waitLocked([&] { return gateOpenLocked(); }, until)) {
      std::string why;
      {
        std::lock_guard lock(mu_);
        why = holding_ ? "waiting for JOIN_AT"
                       : fmt::format("waiting for the commit of reducer {}'s chunks below the "
                                     "rejoin point, chunk {}",
                                     switchAt_ ? switchAt_->reducer : 0,
                                     switchAt_ ? switchAt_->chunk : 0);
      }
      Status s = timeoutError(
          fmt::format("an all-reduce waited {} ms (its timeout) to take a lost reducer back: {}",
                      timeout.count(), why));
      fail(s);
      return s;
    }
    std::unique_lock lock(submitMu_);
    std::lock_guard state(mu_);
    if (!rejoinGate_.load(std::memory_order_acquire) || gateOpenLocked()) return lock;
  }
}

void CommunicatorCore::switchToRejoinedLocked() {
  const uint32_t r = rejoin_.reducer;
  const auto lostFor = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - rejoin_.lostSince);
  ++generation_;
  rejoins_.fetch_add(1, std::memory_order_relaxed);
  std::vector<std::shared_ptr<Connection>> lanes;
  for (auto& [key, lane] : lanes_) lanes.push_back(std::move(lane));
  lanes_.clear();
  const bool lostAgain = rejoin_.lostAfterAt;
  if (lostAgain) {
    // Lost again after JOIN_AT, as the other members will find: they take it back at T and
    // lose it under the new generation; the lanes reopen under it here too (they hold nothing:
    // every chunk of the reducer below T is committed).
    for (auto& c : rejoin_.streams) asio::post(c->executorContext(), [c] { c->close(); });
    adopting_ = true;
    retiring_ += lanes.size();
    for (auto& c : lanes) asio::post(c->executorContext(), [c] { c->retire(); });
    if (lanes.empty()) finishAdoptionLocked();
  } else {
    for (uint32_t s = 0; s < streams_; ++s) {
      const std::shared_ptr<Connection>& c = rejoin_.streams[s];
      asio::post(c->executorContext(), [c] { c->promote(); });
      connections_[static_cast<size_t>(r) * streams_ + s] = c;
    }
    for (auto& c : lanes) asio::post(c->executorContext(), [c] { c->close(); });
    dead_.reset();
    lostNow_.store(0, std::memory_order_relaxed);
  }
  rs::logger().info("group {} rank {}: reducer {} ({}) taken back at chunk {} after {} ms lost "
                    "(generation {}){}",
                    group_.id.toString().substr(0, 8), group_.rank, r,
                    options_.reducers[r].toString(), rejoin_.at, lostFor.count(), generation_,
                    lostAgain ? "; lost again: its chunks move to the survivors once more"
                              : ": its chunks go to it again");
  const uint64_t attempt = rejoin_.attempt + 1;
  rejoin_ = Rejoin();
  rejoin_.attempt = attempt;
  redialUp_.store(false, std::memory_order_relaxed);
  {
    std::lock_guard state(mu_);
    switchAt_.reset();
    holding_ = false;
    rejoinGate_.store(false, std::memory_order_release);
    cv_.notify_all();
  }
  // LOSTs of this generation that came before the switch.
  for (std::vector<uint32_t>& dead : laterLost_) {
    asio::post(*ios_.front(), [weak = weak_from_this(), this, dead = std::move(dead)] {
      if (auto self = weak.lock())
        adopt(dead, unavailableError("a reducer says these reducers are lost (LOST, kept for "
                                     "this member's rejoin)"));
    });
  }
  laterLost_.clear();
}

}  // namespace rs::client
