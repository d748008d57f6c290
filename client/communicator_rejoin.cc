// A communicator takes a lost reducer back (proto/FAILOVER.md, "A reducer comes back"): each
// lost reducer is redialled with a back-off of its own (RS_REJOIN_MS), on the io threads and
// beside the collectives, which go on under the dead set. A reducer restarted there offers the
// rejoin once every member's streams are in; this member answers with its next chunk and holds
// its collectives until JOIN_AT(T). Collectives below T run as before; the first at T waits
// until every chunk below T of every lost reducer is committed, then the redialled connections
// become its streams, the lanes close (they hold nothing), the reducer leaves the dead set and
// the lanes of the smaller set, if any, open at once; the generation is one more per reducer
// taken back, so that a stale LOST from before cannot put a reducer back. Several reducers agree
// their T's each with the members, and every member takes the same ones back at the same
// collective ("Several lost"). A redial that fails, or a rejoin cancelled before JOIN_AT, costs
// the next back-off; after JOIN_AT a loss is an ordinary one.
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include <algorithm>

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

std::chrono::milliseconds CommunicatorCore::redialBound() const {
  return options_.lossDetect.count() != 0 ? options_.lossDetect : kDefaultLossBound;
}

bool CommunicatorCore::reachedLocked(uint32_t reducer) const {
  const Rejoin& rejoin = rejoin_[reducer];
  return rejoin.phase == Rejoin::Phase::kAnswered || rejoin.phase == Rejoin::Phase::kAt ||
         (rejoin.phase == Rejoin::Phase::kDialing && rejoin.connected == streams_);
}

void CommunicatorCore::refreshRedialUpLocked() {
  bool up = false;
  for (const Rejoin& rejoin : rejoin_) up = up || rejoin.connected == streams_;
  redialUp_.store(up, std::memory_order_relaxed);
}

void CommunicatorCore::scheduleRedialLocked() {
  if (options_.rejoin.count() == 0 || !dead_ || adopting_ ||
      failedFlag_.load(std::memory_order_acquire))
    return;
  for (uint32_t i = 0; i < dead_->size(); ++i) {
    const uint32_t r = dead_->nthDead(i);
    Rejoin& rejoin = rejoin_[r];
    if (rejoin.phase != Rejoin::Phase::kIdle) continue;
    if (rejoin.backoff.count() == 0) {  // lost anew
      rejoin.backoff =
          std::max(std::chrono::milliseconds(1), options_.rejoin / kFirstRedialDivisor);
      rejoin.lostSince = std::chrono::steady_clock::now();
    }
    rejoin.phase = Rejoin::Phase::kBackingOff;
    armRejoinTimerLocked(r, rejoin.backoff);
  }
}

void CommunicatorCore::armRejoinTimerLocked(uint32_t reducer, std::chrono::milliseconds wait) {
  // The timers are ios_[0]'s: armed there, whichever thread asks. A later arming, or anything
  // that moves the attempt on, makes this one stale.
  const uint64_t attempt = ++rejoin_[reducer].attempt;
  asio::post(*ios_.front(), [weak = weak_from_this(), this, reducer, attempt, wait] {
    auto self = weak.lock();
    if (!self) return;
    std::unique_ptr<asio::steady_timer>& timer = rejoinTimers_[reducer];
    if (!timer) timer = std::make_unique<asio::steady_timer>(*ios_.front());
    timer->expires_after(wait);
    timer->async_wait([weak, this, reducer, attempt](const std::error_code& ec) {
      auto again = weak.lock();
      if (!again || ec) return;
      redial(reducer, attempt);
    });
  });
}

