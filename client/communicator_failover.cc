// A communicator's failover (proto/FAILOVER.md, "How the members agree on the dead set"): a
// lost reducer's streams, and every lane of the smaller dead set, are retired; once they have
// drained, what they held (each chunk with its final prefix) and what the retention store keeps
// of the lost reducers' chunks is resent from each line's commit watermark on, on lanes to the
// survivors that own them, after a FAILOVER on each lane; later chunks of a lost home go to
// their lanes too. Every reducer lost fails the communicator, as any loss did before.
#include <asio/post.hpp>

#include <cstring>
#include <map>
#include <set>

#include "client/communicator_core.h"
#include "core/cluster/chunk_owner.h"
#include "core/cluster/dead_view.h"
#include "core/cluster/lane.h"
#include "core/common/log.h"
#include "core/wire/control_frames.h"

namespace rs::client {

void CommunicatorCore::onReducerLost(Connection& connection, const Status& reason) {
  if (onReducerLostForTest_) onReducerLostForTest_();
  adopt({connection.reducerIndex()}, reason);
}

void CommunicatorCore::takeForLostForTest(uint32_t reducer) {
  std::shared_ptr<Connection> c;
  {
    std::lock_guard lock(submitMu_);
    c = connections_.at(reducer * streams_);
  }
  asio::post(c->executorContext(), [c] {
    c->takeForLostForTest(unavailableError(c->name() + ": taken for lost by a test"));
  });
}

void CommunicatorCore::onLost(Connection& connection, const std::vector<uint32_t>& dead,
                              uint64_t generation) {
  std::string names;
  for (uint32_t d : dead) names += (names.empty() ? "" : ",") + std::to_string(d);
  {
    // Generations (cluster::DeadView; proto/FAILOVER.md, "A reducer comes back"): a LOST from
    // before this member's last rejoin is stale; one from after a rejoin it has not switched
    // to yet waits for that switch.
    std::lock_guard lock(submitMu_);
    switch (cluster::age(generation_, generation)) {
      case cluster::Age::kOlder:
        rs::logger().info("group {} rank {}: {} says reducers {} are lost under generation {}, "
                          "before this member's rejoin (generation {}): stale, ignored",
                          group_.id.toString().substr(0, 8), group_.rank, connection.name(),
                          names, generation, generation_);
        return;
      case cluster::Age::kNewer:
        laterLost_.push_back({generation, dead});
        return;
      case cluster::Age::kSame:
        break;
    }
  }
  adopt(dead, unavailableError(fmt::format("{} says reducers {} are lost (LOST)",
                                           connection.name(), names)));
}

void CommunicatorCore::adopt(const std::vector<uint32_t>& lost, const Status& why) {
  std::vector<std::shared_ptr<Connection>> retire;
  std::vector<std::shared_ptr<Connection>> moveAway;  // the streams of the newly lost
  std::optional<cluster::DeadSet> adopted;
  uint64_t generation = 0;
  Status cannot;
  {
    std::lock_guard lock(submitMu_);
    if (failedFlag_.load(std::memory_order_acquire)) return;
    Result<cluster::DeadSet> next =
        dead_ ? Result<cluster::DeadSet>(*dead_) : cluster::DeadSet::none(reducers_);
    if (next) {
      for (uint32_t d : lost)
        if (Status s = next->add(d); !s.isOk()) next = s;
    }
    if (!next) {
      cannot = Status(why.code(), fmt::format("{} (and the group cannot go on without it: {})",
                                              why.message(), next.status().message()));
    } else if (dead_ && *next == *dead_) {
      return;  // known already
    } else if (next->allDead()) {
      // UNAVAILABLE however the last one's loss showed (its streams' end, a reset, silence):
      // the error is that none is left, not the last connection's.
      cannot = unavailableError(fmt::format("{}; every reducer of the group's list is lost "
                                            "(reducers {} of {})",
                                            why.message(), next->toString(), reducers_));
    } else if (Status fit = cluster::lanesFit(*next, streams_); !fit.isOk()) {
      cannot = Status(why.code(), fmt::format("{}; {}", why.message(), fit.message()));
    } else {
      for (uint32_t d = 0; d < reducers_; ++d) {
        if (!next->contains(d) || (dead_ && dead_->contains(d))) continue;
        for (uint32_t s = 0; s < streams_; ++s)
          moveAway.push_back(connections_[d * streams_ + s]);
        rejoin_[d].backoff = std::chrono::milliseconds(0);  // lost anew: its first redial
      }
      for (auto& [index, lane] : lanes_) retire.push_back(std::move(lane));
      lanes_.clear();
      dead_ = *next;
      adopted = *next;
      generation = generation_;
      lostNow_.store(dead_->size(), std::memory_order_relaxed);
      adopting_ = true;
      retiring_ += retire.size() + moveAway.size();
      // Every rejoin in progress ends: its lanes are retired (after JOIN_AT this is "the race
      // left" of proto/FAILOVER.md, "A reducer comes back"). The next redials are scheduled
      // once the adoption is done.
      for (uint32_t r = 0; r < reducers_; ++r)
        if (rejoin_[r].phase != Rejoin::Phase::kIdle)
          endRedialLocked(r, unavailableError("another reducer was lost meanwhile"),
                          reachedLocked(r));
      rs::logger().warn("group {} rank {}: {}; reducers {} of {} lost: their chunks go to the "
                        "survivors (proto/FAILOVER.md)",
                        group_.id.toString().substr(0, 8), group_.rank, why.message(),
                        dead_->toString(), reducers_);
    }
  }
  if (!cannot.isOk()) return fail(cannot);
  for (auto& c : retire) asio::post(c->executorContext(), [c] { c->retire(); });
  // Each tells its reducer that this member moves away from it: one that lives after all (a
  // stall past the bound, a path cut one way) then drops the group, rather than fail it for
  // the members that still read it (proto/FAILOVER.md, "A live reducer taken for lost").
  for (auto& c : moveAway)
    asio::post(c->executorContext(),
               [c, dead = *adopted, generation] { c->moveAway(dead, generation); });
}

std::shared_ptr<Connection> CommunicatorCore::routeLocked(const ChunkTransfer& t) {
  const uint64_t chunk = t.header.chunk;
  if (!dead_ || !dead_->contains(cluster::reducerForChunk(chunk, reducers_)))
    return connections_[laneOf(chunk)];
  if (adopting_) return nullptr;
  Result<cluster::ChunkRoute> route = cluster::chunkRoute(chunk, *dead_, streams_);
  if (!route || !route->lane) return nullptr;  // cannot be: dead_ has a live reducer
  ledger_.sentOnLane(t.header);
  const cluster::Lane& lane = *route->lane;
  auto it = lanes_.find(laneKey(route->reducer, lane));
  return it == lanes_.end() ? nullptr : it->second;
}

void CommunicatorCore::onLateChunks(Connection&, std::vector<ChunkTransfer> chunks) {
  std::vector<Batch> work;
  {
    std::lock_guard lock(submitMu_);
    if (failedFlag_.load(std::memory_order_acquire)) return failRequestsOf(chunks);
    // Posted to a connection retired meanwhile: they go where chunks of theirs go now.
    for (ChunkTransfer& c : chunks) {
      std::shared_ptr<Connection> to = routeLocked(c);
      if (!to) {
        deferred_.push_back(std::move(c));
        continue;
      }
      work.emplace_back(std::move(to), std::vector<ChunkTransfer>{});
      work.back().second.push_back(std::move(c));
    }
    post(std::move(work));
  }
}

namespace {

// What a chunk a retired connection held is resent as: a whole entry as it was, else its final
// prefix (FINAL, when there is one) and the rest of its contribution.
ChunkTransfer entryOf(ChunkTransfer held) {
  if (held.awaitsResult()) {
    held.finalPrefix = static_cast<uint32_t>(held.knownPrefix());
    held.entry = held.finalPrefix > 0 ? ChunkTransfer::Entry::kFinal
                                      : ChunkTransfer::Entry::kReduce;
  }
  held.resultElems = 0;  // the survivor sends the whole chunk
  held.payloadAt = ChunkTransfer::kNotQueued;
  return held;
}

}  // namespace

void CommunicatorCore::finishAdoptionLocked() {
  if (failedFlag_.load(std::memory_order_acquire)) return;
  const cluster::DeadSet dead = *dead_;
  const uint32_t R = reducers_, K = streams_;
  // The lanes of the dead set, from each member to each survivor, one per (lost reducer,
  // stream), each opening with that line's watermark. adopt() checked that their indices fit
  // a HELLO (lanesFit).
  lanes_.clear();
  std::vector<std::shared_ptr<Connection>> opened;
  for (uint32_t j = 0; j < R; ++j) {
    if (dead.contains(j)) continue;
    for (uint32_t d = 0; d < R; ++d) {
      if (!dead.contains(d)) continue;
      for (uint32_t s = 0; s < K; ++s) {
        const cluster::Lane lane{d, s};
        const uint32_t index = *cluster::laneIndex(lane, dead, K);
        const size_t stream = static_cast<size_t>(j) * K + s;  // the io thread of j's stream s
        auto c = std::make_shared<Connection>(
            *this, options_, group_, *ios_[ioIndexOf(stream)], *ackTimers_[ioIndexOf(stream)], j,
            index, options_.reducers[j], reducerLinks_[j],
            LaneSpec{lane, dead, ledger_.watermark(d, s), generation_});
        lanes_.emplace(laneKey(j, lane), c);
        opened.push_back(std::move(c));
      }
    }
  }
  // What to resend, chunk by chunk from each line's watermark: what the retired connections
  // held (in flight: its final prefix and the rest of its contribution), else what the
  // retention store keeps (whole), else, seen committed, the COMMITTED marker.
  std::map<uint64_t, ChunkTransfer> resend;
  for (ChunkTransfer& held : handedOver_) {
    const uint64_t c = held.header.chunk;
    const uint32_t d = cluster::reducerForChunk(c, R), s = cluster::streamForChunk(c, R, K);
    if (c >= ledger_.watermark(d, s)) resend.emplace(c, entryOf(std::move(held)));
  }
  for (uint32_t d = 0; d < R; ++d) {
    if (!dead.contains(d)) continue;
    for (uint32_t s = 0; s < K; ++s) {
      for (RetentionStore::Kept& kept : retention_.uncommittedFrom(d * K + s,
                                                                   ledger_.watermark(d, s))) {
        ChunkTransfer t;
        t.header = kept.header;
        t.src = t.dst = kept.data.get();
        t.keep = std::move(kept.data);
        t.compressed = kept.compressed;
        t.entry = ChunkTransfer::Entry::kFinal;
        t.finalPrefix = t.header.elemCount;
        resend.emplace(t.header.chunk, std::move(t));
      }
      for (const wire::FrameHeader& h : ledger_.committedAbove(d, s)) {
        ChunkTransfer t;
        t.header = h;
        t.entry = ChunkTransfer::Entry::kCommitted;
        resend.emplace(h.chunk, std::move(t));
      }
    }
  }
  // The collectives still in flight: their lost homes' chunks whose results are in (neither
  // held by a retired connection, which drained only once it had taken every batch posted to
  // it, nor waiting to be sent) go whole, copied from the caller's
  // buffer, which nothing writes now and which the caller gets back only once the collective
  // is kept, under the lock held here.
  std::set<uint64_t> waiting;
  for (const ChunkTransfer& t : deferred_) waiting.insert(t.header.chunk);
  for (const std::weak_ptr<RequestState>& weak : inFlight_) {
    const std::shared_ptr<RequestState> request = weak.lock();
    if (!request || request->kept()) continue;
    const RequestState::Results& r = request->results();
    for (uint64_t i = 0; i < request->chunks(); ++i) {
      const uint64_t c = r.firstChunk + i;
      const uint32_t d = cluster::reducerForChunk(c, R), s = cluster::streamForChunk(c, R, K);
      if (!dead.contains(d) || c < ledger_.watermark(d, s) || resend.contains(c) ||
          waiting.contains(c))
        continue;
      const uint64_t elems = std::min(r.chunkElems, r.count - i * r.chunkElems);
      const size_t bytes = static_cast<size_t>(elems * r.elemSize);
      std::shared_ptr<std::byte[]> copy(new std::byte[bytes]);
      std::memcpy(copy.get(), r.recv + i * r.chunkElems * r.elemSize, bytes);
      ChunkTransfer t;
      t.header = chunkHeader(*request, i);
      t.src = t.dst = copy.get();
      t.keep = std::move(copy);
      t.compressed = r.compressed;
      t.entry = ChunkTransfer::Entry::kFinal;
      t.finalPrefix = t.header.elemCount;
      resend.emplace(c, std::move(t));
    }
  }
  handedOver_.clear();
  adopting_ = false;
  std::map<Connection*, size_t> slot;
  std::vector<Batch> work;
  auto add = [&](ChunkTransfer t) {
    std::shared_ptr<Connection> to = routeLocked(t);
    if (!to) return;  // cannot be: the dead set has a live reducer, and adopting_ is over
    auto [it, fresh] = slot.emplace(to.get(), work.size());
    if (fresh) work.emplace_back(std::move(to), std::vector<ChunkTransfer>{});
    work[it->second].second.push_back(std::move(t));
  };
  for (auto& [chunk, t] : resend) add(std::move(t));
  for (ChunkTransfer& t : deferred_) add(std::move(t));  // later than any resent
  deferred_.clear();
  {
    std::lock_guard lock(mu_);
    live_ += opened.size();
  }
  // Each lane dials, then takes its chunks: they wait for its handshake and go out after its
  // FAILOVER.
  for (auto& c : opened) asio::post(c->executorContext(), [c] { c->start(); });
  post(std::move(work));
  // Redial every lost reducer, with back-off, to take it back (communicator_rejoin.cc).
  scheduleRedialLocked();
}

}  // namespace rs::client
