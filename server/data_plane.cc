#include "server/data_plane.h"

#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>

#include "core/common/log.h"
#include "server/acceptor.h"

namespace rs::server {

DataPlane::DataPlane(const ServerConfig& config, GroupRegistry& registry)
    : config_(config), registry_(registry) {}

DataPlane::~DataPlane() { stop(); }

Status DataPlane::start(asio::io_context& control) {
  acceptor_ = std::make_unique<Acceptor>(
      control, config_, registry_,
      [this](std::unique_ptr<transport::Stream> stream, std::shared_ptr<Group> group,
             uint32_t rank, uint16_t streamIndex, uint32_t lossDetectMs, bool askedFabric) {
        handOff(std::move(stream), std::move(group), rank, streamIndex, lossDetectMs,
                askedFabric);
      });
  RS_RETURN_IF_ERROR(acceptor_->listen(config_.dataListen));
  for (int i = 0; i < config_.ioThreads; ++i) {
    auto t = std::make_unique<IoThread>();
    t->shard = std::make_unique<Shard>(
        t->io, config_, static_cast<uint32_t>(i), registry_,
        [this](const std::shared_ptr<Group>& group, const Status& reason, bool movedAway) {
          abortGroup(group, reason, movedAway);
        },
        [this](const std::shared_ptr<Group>& group, const cluster::DeadView& dead) {
          loseReducers(group, dead);
        },
        [this](const std::shared_ptr<Group>& group) { offerRejoin(group); },
        [this](const std::shared_ptr<Group>& group, uint32_t rank) { reportLeft(group, rank); });
    threads_.push_back(std::move(t));
  }
  for (auto& t : threads_) {
    t->thread = std::thread([io = &t->io] {
      // Runs until stop() closed every stream and no handler is left.
      auto guard = asio::make_work_guard(*io);
      io->run();
    });
  }
  running_ = true;
  acceptor_->start();
  return Status::ok();
}

void DataPlane::stop() {
  if (!running_) return;
  running_ = false;
  stopping_.store(true, std::memory_order_release);
  if (acceptor_) acceptor_->stop();
  for (auto& t : threads_) {
    asio::post(t->io, [shard = t->shard.get(), io = &t->io] {
      shard->closeAll(unavailableError("the reducer is shutting down"));
      // Let the handlers of the closed streams drain, then return from run().
      asio::post(*io, [io] { io->stop(); });
    });
  }
  for (auto& t : threads_)
    if (t->thread.joinable()) t->thread.join();
  // The shards stay: their counters still answer stats().
}

uint16_t DataPlane::port() const { return acceptor_ ? acceptor_->port() : 0; }

void DataPlane::handOff(std::unique_ptr<transport::Stream> stream,
                        std::shared_ptr<Group> group, uint32_t rank, uint16_t streamIndex,
                        uint32_t lossDetectMs, bool askedFabric) {
  IoThread& t = *threads_[group->threadFor(streamIndex, static_cast<uint32_t>(threads_.size()))];
  auto moved = stream->moveTo(t.io);
  if (!moved) {
    rs::logger().error("{} rank {} stream {}: {}", group->name(), rank, streamIndex,
                       moved.status().message());
    registry_.streamClosed(*group, rank, streamIndex);
    abortGroup(group, moved.status());
    return;
  }
  asio::post(t.io, [shard = t.shard.get(), s = std::move(*moved), group = std::move(group), rank,
                    streamIndex, lossDetectMs, askedFabric]() mutable {
    shard->attach(std::move(s), std::move(group), rank, streamIndex, lossDetectMs, askedFabric);
  });
}

void DataPlane::abortGroup(const std::shared_ptr<Group>& group, const Status& reason,
                           bool movedAway) {
  if (stopping_.load(std::memory_order_acquire)) return;
  if (!group->markAborted(reason, movedAway)) return;
  if (movedAway) {
    // Counted once the group is marked, not where a FAILOVER is read: each of the member's
    // streams here brings one, on any shard, and only the first drops the group.
    groupsMovedAway_.fetch_add(1, std::memory_order_relaxed);
    rs::logger().warn("{} dropped here: {}: the group goes on on the survivors; its members "
                      "still on this reducer take the end of its streams for this reducer's "
                      "loss (proto/FAILOVER.md, \"A live reducer taken for lost\")",
                      group->name(), reason.message());
    for (auto& t : threads_)
      asio::post(t->io, [shard = t->shard.get(), id = group->id(), reason] {
        shard->abortGroup(id, reason);
      });
    return;
  }
  // A joining group that fails is a rejoin cancelled (proto/FAILOVER.md, "A reducer comes back").
  if (group->joining()) rejoinsCancelled_.fetch_add(1, std::memory_order_relaxed);
  groupAborts_[static_cast<size_t>(abortReasonFor(reason.code()))].fetch_add(
      1, std::memory_order_relaxed);
  rs::logger().error("{} aborted: {}", group->name(), reason.toString());
  for (auto& t : threads_)
    asio::post(t->io, [shard = t->shard.get(), id = group->id(), reason] {
      shard->abortGroup(id, reason);
    });
}

void DataPlane::loseReducers(const std::shared_ptr<Group>& group, const cluster::DeadView& dead) {
  for (auto& t : threads_)
    asio::post(t->io, [shard = t->shard.get(), id = group->id(), dead] {
      shard->groupLost(id, dead);
    });
}

void DataPlane::reportLeft(const std::shared_ptr<Group>& group, uint32_t rank) {
  for (auto& t : threads_)
    asio::post(t->io, [shard = t->shard.get(), id = group->id(), rank] {
      shard->memberLeftReducer(id, rank);
    });
}

void DataPlane::offerRejoin(const std::shared_ptr<Group>& group) {
  // Every member's stream 0 is served by one thread: the rejoin's JOINs all come there.
  IoThread& t = *threads_[group->threadFor(0, static_cast<uint32_t>(threads_.size()))];
  asio::post(t.io, [shard = t.shard.get(), id = group->id()] { shard->offerRejoin(id); });
}

DataPlaneStats DataPlane::stats() const {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  DataPlaneStats s;
  for (const auto& t : threads_) {
    const ShardStats& st = t->shard->stats();
    s.bytesIn += st.bytesIn.load(kRelaxed);
    s.bytesOut += st.bytesOut.load(kRelaxed);
    for (int d = 0; d < kNumDataTypes; ++d) {
      for (int o = 0; o < kNumReduceOps; ++o) {
        const uint64_t chunks = st.chunksReduced[d][o].load(kRelaxed);
        s.chunksReduced[d][o] += chunks;
        s.reductions += chunks;
        s.collectivesReduced[d][o] += st.collectivesReduced[d][o].load(kRelaxed);
      }
    }
    for (size_t r = 0; r < kNumFrameRejections; ++r) {
      const uint64_t n = st.framesRejected[r].load(kRelaxed);
      s.framesRejected[r] += n;
      s.protocolErrors += n;
    }
    s.streamsJoined += st.streamsJoined.load(kRelaxed);
    s.fabricStreams += st.fabricStreams.load(kRelaxed);
    s.fabricBytesZeroCopy += t->shard->fabricBytesZeroCopy();
    s.fabricBytesCopied += t->shard->fabricBytesCopied();
    s.connectionsOpen += st.connectionsOpen.load(kRelaxed);
    s.slotsOpen += st.slotsOpen.load(kRelaxed);
    s.slotBytesInUse += st.slotBytesInUse.load(kRelaxed);
    s.parkedSessions += st.parkedSessions.load(kRelaxed);
    s.parks += st.parks.load(kRelaxed);
    s.heartbeatsSent += st.heartbeatsSent.load(kRelaxed);
    s.heartbeatsReceived += st.heartbeatsReceived.load(kRelaxed);
    for (size_t r = 0; r < kNumMemberLosses; ++r) s.membersLost[r] += st.membersLost[r].load(kRelaxed);
    s.failovers += st.failovers.load(kRelaxed);
    s.chunksResent += st.chunksResent.load(kRelaxed);
    s.rejoins += st.rejoins.load(kRelaxed);
    s.slotBytesLimit += t->shard->poolLimit();
    s.bookkeepingBytes += st.slotStateBytes.load(kRelaxed);
    st.reduceLatency.mergeInto(s.reduceLatency);
  }
  s.bookkeepingBytes += registry_.memory()->bookkeeping();
  for (size_t r = 0; r < kNumAbortReasons; ++r) s.groupAborts[r] = groupAborts_[r].load(kRelaxed);
  s.rejoinsCancelled = rejoinsCancelled_.load(kRelaxed);
  s.groupsMovedAway = groupsMovedAway_.load(kRelaxed);
  if (acceptor_) {
    s.connectionsAccepted = acceptor_->accepted();
    s.acceptErrors = acceptor_->acceptErrors();
    s.handshakesPending = acceptor_->pendingHandshakes();
    s.handshakeEvictions = acceptor_->handshakeEvictions();
    for (size_t r = 0; r < kNumHandshakeFailures; ++r) {
      s.handshakeFailuresBy[r] = acceptor_->handshakeFailures(static_cast<HandshakeFailure>(r));
      s.handshakeFailures += s.handshakeFailuresBy[r];
    }
  }
  return s;
}

}  // namespace rs::server