void CommunicatorCore::redial(uint32_t r, uint64_t attempt) {
  std::vector<std::shared_ptr<Connection>> start;
  {
    std::lock_guard lock(submitMu_);
    Rejoin& rejoin = rejoin_[r];
    if (attempt != rejoin.attempt) return;
    // The waits of a redial that reached the reducer (the same timer): its offer, then JOIN_AT.
    if (rejoin.phase == Rejoin::Phase::kDialing)
      return endRedialLocked(r, unavailableError(fmt::format(
                                    "no JOIN_OFFER within {} ms of this member's streams being "
                                    "in (twice the redial's loss bound)",
                                    2 * redialBound().count())),
                             /*cancelled=*/true);
    if (rejoin.phase == Rejoin::Phase::kAnswered)
      return endRedialLocked(r, unavailableError(fmt::format(
                                    "no JOIN_AT within {} ms of this member's JOIN (twice the "
                                    "redial's loss bound)",
                                    2 * redialBound().count())),
                             /*cancelled=*/true);
    if (rejoin.phase != Rejoin::Phase::kBackingOff) return;
    if (failedFlag_.load(std::memory_order_acquire) || !dead_ || !dead_->contains(r) ||
        adopting_) {
      rejoin.phase = Rejoin::Phase::kIdle;
      return;
    }
    rejoin.phase = Rejoin::Phase::kDialing;
    rejoin.streams.clear();
    rejoin.connected = 0;
    // Reaching the reducer and its handshake within the back-off (at least a second): a
    // reducer that is not back yet costs one refused dial per redial.
    const auto timeout = std::max(std::chrono::milliseconds(1000), rejoin.backoff);
    for (uint32_t s = 0; s < streams_; ++s) {
      const size_t io = ioIndexOf(static_cast<size_t>(r) * streams_ + s);
      rejoin.streams.push_back(std::make_shared<Connection>(
          *this, options_, group_, *ios_[io], *ackTimers_[io], r, s, options_.reducers[r],
          reducerLinks_[r], std::nullopt, Handshake::Redial{timeout}));
    }
    start = rejoin.streams;
    std::lock_guard state(mu_);
    live_ += start.size();
  }
  rs::logger().debug("group {} rank {}: redialling reducer {} ({}) to take it back",
                     group_.id.toString().substr(0, 8), group_.rank, r,
                     options_.reducers[r].toString());
  for (auto& c : start) asio::post(c->executorContext(), [c] { c->start(); });
}

void CommunicatorCore::endRedialLocked(uint32_t r, const Status& why, bool cancelled) {
  Rejoin& rejoin = rejoin_[r];
  for (auto& c : rejoin.streams) asio::post(c->executorContext(), [c] { c->close(); });
  rejoin.streams.clear();
  rejoin.connected = 0;
  refreshRedialUpLocked();
  const bool held = rejoin.phase == Rejoin::Phase::kAnswered;
  rejoin.phase = Rejoin::Phase::kIdle;
  ++rejoin.attempt;  // its timer, and its connections' callbacks, are stale now
  {
    std::lock_guard lock(mu_);
    if (held) --holding_;
    std::erase_if(switchAt_, [r](const SwitchAt& at) { return at.reducer == r; });
    updateGateLocked();
  }
  const auto next = std::min(options_.rejoin, rejoin.backoff * 2);
  if (cancelled) {
    rejoinsCancelled_.fetch_add(1, std::memory_order_relaxed);
    rs::logger().info("group {} rank {}: the rejoin of reducer {} ({}) was cancelled: {}; this "
                      "member goes on without it and redials in {} ms",
                      group_.id.toString().substr(0, 8), group_.rank, r,
                      options_.reducers[r].toString(), why.message(), next.count());
  } else {
    rs::logger().debug("group {} rank {}: redial of reducer {} failed: {}",
                       group_.id.toString().substr(0, 8), group_.rank, r, why.message());
  }
  rejoin.backoff = next;
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
  const uint32_t r = connection.reducerIndex();
  Rejoin& rejoin = rejoin_[r];
  if (redialIndex(rejoin.streams, connection) != 0) return;  // a cancelled attempt's
  if (rejoin.phase != Rejoin::Phase::kDialing) {
    return endRedialLocked(r, protocolError(fmt::format("{}: JOIN_OFFER out of turn",
                                                        connection.name())),
                           /*cancelled=*/true);
  }
  rejoin.phase = Rejoin::Phase::kAnswered;
  rejoin.answer = nextChunk_;
  {
    std::lock_guard state(mu_);
    ++holding_;
    updateGateLocked();
  }
  connection.sendJoin(rejoin.answer);
  // The hold is bounded: twice the loss bound (the reducer's own wait for every answer is its
  // bound), RS_LOSS_DETECT_MS or the reducers' default where it is unset.
  armRejoinTimerLocked(r, 2 * redialBound());
}

