#include "server/shard.h"

#include <algorithm>
#include <asio/post.hpp>

#include "core/cluster/sharding.h"
#include "core/common/log.h"
#include "core/transport/link_share.h"
#include "server/cut_through.h"
#include "server/session.h"

namespace rs::server {
namespace {
constexpr auto kTimeoutScanPeriod = std::chrono::milliseconds(200);
// A RESULT part goes out once the ready prefix grew by this much (or a piece, if smaller; see
// Slot::releaseReady): a bounded frame count per chunk, a download trailing the upload by little.
constexpr uint64_t kMinResultPartBytes = 32 << 10;
// How long a COMMIT waits for a result to the same member to carry it (a stream's next chunk,
// often of a later collective) before it goes alone: long enough to catch the next small
// collective on a stream that the chunks rotate over (as the members' RECEIVEDs,
// client/ack_timer.h), short beside a collective timeout. Only a member waiting for room to keep
// its results (client/retention_store.h) waits on it.
constexpr auto kCommitDelay = std::chrono::milliseconds(20);

// The session an Admission::Request waits for (the shard's requests carry their session).
std::shared_ptr<Session> sessionOf(const Admission::Request& request) {
  return std::static_pointer_cast<Session>(request.waiter.lock());
}
}  // namespace

Shard::Shard(asio::io_context& io, const ServerConfig& config, uint32_t index,
             GroupRegistry& registry, AbortGroup abortGroup, LoseReducers loseReducers,
             OfferRejoin offerRejoin, ReportLeft reportLeft)
    : io_(io),
      config_(config),
      index_(index),
      registry_(registry),
      abortGroup_(std::move(abortGroup)),
      loseReducers_(std::move(loseReducers)),
      offerRejoin_(std::move(offerRejoin)),
      reportLeft_(std::move(reportLeft)),
      pool_(std::make_shared<SlotPool>(registry.memory())),
      admission_(*this, *pool_, {config.maxSlotsPerGroup, config.maxChunkBytes}, stats_),
      timeoutTimer_(io),
      lateCommits_(io, kCommitDelay, &Session::sendCommitNow) {
  pool_->setOnFreed([this] {
    stats_.slotBytesInUse.store(pool_->inUse(), std::memory_order_relaxed);
    stats_.slotStateBytes.store(pool_->stateInUse(), std::memory_order_relaxed);
    scheduleWaiterService();
  });
  fabric_ = ReducerFabric::open(io, config, index, &noFabric_);
  if (fabric_) {
    // Results go to the members straight from the slots' buffers (zero-copy).
    auto slotBuffers = std::make_shared<transport::UserMemory>();
    pool_->listBuffersIn(slotBuffers);
    fabric_->sendFrom(slotBuffers);
  }
  scheduleTimeoutCheck();
}

Shard::~Shard() { pool_->setOnFreed(nullptr); }

Result<FabricOffer> Shard::offerFabric(const Session& session) {
  if (!fabric_) return unavailableError(noFabric_);
  if (registry_.draining() || shuttingDown_)
    return unavailableError("this reducer is draining: no new fabric channels");
  auto offer = fabric_->offer(session.name(), registry_.memory());
  if (offer) stats_.fabricStreams.fetch_add(1, std::memory_order_relaxed);
  return offer;
}

Status Shard::acceptFabric(transport::PayloadChannel& channel, const wire::FabricGrant& member) {
  return fabric_ ? fabric_->accept(channel, member)
                 : unavailableError("no fabric on this reducer");
}

Shard::GroupShard* Shard::findGroup(const GroupId& id) {
  auto it = groups_.find(id);
  return it == groups_.end() ? nullptr : &it->second;
}

void Shard::attach(std::unique_ptr<transport::Stream> stream, std::shared_ptr<Group> group,
                   uint32_t rank, uint16_t streamIndex, uint32_t lossDetectMs,
                   bool askedFabric) {
  stats_.streamsJoined.fetch_add(1, std::memory_order_relaxed);
  stats_.connectionsOpen.fetch_add(1, std::memory_order_relaxed);
  auto session = std::make_shared<Session>(*this, io_, config_, stats_, std::move(stream), group, rank,
                                           streamIndex, std::chrono::milliseconds(lossDetectMs));
  GroupShard& gs = groups_[group->id()];
  gs.group = group;
  group->noteLossBound(lossDetectMs);
  if (session->isLane()) {
    gs.pendingLanes.push_back(session);  // until its FAILOVER (laneFailover)
  } else {
    auto& slots = gs.members[streamIndex];
    slots.resize(group->params().worldSize);
    slots[rank] = session;
    gs.departed[streamIndex].resize(group->params().worldSize, false);
    gs.commits.try_emplace(streamIndex, group->params().worldSize);
  }
  if (shuttingDown_) {
    session->abort(unavailableError("the reducer is shutting down"));
    return;
  }
  if (group->aborted()) {
    // The abort was broadcast before this stream arrived here.
    session->abort(group->abortReason());
    return;
  }
  // A joining group's last stream (proto/FAILOVER.md, "A reducer comes back"): the offer goes
  // from the thread of stream 0, once this stream's HELLO_ACK is queued below.
  const bool offer = group->joining() && !session->isLane() && group->streamArrived();
  wire::HelloAckPayload ack;
  ack.maxPayloadBytes = config_.maxChunkBytes;
  ack.ioThreads = static_cast<uint32_t>(config_.ioThreads);
  ack.serverVersion = (0u << 16) | (1u << 8) | 0u;
  ack.lossDetectMs = lossDetectMs;
  rs::logger().debug("{}: joined", session->name());
  session->start(ack, askedFabric);
  if (offer) offerRejoin_(group);
}

void Shard::offerRejoin(const GroupId& id) {
  GroupShard* gs = findGroup(id);
  if (gs == nullptr || gs->group->aborted() || !gs->group->joining() || gs->rejoin) return;
  const uint32_t world = gs->group->params().worldSize;
  gs->rejoin.emplace(world);
  auto members = gs->members.find(0);
  for (uint32_t rank = 0; rank < world; ++rank) {
    if (members == gs->members.end() || !members->second[rank] ||
        members->second[rank]->closing()) {
      failGroup(gs->group,
                unavailableError(fmt::format("rejoin cancelled: rank {} stream 0 closed before "
                                             "JOIN_OFFER",
                                             rank)));
      return;
    }
  }
  rs::logger().info("{}: every member's {} streams are in: JOIN_OFFER (rejoin)",
                    gs->group->name(), gs->group->params().streamCount);
  for (const auto& session : members->second) session->sendJoinOffer();
}

Status Shard::joinAnswered(Session& session, uint64_t nextChunk) {
  GroupShard* gs = findGroup(session.group()->id());
  if (gs == nullptr || !gs->rejoin)
    return protocolError(fmt::format("{}: JOIN before JOIN_OFFER", session.name()));
  RS_RETURN_IF_ERROR(gs->rejoin->add(session.rank(), nextChunk));
  if (!gs->rejoin->complete()) return Status::ok();
  const uint64_t at = gs->rejoin->at();
  const std::shared_ptr<Group>& group = gs->group;
  group->joined(at);
  stats_.rejoins.fetch_add(1, std::memory_order_relaxed);
  const GroupParams& p = group->params();
  rs::logger().warn("{}: rejoined: members 0..{} take this reducer (index {} of {}) back from "
                    "chunk {} ({} streams each; proto/FAILOVER.md, 'A reducer comes back')",
                    group->name(), p.worldSize - 1, p.reducerIndex, p.reducerCount, at,
                    p.streamCount);
  for (const auto& member : gs->members[0])
    if (member) member->sendJoinAt(at);
  return Status::ok();
}

Status Shard::admit(const Slot& slot, const wire::FrameHeader& h, uint32_t rank) {
  FrameRejection why{};
  Status s = slot.admit(h, rank, &why);
  if (!s.isOk()) stats_.countRejection(why);
  return s;
}

size_t Shard::slotBufferBytes(const GroupShard& gs, const wire::FrameHeader& h, bool lane) {
  const GroupParams& p = gs.group->params();
  // A resent chunk stages every member's entry, as deterministic mode does (slot.h).
  return Slot::bufferBytes(h.elemCount, h.dtype, p.worldSize, p.deterministic || lane,
                           p.fp32Accumulator);
}

std::shared_ptr<Slot> Shard::openSlot(GroupShard& gs, const wire::FrameHeader& h,
                                      AlignedBuffer buffer, std::optional<uint16_t> lane) {
  const GroupParams& p = gs.group->params();
  Slot::Setup setup;
  setup.worldSize = p.worldSize;
  setup.stream = lane ? *lane
                      : static_cast<uint16_t>(
                            cluster::streamForChunk(h.chunk, p.reducerCount, p.streamCount));
  setup.lane = lane.has_value();
  setup.timeout = std::chrono::milliseconds(gs.group->timeoutMs());
  setup.maxLeadBytes = config_.maxLeadBytes;
  const uint64_t chunkBytes = static_cast<uint64_t>(h.elemCount) * dataTypeSize(h.dtype);
  const uint64_t streamRate = streamShare(
      transport::LinkShare::bytesPerSecondFromGbps(config_.linkGbps), p.worldSize, p.streamCount);
  setup.minPartBytes = cutThroughStep(
      chunkBytes, std::min<uint64_t>(kMinResultPartBytes, config_.pieceBytes), streamRate);
  setup.readWakeBytes = config_.readWakeBytes == 0
                            ? 0
                            : cutThroughStep(chunkBytes, config_.readWakeBytes, streamRate);
  setup.stateBytes = Slot::stateBytes(p.worldSize);
  setup.deterministic = p.deterministic;
  setup.fp32Accumulator = p.fp32Accumulator;
  auto slot = std::make_shared<Slot>(pool_, std::move(buffer), h, setup);
  gs.open.emplace(h.chunk, slot);
  gs.group->counters().openSlots.fetch_add(1, std::memory_order_relaxed);
  stats_.slotsOpen.fetch_add(1, std::memory_order_relaxed);
  stats_.slotBytesInUse.store(pool_->inUse(), std::memory_order_relaxed);
  stats_.slotStateBytes.store(pool_->stateInUse(), std::memory_order_relaxed);
  return slot;
}

Shard::Acquire Shard::acquireSlot(const std::shared_ptr<Session>& session,
                                  const wire::FrameHeader& h, std::shared_ptr<Slot>* out,
                                  Status* error) {
  GroupShard* gs = findGroup(h.group);
  if (gs == nullptr) {  // aborted and forgotten while the header was in flight
    *error = abortedError("the group is gone");
    return Acquire::kFailed;
  }
  if (!session->isLane()) awaitBehind(*gs, *session, h);
  const size_t bytes = slotBufferBytes(*gs, h, session->isLane());
  const uint64_t state = Slot::stateBytes(gs->group->params().worldSize);
  Admission::Grant grant = admission_.request({session, h, bytes, state});
  switch (grant.verdict) {
    case Admission::Verdict::kJoin:
      *out = joinOpen(h, session->rank(), error);
      return *out ? Acquire::kReady : Acquire::kFailed;
    case Admission::Verdict::kOpened:
      *out = std::move(grant.slot);
      return Acquire::kReady;
    case Admission::Verdict::kParked:
      rs::logger().debug("{}: parked for chunk {} ({} waiting, {} of {} bytes in use)",
                         session->name(), h.chunk, admission_.parked(), pool_->inUse(),
                         pool_->budget());
      return Acquire::kParked;
    case Admission::Verdict::kRefused:
      *error = std::move(grant.refusal);
      break;
    case Admission::Verdict::kTooLarge: {
      // validate() makes an accumulator alone always fit; its per-rank state for a very large
      // world, with the bookkeeping of many groups charged, or the staging copies of a
      // deterministic group's chunk or of any failover lane's chunk, may not.
      const char* staged = session->isLane()
                               ? " (a failover lane's chunk: a staging copy per member, to "
                                 "resolve it from every member's entry)"
                           : gs->group->params().deterministic
                               ? " (deterministic: a staging copy per member)"
                               : "";
      *error = resourceExhausted(fmt::format(
          "chunk {} needs {} bytes{} and {} of per-rank state (world_size {}), more than this "
          "thread's whole pool ({}: its part of --memory-limit less the bookkeeping charged)",
          h.chunk, bytes, staged, state, gs->group->params().worldSize, pool_->budget()));
      break;
    }
  }
  failGroup(gs->group, *error);
  return Acquire::kFailed;
}

void Shard::awaitBehind(GroupShard& gs, Session& from, const wire::FrameHeader& h) {
  const uint16_t stream = from.streamIndex();
  GroupShard::Begun& furthest = gs.furthestBegun[stream];
  const bool sameCollective = furthest.seq == h.seq;
  if (sameCollective && furthest.chunk > h.chunk) {
    // The others are already past this chunk: `from` owes theirs next (it may have been done
    // with everything it owed when they began it, and so went unmarked then).
    from.othersBegan(furthest.seq, furthest.chunk);
    return;
  }
  if (sameCollective && furthest.chunk == h.chunk) return;  // the others were marked for it
  furthest = {h.seq, h.chunk};
  const auto it = gs.members.find(stream);
  if (it == gs.members.end()) return;
  for (const auto& member : it->second)
    if (member && member.get() != &from) member->othersBegan(h.seq, h.chunk);
}

std::shared_ptr<Slot> Shard::joinOpen(const wire::FrameHeader& h, uint32_t rank, Status* error) {
  GroupShard& gs = *findGroup(h.group);  // the slot is open (Admission asked isOpen)
  const std::shared_ptr<Slot>& slot = gs.open.at(h.chunk);
  Status s = admit(*slot, h, rank);
  if (s.isOk()) return slot;
  *error = s;
  failGroup(gs.group, s);
  return nullptr;
}

bool Shard::isOpen(const wire::FrameHeader& h) {
  GroupShard* gs = findGroup(h.group);
  return gs != nullptr && gs->open.contains(h.chunk);
}

Status Shard::refuseNew(const Admission::Request& request) {
  // A new chunk: every member of its stream must still be here to contribute.
  const auto session = sessionOf(request);
  if (session->isLane()) return Status::ok();  // a lane's members come and go with dead sets
  GroupShard& gs = *findGroup(request.header.group);
  const auto& departed = gs.departed[session->streamIndex()];
  for (size_t r = 0; r < departed.size(); ++r) {
    if (departed[r])
      return abortedError(fmt::format("rank {} sent chunk {} (seq {}), but rank {} has already "
                                      "closed stream {}",
                                      session->rank(), request.header.chunk, request.header.seq, r,
                                      session->streamIndex()));
  }
  return Status::ok();
}

bool Shard::waiting(const Admission::Request& request) {
  // A session that is closing waits for nothing: a retired lane's (retireLane) stays open for
  // its LOST to go out, and a slot opened for it would never be filled.
  const auto session = sessionOf(request);
  return session && !session->closing();
}

std::shared_ptr<Slot> Shard::open(const Admission::Request& request, AlignedBuffer buffer) {
  const auto session = sessionOf(request);  // waiting() said it waits
  GroupShard& gs = *findGroup(request.header.group);
  if (!session->isLane()) return openSlot(gs, request.header, std::move(buffer), std::nullopt);
  std::shared_ptr<Slot> slot =
      openSlot(gs, request.header, std::move(buffer), session->streamIndex());
  failIfLaneMemberLeft(gs, session->streamIndex());
  return slot;
}

bool Shard::resume(const Admission::Request& request, std::shared_ptr<Slot> opened) {
  auto session = sessionOf(request);  // waiting() said it waits, and nothing ran since
  std::shared_ptr<Slot> slot = std::move(opened);
  if (!slot) {
    // Another member opened its chunk's slot meanwhile: no memory needed.
    Status error;
    slot = joinOpen(request.header, session->rank(), &error);
    if (!slot) return false;
  }
  asio::post(io_, [session = std::move(session), slot = std::move(slot)] {
    session->onSlotReady(slot);
  });
  return true;
}

void Shard::scheduleWaiterService() {
  if (waiterServicePosted_ || admission_.parked() == 0) return;
  waiterServicePosted_ = true;
  // Posted, not called: a slot may be freed deep inside a session's handler.
  asio::post(io_, [this] {
    waiterServicePosted_ = false;
    admission_.service();
  });
}

void Shard::contributed(Slot& slot) {
  if (slot.dead()) return;
  GroupShard* gs = findGroup(slot.group());
  if (gs == nullptr) return;
  auto it = gs->open.find(slot.chunk());
  if (it == gs->open.end() || it->second.get() != &slot) return;
  std::shared_ptr<Slot> self = it->second;
  if (slot.lane()) {
    sendLaneReady(*gs, self);
    if (!slot.complete()) return;
    gs->open.erase(it);
    completeSlot(*gs, slot);
    return;
  }
  sendReady(*gs, self);
  if (!slot.complete()) return;
  gs->open.erase(it);
  // Its memory stays charged to the group's quota until every member has its result (each
  // queued RESULT part holds the slot, and Admission counts it until it is gone): a member
  // that stops reading stalls only its own group, and the timeout scan fails the group if it
  // never reads (checkTimeouts).
  completeSlot(*gs, slot);
}

void Shard::sendReady(GroupShard& gs, const std::shared_ptr<Slot>& slot) {
  const std::optional<Slot::Part> part = slot->releaseReady();
  if (!part) return;
  const auto& members = gs.members[slot->stream()];
  for (const auto& member : members)
    if (member && !member->closed()) member->sendResult(slot, part->from, part->to);
  if (part->to == slot->elemCount()) gs.commits.at(slot->stream()).resultSent(slot->chunk());
  slot->wakeHeldBack([&](uint32_t rank) {
    if (rank < members.size() && members[rank]) members[rank]->onOthersCaughtUp();
  });
}

Status Shard::received(Session& session, uint64_t chunk) {
  GroupShard* gs = findGroup(session.group()->id());
  if (gs == nullptr) return Status::ok();  // aborted and forgotten while the frame was read
  if (session.isLane()) {
    auto lane = gs->lanes.find(session.streamIndex());
    if (lane == gs->lanes.end()) return Status::ok();  // retired while the frame was read
    // A member holds a chunk whose entry was whole as soon as it sent it: its RECEIVED may
    // run ahead of the results, never ahead of its entries.
    const std::optional<uint64_t> entry = session.lastEntry();
    if (!entry || chunk > *entry)
      return protocolError(fmt::format(
          "RECEIVED for chunk {} on a lane, past the entries this member sent on it ({})", chunk,
          entry ? "the last is chunk " + std::to_string(*entry) : "none"));
    RS_RETURN_IF_ERROR(lane->second.commits.received(session.rank(), chunk));
    sendLaneCommit(lane->second);
    return Status::ok();
  }
  CommitCounter& counter = gs->commits.at(session.streamIndex());
  RS_RETURN_IF_ERROR(counter.received(session.rank(), chunk));
  if (const std::optional<uint64_t> commit = counter.takeCommit())
    for (const auto& member : gs->members[session.streamIndex()])
      if (member && !member->closed()) member->sendCommit(*commit);
  return Status::ok();
}

void Shard::commitLater(const std::shared_ptr<Session>& session) {
  if (!shuttingDown_) lateCommits_.add(session);
}

void Shard::completeSlot(GroupShard& gs, const Slot& slot) {
  gs.group->counters().openSlots.fetch_sub(1, std::memory_order_relaxed);
  gs.group->counters().reductions.fetch_add(1, std::memory_order_relaxed);
  stats_.slotsOpen.fetch_sub(1, std::memory_order_relaxed);
  const auto dtype = static_cast<size_t>(slot.dtype()), op = static_cast<size_t>(slot.op());
  stats_.chunksReduced[dtype][op].fetch_add(1, std::memory_order_relaxed);
  if (slot.elemOffset() == 0)
    stats_.collectivesReduced[dtype][op].fetch_add(1, std::memory_order_relaxed);
  // The last part is queued; each queued part holds a reference, and the memory returns to
  // the pool when the last write completed. A quota slot is free now.
  scheduleWaiterService();
}

void Shard::failGroup(const std::shared_ptr<Group>& group, const Status& reason) {
  // A session fails with an I/O error only when its member's stream ended or broke.
  if (reason.code() == StatusCode::kIoError) return memberGone(group, reason, false);
  failGroupNow(group, reason);
}

void Shard::failGroupNow(const std::shared_ptr<Group>& group, const Status& reason) {
  group->counters().errors.fetch_add(1, std::memory_order_relaxed);
  abortGroup_(group, reason, false);
}

// A member that moved away from this reducer said so before it closed its streams here: it
// took this reducer for lost (silent past its bound while this reducer lived: a stall of
// either machine longer than the bound, a path cut one way), and its FAILOVER on its lanes
// moves this reducer's share to the survivors for every member. An ABORT from here would
// reach the members that have not moved yet and fail them, so the group is dropped without
// one: its streams here close, and each member still on them takes their end for this
// reducer's loss and moves as well (proto/FAILOVER.md, "A live reducer taken for lost").
void Shard::memberMovedAway(Session& session, const cluster::DeadSet& dead) {
  const std::shared_ptr<Group>& group = session.group();
  if (group->aborted()) return;
  abortGroup_(group,
              unavailableError(fmt::format("rank {} moved away from this reducer (it takes "
                                           "reducers {} of {} for lost)",
                                           session.rank(), dead.toString(),
                                           group->params().reducerCount)),
              true);
}

// The one place where a member is lost (silent, or unresponsive).
void Shard::memberLost(Session& session, MemberLoss how, const Status& reason) {
  // Logged before it is counted: whoever sees the count finds the line.
  rs::logger().error("{}: {}", session.name(), reason.message());
  stats_.membersLost[static_cast<size_t>(how)].fetch_add(1, std::memory_order_relaxed);
  memberGone(session.group(), session.groupReason(reason), true);
}

// This reducer cannot tell a member that is silent because it stopped or died from one cut
// off from it alone, which finds this reducer silent within the same bound and moves its share
// to the survivors, whose LOST moves the other members too; each then closes its streams here.
// An ABORT sent at once would reach the members that have not moved yet and fail them while
// the others go on. So a silent member's verdict waits for the group's loss bound, the longest
// a member takes to find this reducer silent: by then the members have moved (and hear nothing
// more from here), or, where the member is really gone, every one of them is told why. A
// stream that ends or breaks is a member that left (its process or its host told us so): at
// once, as before, unless a silent member's verdict is pending, which it then joins (it may be
// a member that moved). With one reducer there is nowhere to move, and with no bound nothing
// finds a silent reducer: at once.
void Shard::memberGone(const std::shared_ptr<Group>& group, const Status& reason, bool silent) {
  if (verdicts_.contains(group->id())) return;  // joins it: the first reason stands
  const uint32_t graceMs = group->lossBoundMs();
  if (!silent || graceMs == 0 || group->params().reducerCount < 2 || shuttingDown_)
    return failGroupNow(group, reason);
  if (group->aborted()) return;
  rs::logger().warn("{}: {}: the group cannot complete here; its members are told in {} ms "
                    "(the streams' loss bound), unless they move this reducer's share first",
                    group->name(), reason.message(), graceMs);
  auto timer = std::make_unique<asio::steady_timer>(io_, std::chrono::milliseconds(graceMs));
  timer->async_wait([this, group, reason](const std::error_code& ec) {
    if (ec || shuttingDown_) return;
    auto it = verdicts_.find(group->id());
    if (it == verdicts_.end()) return;
    std::unique_ptr<asio::steady_timer> done = std::move(it->second);
    verdicts_.erase(it);
    failGroupNow(group, reason);
  });
  verdicts_.emplace(group->id(), std::move(timer));
}

void Shard::sendLaneReady(GroupShard& gs, const std::shared_ptr<Slot>& slot) {
  auto lane = gs.lanes.find(slot->stream());
  if (lane == gs.lanes.end()) return;  // retired: its members resend under the new dead set
  LaneShard& ls = lane->second;
  std::optional<Slot::Part> part;
  if (slot->cutsThrough()) {
    part = slot->releaseReady();
  } else if (slot->complete()) {
    Result<bool> resolved = slot->resolveLane();
    if (!resolved) {
      stats_.countRejection(FrameRejection::kDisagreement);
      failGroup(gs.group, Status(resolved.status().code(),
                                 fmt::format("reducers {} lost: {}", ls.dead.dead.toString(),
                                             resolved.status().message())));
      return;
    }
    if (*resolved) part = Slot::Part{0, slot->elemCount()};
  }
  if (part) {
    for (uint32_t rank = 0; rank < ls.members.size(); ++rank) {
      const auto& member = ls.members[rank];
      if (member && !member->closed() && slot->needsResult(rank))
        member->sendResult(slot, part->from, part->to);
    }
  }
  if (!slot->complete()) return;
  stats_.chunksResent.fetch_add(1, std::memory_order_relaxed);
  ls.commits.resultSent(slot->chunk());
  sendLaneCommit(ls);
}

void Shard::sendLaneCommit(LaneShard& ls) {
  if (const std::optional<uint64_t> commit = ls.commits.takeCommit())
    for (const auto& member : ls.members)
      if (member && !member->closed()) member->sendCommit(*commit);
}

SessionOwner::LaneVerdict Shard::laneFailover(const std::shared_ptr<Session>& session,
                                              const cluster::DeadView& dead, uint64_t watermark,
                                              Status* error) {
  GroupShard* gs = findGroup(session->group()->id());
  if (gs == nullptr) {
    *error = abortedError("the group is gone");
    return LaneVerdict::kFailed;
  }
  const std::shared_ptr<Group>& group = gs->group;
  const GroupParams& p = group->params();
  if (std::optional<cluster::DeadView> grown = group->learnDead(dead)) {
    stats_.failovers.fetch_add(1, std::memory_order_relaxed);
    rs::logger().warn("{}: reducers {} of {} lost (rank {} says so on a lane, generation {}): "
                      "this reducer takes over its share of their chunks and tells every member",
                      group->name(), grown->dead.toString(), p.reducerCount, session->rank(),
                      grown->generation);
    loseReducers_(group, *grown);
  }
  const cluster::DeadView current = *group->dead();
  applyLost(*gs, current);
  std::erase(gs->pendingLanes, session);
  if (!(dead == current)) {
    session->retire(current);
    return LaneVerdict::kRetired;
  }
  const uint16_t index = session->streamIndex();
  auto it = gs->lanes.find(index);
  if (it == gs->lanes.end()) {
    Result<failover::AgreedPoint> point =
        failover::AgreedPoint::create(p.worldSize, *session->lane(), p.reducerCount,
                                      p.streamCount);
    if (!point) {
      *error = point.status();
      failGroup(group, session->groupReason(*error));
      return LaneVerdict::kFailed;
    }
    it = gs->lanes.try_emplace(index, current, *session->lane(), std::move(*point), p.worldSize)
             .first;
    rs::logger().info("{}: lane {} open for reducer {} stream {} ({} lost)", group->name(),
                      index, it->second.lane.deadHome, it->second.lane.stream,
                      current.toString());
  }
  LaneShard& ls = it->second;
  if (Status s = ls.point.add(session->rank(), watermark); !s.isOk()) {
    *error = s;
    stats_.countRejection(FrameRejection::kDuplicate);
    failGroup(group, session->groupReason(s));
    return LaneVerdict::kFailed;
  }
  ls.members[session->rank()] = session;
  if (!ls.point.complete()) return LaneVerdict::kWaiting;
  // Every member's FAILOVER is in: the chunks below the agreed point are committed (every
  // member holds their results), and the lane is read from it.
  const uint64_t step = uint64_t{p.reducerCount} * p.streamCount;
  if (ls.point.watermark() >= step) ls.commits.commitThrough(ls.point.watermark() - step);
  sendLaneCommit(ls);
  for (const auto& member : ls.members)
    if (member && member != session)
      asio::post(io_, [member] { member->onLaneReady(); });
  return LaneVerdict::kReady;
}

bool Shard::laneDrops(Session& session, uint64_t chunk) {
  GroupShard* gs = findGroup(session.group()->id());
  if (gs == nullptr) return true;
  auto lane = gs->lanes.find(session.streamIndex());
  return lane == gs->lanes.end() || lane->second.point.drops(chunk);
}

void Shard::groupLost(const GroupId& id, const cluster::DeadView& dead) {
  if (GroupShard* gs = findGroup(id)) applyLost(*gs, dead);
}

void Shard::applyLost(GroupShard& gs, const cluster::DeadView& heard) {
  cluster::DeadView dead = heard;
  if (gs.lostSent) {
    dead = *gs.lostSent;
    if (!dead.learn(heard)) return;  // this one, or an older
  }
  gs.lostSent = dead;
  for (auto& [stream, members] : gs.members)
    for (const auto& member : members)
      if (member && !member->closed()) member->sendLost(dead);
  std::vector<uint16_t> older;
  for (const auto& [index, lane] : gs.lanes)
    if (!(lane.dead == dead)) older.push_back(index);
  for (uint16_t index : older) retireLane(gs, index, dead);
}

void Shard::retireLane(GroupShard& gs, uint16_t index, const cluster::DeadView& dead) {
  auto it = gs.lanes.find(index);
  LaneShard ls = std::move(it->second);
  gs.lanes.erase(it);
  // Its open chunks go with it: they are resent under the new dead set, on its lanes.
  for (auto slot = gs.open.begin(); slot != gs.open.end();) {
    if (!slot->second->lane() || slot->second->stream() != index) {
      ++slot;
      continue;
    }
    slot->second->markDead();
    gs.group->counters().openSlots.fetch_sub(1, std::memory_order_relaxed);
    stats_.slotsOpen.fetch_sub(1, std::memory_order_relaxed);
    slot = gs.open.erase(slot);
  }
  for (const auto& member : ls.members)
    if (member) member->retire(dead);
  scheduleWaiterService();
}

void Shard::memberLeftReducer(const GroupId& id, uint32_t rank) {
  GroupShard* gs = findGroup(id);
  if (gs == nullptr) return;
  for (const auto& [index, lane] : gs->lanes)
    if (!lane.members[rank]) failIfLaneMemberLeft(*gs, index);
}

void Shard::failIfLaneMemberLeft(GroupShard& gs, uint16_t index) {
  auto lane = gs.lanes.find(index);
  // Before its agreed point a lane has no chunk open, and not every member's session yet.
  if (gs.group->aborted() || lane == gs.lanes.end() || !lane->second.point.complete()) return;
  const LaneShard& ls = lane->second;
  for (uint32_t rank = 0; rank < ls.members.size(); ++rank) {
    if (ls.members[rank] || !gs.group->hasLeft(rank)) continue;
    for (const auto& [chunk, slot] : gs.open) {
      if (!slot->lane() || slot->stream() != index || slot->memberDone(rank)) continue;
      memberGone(gs.group,
                 abortedError(fmt::format(
                     "rank {} left this reducer (its lane {} and its streams here ended) while "
                     "chunk {} (seq {}), resent for lost reducer {} stream {}, waited for its "
                     "entry",
                     rank, index, chunk, slot->seq(), ls.lane.deadHome, ls.lane.stream)),
                 false);
      return;
    }
  }
}

void Shard::abortGroup(const GroupId& id, const Status& reason) {
  auto it = groups_.find(id);
  if (it == groups_.end()) return;
  GroupShard gs = std::move(it->second);
  groups_.erase(it);
  for (auto& [chunk, slot] : gs.open) slot->markDead();
  for (const auto& weak : admission_.heldSlots(id))
    if (auto slot = weak.lock()) slot->markDead();
  gs.group->counters().openSlots.fetch_sub(static_cast<int64_t>(gs.open.size()),
                                           std::memory_order_relaxed);
  stats_.slotsOpen.fetch_sub(static_cast<int64_t>(gs.open.size()), std::memory_order_relaxed);
  gs.open.clear();
  // Moved away: the members take the streams' end for this reducer's loss, not an ABORT.
  const bool movedAway = gs.group->movedAway();
  auto end = [&](const std::shared_ptr<Session>& session) {
    if (!session) return;
    if (movedAway) session->close(reason);
    else session->abort(reason);
  };
  for (auto& [stream, members] : gs.members)
    for (auto& session : members) end(session);
  for (auto& session : gs.pendingLanes) end(session);
  for (auto& [index, lane] : gs.lanes)
    for (auto& session : lane.members) end(session);
  // Its memory returns as its sessions let go of its slots.
  admission_.abort(id);
  scheduleWaiterService();
}

void Shard::memberLeft(Session& session) {
  GroupShard* gs = findGroup(session.group()->id());
  if (gs == nullptr) return;
  // A member closes its lanes when it adopts a larger dead set (its FAILOVER under it retires
  // this lane here), or with the rest of its streams when it leaves (then the lane's end is
  // judged in detach, with the streams').
  if (session.isLane()) return;
  // A chunk still open on the stream fails the group at once, whether or not this member had
  // sent its part: it can never receive the result, and the slot would stay held until the
  // timeout.
  for (const auto& [chunk, slot] : gs->open) {
    if (slot->stream() == session.streamIndex()) {
      memberGone(gs->group,
                 abortedError(fmt::format("rank {} closed stream {} while chunk {} (seq {}) "
                                          "was still being reduced",
                                          session.rank(), session.streamIndex(), chunk,
                                          slot->seq())),
                 false);
      return;
    }
  }
  gs->departed[session.streamIndex()][session.rank()] = true;
  rs::logger().debug("{}: left", session.name());
  // Its lanes' chunks here wait for it too (on any thread): only once a lane was opened.
  if (gs->group->markLeft(session.rank()) && gs->group->dead())
    reportLeft_(gs->group, session.rank());
}

void Shard::detach(Session& session) {
  stats_.connectionsOpen.fetch_sub(1, std::memory_order_relaxed);
  // A joining group cannot complete its rejoin without this stream: cancelled for everyone (the
  // members go on without this reducer and redial later).
  if (session.group()->joining() && !session.group()->aborted())
    failGroup(session.group(),
              unavailableError(fmt::format("rejoin cancelled: rank {} stream {} closed before "
                                           "JOIN_AT",
                                           session.rank(), session.streamIndex())));
  registry_.streamClosed(*session.group(), session.rank(), session.streamIndex());
  const GroupId id = session.group()->id();
  GroupShard* gs = findGroup(id);
  if (gs == nullptr) return;
  if (session.isLane()) {
    std::erase_if(gs->pendingLanes, [&](const auto& s) { return s.get() == &session; });
    if (auto lane = gs->lanes.find(session.streamIndex());
        lane != gs->lanes.end() && lane->second.members[session.rank()].get() == &session) {
      lane->second.members[session.rank()].reset();
      failIfLaneMemberLeft(*gs, session.streamIndex());
    }
  } else {
    auto members = gs->members.find(session.streamIndex());
    if (members != gs->members.end() && members->second[session.rank()].get() == &session)
      members->second[session.rank()].reset();
  }
  maybeForget(id);
}

void Shard::maybeForget(const GroupId& id) {
  GroupShard* gs = findGroup(id);
  if (gs == nullptr || !gs->open.empty()) return;
  for (const auto& [stream, members] : gs->members)
    for (const auto& session : members)
      if (session) return;
  if (!gs->pendingLanes.empty()) return;
  for (const auto& [index, lane] : gs->lanes)
    for (const auto& session : lane.members)
      if (session) return;
  groups_.erase(id);
  // No member is left to resume: its waiters are stale (and a group of that id that joins
  // later starts with no parked requests).
  admission_.forget(id);
}

void Shard::closeAll(const Status& reason) {
  shuttingDown_ = true;
  timeoutTimer_.cancel();
  verdicts_.clear();  // their handlers see operation_aborted
  lateCommits_.cancel();
  std::vector<std::shared_ptr<Session>> sessions;
  for (auto& [id, gs] : groups_) {
    for (auto& [chunk, slot] : gs.open) slot->markDead();
    stats_.slotsOpen.fetch_sub(static_cast<int64_t>(gs.open.size()), std::memory_order_relaxed);
    for (auto& [stream, members] : gs.members)
      for (auto& s : members)
        if (s) sessions.push_back(s);
    for (auto& s : gs.pendingLanes) sessions.push_back(s);
    for (auto& [index, lane] : gs.lanes)
      for (auto& s : lane.members)
        if (s) sessions.push_back(s);
  }
  for (auto& s : sessions) s->close(reason);
  groups_.clear();
  admission_.clear();
  if (fabric_) fabric_->shutdown(reason);
}

void Shard::scheduleTimeoutCheck() {
  timeoutTimer_.expires_after(kTimeoutScanPeriod);
  timeoutTimer_.async_wait([this](const std::error_code& ec) {
    if (ec || shuttingDown_) return;
    checkTimeouts();
    scheduleTimeoutCheck();
  });
}

Status Shard::idleVerdict(GroupShard& gs, std::chrono::steady_clock::time_point now) {
  // Judged per group, not per stream: a job whose small collectives use one of its streams
  // leaves the others silent, and a member waiting for the others is in a collective.
  const uint64_t bytesIn = gs.group->counters().bytesIn.load(std::memory_order_relaxed);
  if (bytesIn != gs.seenBytesIn ||
      gs.group->counters().openSlots.load(std::memory_order_relaxed) > 0) {
    gs.seenBytesIn = bytesIn;
    gs.activeAt = now;
    return Status::ok();
  }
  if (now - gs.activeAt <= std::chrono::milliseconds(config_.idleTimeoutMs)) return Status::ok();
  return unavailableError(fmt::format(
      "{}: no member sent anything for {} ms with no collective in flight (--idle-timeout-ms)",
      gs.group->name(), config_.idleTimeoutMs));
}

void Shard::checkTimeouts() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::pair<std::shared_ptr<Group>, Status>> expired;
  for (auto& [id, gs] : groups_) {
    if (gs.group->joining() && now >= gs.group->joinDeadline()) {
      expired.emplace_back(
          gs.group,
          unavailableError(fmt::format(
              "rejoin cancelled: not every member's streams and JOIN came within {} ms of the "
              "first (the group's loss bound){}",
              gs.group->lossBoundMs() != 0 ? gs.group->lossBoundMs() : gs.group->timeoutMs(),
              gs.rejoin ? "; no JOIN from ranks " + gs.rejoin->missingRanks() : "")));
      continue;
    }
    Status overdue;
    for (auto& [chunk, slot] : gs.open) {
      overdue = slot->overdue(now);
      if (!overdue.isOk()) break;  // one reason per group is enough
    }
    // A result that a member has not read within the timeout holds its memory: fail the group.
    const auto held = admission_.heldSlots(id);
    for (const auto& weak : held) {
      if (!overdue.isOk()) break;
      if (auto slot = weak.lock()) overdue = slot->overdue(now);
    }
    if (!overdue.isOk()) {
      expired.emplace_back(gs.group, std::move(overdue));
      continue;
    }
    // Results still queued count as activity in flight, like open slots (both are held).
    if (!held.empty() || config_.idleTimeoutMs == 0) continue;
    if (Status idle = idleVerdict(gs, now); !idle.isOk())
      expired.emplace_back(gs.group, std::move(idle));
  }
  for (auto& [group, reason] : expired) failGroup(group, reason);
  // The pool's budget grows when another thread's group returns its bookkeeping, which frees
  // nothing here: look at the waiters again.
  scheduleWaiterService();
}

}  // namespace rs::server