void CommunicatorCore::onJoinAt(Connection& connection, uint64_t at) {
  std::lock_guard lock(submitMu_);
  const uint32_t r = connection.reducerIndex();
  Rejoin& rejoin = rejoin_[r];
  if (redialIndex(rejoin.streams, connection) != 0) return;
  if (rejoin.phase != Rejoin::Phase::kAnswered || at < rejoin.answer) {
    return endRedialLocked(
        r,
        protocolError(fmt::format("{}: JOIN_AT chunk {} {}", connection.name(), at,
                                  rejoin.phase != Rejoin::Phase::kAnswered
                                      ? "out of turn"
                                      : fmt::format("below this member's JOIN, chunk {}",
                                                    rejoin.answer))),
        /*cancelled=*/true);
  }
  rejoin.phase = Rejoin::Phase::kAt;
  rejoin.at = at;
  ++rejoin.attempt;  // the hold's timer is stale
  std::lock_guard state(mu_);
  --holding_;
  // The switch waits for the commit of every lost reducer's chunks below T: the dead set now
  // (a loss adopted before the switch ends this rejoin, so it can only shrink meanwhile).
  switchAt_.push_back({r, at, *dead_});
  updateGateLocked();
}

bool CommunicatorCore::onRejoinEnded(Connection& connection, const Status& why) {
  std::lock_guard lock(submitMu_);
  const uint32_t r = connection.reducerIndex();
  Rejoin& rejoin = rejoin_[r];
  if (redialIndex(rejoin.streams, connection) < 0) {
    // Closed by a cancel (a stale attempt's), or taken back meanwhile: then a stream.
    for (const auto& c : connections_)
      if (c.get() == &connection) return false;
    return true;
  }
  switch (rejoin.phase) {
    case Rejoin::Phase::kDialing:
      // Not there yet (refused, reset), or a reducer that refused the rejoin: the next redial.
      // One that took all of this member's streams and then ends (it cancels: another member
      // never came) is a cancel.
      endRedialLocked(r, why, reachedLocked(r));
      return true;
    case Rejoin::Phase::kAnswered:
      endRedialLocked(r, why, /*cancelled=*/true);
      return true;
    case Rejoin::Phase::kAt:
      // After JOIN_AT the others take the reducer back at T: so does this member, and then it
      // loses it as an ordinary loss (switchToRejoinedLocked).
      rejoin.lostAfterAt = true;
      rs::logger().warn("group {} rank {}: {} after JOIN_AT: reducer {} is taken back at "
                        "chunk {} and lost again",
                        group_.id.toString().substr(0, 8), group_.rank, why.message(), r,
                        rejoin.at);
      return true;
    case Rejoin::Phase::kIdle:
    case Rejoin::Phase::kBackingOff:
      return true;
  }
  return true;
}

bool CommunicatorCore::committedBelow(const cluster::DeadSet& dead, uint64_t at) const {
  for (uint32_t i = 0; i < dead.size(); ++i)
    for (uint32_t s = 0; s < streams_; ++s)
      if (ledger_.watermark(dead.nthDead(i), s) < at) return false;
  return true;
}

bool CommunicatorCore::gateOpenLocked() const {
  if (failed_ || holding_ > 0) return failed_;
  // A collective at a rejoin point waits for the commit of the lost reducers' chunks below it.
  const uint64_t next = nextChunkSeen_.load(std::memory_order_acquire);
  for (const SwitchAt& at : switchAt_)
    if (next >= at.chunk && !committedBelow(at.dead, at.chunk)) return false;
  return true;
}

void CommunicatorCore::updateGateLocked() {
  rejoinGate_.store(holding_ > 0 || !switchAt_.empty(), std::memory_order_release);
  cv_.notify_all();
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
        why = holding_ > 0 ? "waiting for JOIN_AT" : "waiting for commits";
        for (const SwitchAt& at : switchAt_)
          if (holding_ == 0 && !committedBelow(at.dead, at.chunk))
            why = fmt::format("waiting for the commit of the chunks below the rejoin point of "
                              "reducer {}, chunk {}, of reducers {}",
                              at.reducer, at.chunk, at.dead.toString());
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
  // The reducers whose rejoin point this collective reaches: the same on every member
  // (proto/FAILOVER.md, "Several lost").
  std::vector<uint32_t> back;
  for (uint32_t r = 0; r < reducers_; ++r)
    if (rejoin_[r].phase == Rejoin::Phase::kAt && nextChunk_ >= rejoin_[r].at) back.push_back(r);
  if (back.empty()) return;
  generation_ += back.size();
  rejoins_.fetch_add(back.size(), std::memory_order_relaxed);
  // Every chunk below T of every lost reducer is committed: the lanes hold nothing.
  for (auto& [key, lane] : lanes_) asio::post(lane->executorContext(), [c = lane] { c->close(); });
  lanes_.clear();
  std::vector<uint32_t> still;  // lost after the switch
  for (uint32_t i = 0; i < dead_->size(); ++i) {
    const uint32_t d = dead_->nthDead(i);
    if (rejoin_[d].phase != Rejoin::Phase::kAt || nextChunk_ < rejoin_[d].at ||
        rejoin_[d].lostAfterAt)
      still.push_back(d);
  }
  for (uint32_t r : back) {
    Rejoin& rejoin = rejoin_[r];
    const auto lostFor = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - rejoin.lostSince);
    if (rejoin.lostAfterAt) {
      // Lost again after JOIN_AT, as the other members will find: they take it back at T and
      // lose it under the new generation; it stays lost here, and its chunks go on the lanes
      // opened below under that generation.
      for (auto& c : rejoin.streams) asio::post(c->executorContext(), [c] { c->close(); });
    } else {
      for (uint32_t s = 0; s < streams_; ++s) {
        const std::shared_ptr<Connection>& c = rejoin.streams[s];
        asio::post(c->executorContext(), [c] { c->promote(); });
        connections_[static_cast<size_t>(r) * streams_ + s] = c;
      }
    }
    rs::logger().info("group {} rank {}: reducer {} ({}) taken back at chunk {} after {} ms lost "
                      "(generation {}){}",
                      group_.id.toString().substr(0, 8), group_.rank, r,
                      options_.reducers[r].toString(), rejoin.at, lostFor.count(), generation_,
                      rejoin.lostAfterAt
                          ? "; lost again: its chunks move to the survivors once more"
                          : ": its chunks go to it again");
    const uint64_t attempt = rejoin.attempt + 1;
    const bool lostAgain = rejoin.lostAfterAt;
    rejoin = Rejoin();
    rejoin.attempt = attempt;
    if (lostAgain) rejoin.lostSince = std::chrono::steady_clock::now();
  }
  refreshRedialUpLocked();
  {
    std::lock_guard state(mu_);
    std::erase_if(switchAt_, [&](const SwitchAt& at) {
      return std::find(back.begin(), back.end(), at.reducer) != back.end();
    });
    updateGateLocked();
  }
  if (still.empty()) {
    dead_.reset();
    lostNow_.store(0, std::memory_order_relaxed);
  } else {
    // The lanes of the smaller set (numbered anew, lane.h) open at once, each with a FAILOVER
    // under the new generation; nothing is resent (every watermark is at or past T), and the
    // redials of the reducers still lost go on.
    dead_ = *cluster::DeadSet::of(reducers_, still);
    lostNow_.store(dead_->size(), std::memory_order_relaxed);
    finishAdoptionLocked();
  }
  // LOSTs of this generation that came before the switch; newer ones wait for theirs.
  std::vector<KeptLost> later;
  for (KeptLost& kept : laterLost_) {
    if (kept.generation > generation_) {
      later.push_back(std::move(kept));
      continue;
    }
    if (kept.generation < generation_) continue;
    asio::post(*ios_.front(), [weak = weak_from_this(), this, dead = std::move(kept.dead)] {
      if (auto self = weak.lock())
        adopt(dead, unavailableError("a reducer says these reducers are lost (LOST, kept for "
                                     "this member's rejoin)"));
    });
  }
  laterLost_ = std::move(later);
}

}  // namespace rs::client
