#include "server/group_registry.h"

#include <algorithm>

#include "core/common/log.h"
#include "core/wire/frame.h"

namespace rs::server {
namespace {
// Aborted groups are remembered this long, so a member that connects late learns why instead
// of starting a new group that can never complete.
constexpr auto kTombstoneLifetime = std::chrono::minutes(10);
constexpr size_t kMaxTombstones = 4096;

// The handshake (server/handshake.cc) counts FAILED_PRECONDITION as an authentication failure
// (failure_reason.cc).
Status anotherJob(const GroupId& id) {
  return failedPrecondition("group " + id.toString().substr(0, 8) + " belongs to another job");
}
}  // namespace

Group::Group(GroupId id, GroupParams params, uint32_t threadOffset, uint32_t effectiveTimeoutMs)
    : id_(id),
      params_(params),
      threadOffset_(threadOffset),
      timeoutMs_(effectiveTimeoutMs),
      name_("group " + id.toString().substr(0, 8)),
      joining_(params.rejoin),
      streamsToJoin_(int64_t{params.worldSize} * params.streamCount),
      left_(params.worldSize, false),
      streamConnected_(static_cast<size_t>(params.worldSize) * params.streamCount, false),
      declared_(params.worldSize, false) {}

bool Group::markAborted(const Status& reason, bool movedAway) {
  std::lock_guard lock(mu_);
  if (aborted_.load(std::memory_order_relaxed)) return false;
  abortReason_ = reason;
  movedAway_.store(movedAway, std::memory_order_release);
  aborted_.store(true, std::memory_order_release);
  return true;
}

std::optional<cluster::DeadView> Group::learnDead(const cluster::DeadView& dead) {
  std::lock_guard lock(mu_);
  if (!dead_) {
    dead_ = dead;
    return dead_;
  }
  if (!dead_->learn(dead)) return std::nullopt;
  return dead_;
}

std::optional<cluster::DeadView> Group::dead() const {
  std::lock_guard lock(mu_);
  return dead_;
}

bool Group::markLeft(uint32_t rank) {
  std::lock_guard lock(mu_);
  if (left_[rank]) return false;
  left_[rank] = true;
  return true;
}

bool Group::hasLeft(uint32_t rank) const {
  std::lock_guard lock(mu_);
  return left_[rank];
}

Status Group::abortReason() const {
  std::lock_guard lock(mu_);
  return abortReason_;
}

GroupRegistry::GroupRegistry(const RegistryLimits& limits, uint32_t ioThreads,
                             std::shared_ptr<MemoryBudget> memory)
    : limits_(limits),
      ioThreads_(ioThreads),
      memory_(memory ? std::move(memory)
                     : std::make_shared<MemoryBudget>(UINT64_MAX, ioThreads, 0)) {}

Status GroupRegistry::checkLimits(uint32_t rank, const GroupParams& params) const {
  // Per-group bookkeeping is sized by world size x streams: both stay inside HELLO's ranges.
  if (params.worldSize < 1 || params.worldSize > wire::kMaxWorldSize)
    return invalidArgument(fmt::format("world_size {} is outside 1..{} (this reducer's limit)",
                                       params.worldSize, wire::kMaxWorldSize));
  if (rank >= params.worldSize)
    return invalidArgument(fmt::format("rank {} is not below world_size {}", rank,
                                       params.worldSize));
  if (params.streamCount < 1 || params.streamCount > limits_.maxStreamsPerWorker)
    return invalidArgument(fmt::format(
        "stream_count {} is outside 1..{} (--max-streams-per-worker)", params.streamCount,
        limits_.maxStreamsPerWorker));
  if (params.reducerCount < 1 || params.reducerIndex >= params.reducerCount)
    return invalidArgument(fmt::format("reducer_index {} is not below reducer_count {}",
                                       params.reducerIndex, params.reducerCount));
  return Status::ok();
}

Status GroupRegistry::agreeLocked(const Group& g, uint32_t rank, const GroupParams& params) {
  const GroupParams& have = g.params();
  // First, so that another job learns neither the group's shape nor its state.
  if (g.job() != params.job) return anotherJob(g.id());
  if (g.aborted()) return abortedError(g.name() + " was aborted: " + g.abortReason().message());
  // A rejoin is for a reducer restarted since the loss, which knows nothing of the group; a
  // joining group takes only rejoining streams (proto/FAILOVER.md, "A reducer comes back").
  if (params.rejoin && !g.joining())
    return invalidArgument(fmt::format(
        "{} is live on this reducer: rank {} redials it to rejoin, but a rejoin is for a reducer "
        "restarted since the loss",
        g.name(), rank));
  if (!params.rejoin && g.joining())
    return invalidArgument(fmt::format(
        "{} is rejoining this restarted reducer: rank {} comes without the rejoin flag (a lane, "
        "or a member that did not lose it)",
        g.name(), rank));
  if (!have.sameShape(params))
    return invalidArgument(fmt::format(
        "{}: rank {} brings world_size={} streams={} reducer={}/{}, but the group has "
        "world_size={} streams={} reducer={}/{}",
        g.name(), rank, params.worldSize, params.streamCount, params.reducerIndex,
        params.reducerCount, have.worldSize, have.streamCount, have.reducerIndex,
        have.reducerCount));
  if (have.deterministic != params.deterministic)
    return invalidArgument(fmt::format(
        "{}: rank {} {} deterministic mode, but the group was created {} it (set "
        "RS_DETERMINISTIC alike on every member)",
        g.name(), rank, params.deterministic ? "asks for" : "does not ask for",
        have.deterministic ? "with" : "without"));
  if (have.fp32Accumulator != params.fp32Accumulator)
    return invalidArgument(fmt::format(
        "{}: rank {} asks for an {} accumulator for fp32 sums, but the group was created with "
        "an {} one (set RS_FP32_ACCUMULATOR alike on every member)",
        g.name(), rank, fp32AccumulatorName(params.fp32Accumulator),
        fp32AccumulatorName(have.fp32Accumulator)));
  return Status::ok();
}

Result<std::shared_ptr<Group>> GroupRegistry::findOrCreateLocked(const GroupId& id,
                                                                  uint32_t rank,
                                                                  const GroupParams& params) {
  RS_RETURN_IF_ERROR(checkLimits(rank, params));
  auto it = groups_.find(id);
  if (it != groups_.end()) {
    RS_RETURN_IF_ERROR(agreeLocked(*it->second, rank, params));
    return it->second;
  }
  if (auto t = tombstones_.find(id); t != tombstones_.end()) {
    if (std::chrono::steady_clock::now() < t->second.expires && t->second.job != params.job)
      return anotherJob(id);
    if (std::chrono::steady_clock::now() < t->second.expires)
      return abortedError("group " + id.toString().substr(0, 8) + " was aborted: " +
                          t->second.reason);
    tombstones_.erase(t);
  }
  if (draining_) return unavailableError("this reducer is draining and accepts no new groups");
  if (groups_.size() >= limits_.maxGroups)
    return resourceExhausted("this reducer already serves " + std::to_string(groups_.size()) +
                             " groups (--max-groups)");
  if (auto held = groupsOfJob_.find(params.job);
      held != groupsOfJob_.end() && held->second >= limits_.maxGroupsPerJob)
    return resourceExhausted(fmt::format(
        "job {} already holds {} groups on this reducer (--max-groups-per-job)", params.job,
        held->second));
  const uint32_t offset = static_cast<uint32_t>(GroupIdHash()(id) % ioThreads_);
  // The operator's timeout is a ceiling: a member cannot hold a stuck group longer.
  const uint32_t timeoutMs = params.timeoutMs ? std::min(params.timeoutMs, limits_.maxTimeoutMs)
                                              : limits_.maxTimeoutMs;
  // Its state sized by world size counts against --memory-limit until the Group is destroyed.
  const uint64_t bookkeeping = bookkeepingBytes(params.worldSize, params.streamCount);
  RS_RETURN_IF_ERROR(
      memory_->chargeBookkeeping(bookkeeping, "group " + id.toString().substr(0, 8)));
  auto group = std::make_shared<Group>(id, params, offset, timeoutMs);
  group->bookkeeping_ = BookkeepingCharge(memory_, bookkeeping);
  groups_.emplace(id, group);
  if (!params.job.empty()) ++groupsOfJob_[params.job];
  rs::logger().info("{} created{}: world_size={} streams={} reducer={}/{} timeout_ms={}{}{}{}",
                    group->name(), params.job.empty() ? "" : " for job " + params.job,
                    params.worldSize, params.streamCount, params.reducerIndex,
                    params.reducerCount, group->timeoutMs(),
                    params.timeoutMs > limits_.maxTimeoutMs
                        ? fmt::format(" (asked {}, capped by --collective-timeout-ms)",
                                      params.timeoutMs)
                        : std::string(),
                    params.deterministic ? " deterministic" : "",
                    params.fp32Accumulator == Fp32Accumulator::kFp64 ? " fp32-in-fp64" : "");
  return group;
}

Result<std::shared_ptr<Group>> GroupRegistry::joinStream(const GroupId& id, uint32_t rank,
                                                         uint16_t streamIndex,
                                                         const GroupParams& params,
                                                         const std::string& peerHost) {
  std::lock_guard lock(mu_);
  // Before a group is created, so that a refusal leaves nothing behind.
  RS_RETURN_IF_ERROR(checkConnectionCapsLocked(nullptr, peerHost));
  auto found = findOrCreateLocked(id, rank, params);
  if (!found) return found.status();
  Group& g = **found;
  RS_RETURN_IF_ERROR(checkConnectionCapsLocked(&g, peerHost));
  if (streamIndex >= params.streamCount)
    return invalidArgument("stream " + std::to_string(streamIndex) + " is not below the " +
                           std::to_string(params.streamCount) + " streams announced");
  const size_t slot = static_cast<size_t>(rank) * params.streamCount + streamIndex;
  if (g.streamConnected_[slot])
    return invalidArgument(fmt::format("{}: rank {} stream {} is already connected", g.name(),
                                       rank, streamIndex));
  g.streamConnected_[slot] = true;
  countConnectionLocked(g, rank, streamIndex, peerHost);
  g.everConnected_ = true;
  if (streamsOfRankLocked(g, rank) == 1)
    rs::logger().info("{}: rank {} joined ({} of {} members connected)", g.name(), rank,
                      membersKnownLocked(g), params.worldSize);
  return *found;
}

Status GroupRegistry::checkConnectionCapsLocked(const Group* g,
                                                const std::string& peerHost) const {
  if (auto p = peerStreams_.find(peerHost);
      !peerHost.empty() && p != peerStreams_.end() && p->second >= limits_.maxConnectionsPerPeer)
    return resourceExhausted(fmt::format(
        "peer {} already holds {} data connections (--max-connections-per-peer)", peerHost,
        p->second));
  if (g != nullptr && g->openStreams_ >= limits_.maxConnectionsPerGroup)
    return resourceExhausted(fmt::format(
        "{} already holds {} data connections (--max-connections-per-group)", g->name(),
        g->openStreams_));
  return Status::ok();
}

Result<std::shared_ptr<Group>> GroupRegistry::joinLane(const GroupId& id, uint32_t rank,
                                                       uint16_t laneIndex,
                                                       const GroupParams& params,
                                                       const std::string& peerHost) {
  std::lock_guard lock(mu_);
  RS_RETURN_IF_ERROR(checkLimits(rank, params));
  auto it = groups_.find(id);
  if (it == groups_.end())
    return failedPrecondition(fmt::format(
        "group {} has no stream here: lane {} of rank {} would carry a lost reducer's chunks to "
        "this reducer for a group it does not serve",
        id.toString().substr(0, 8), laneIndex, rank));
  Group& g = *it->second;
  RS_RETURN_IF_ERROR(agreeLocked(g, rank, params));
  RS_RETURN_IF_ERROR(checkConnectionCapsLocked(&g, peerHost));
  if (laneIndex < params.streamCount)
    return invalidArgument(fmt::format("{}: lane {} of rank {} is not above the {} streams",
                                       g.name(), laneIndex, rank, params.streamCount));
  countConnectionLocked(g, rank, laneIndex, peerHost);
  return it->second;
}

void GroupRegistry::countConnectionLocked(Group& g, uint32_t rank, uint16_t index,
                                          const std::string& peerHost) {
  ++g.openStreams_;
  if (peerHost.empty()) return;
  g.peerOf_.emplace(Group::connectionKey(rank, index), peerHost);
  ++peerStreams_[peerHost];
}

void GroupRegistry::uncountConnectionLocked(Group& g, uint32_t rank, uint16_t index) {
  --g.openStreams_;
  auto it = g.peerOf_.find(Group::connectionKey(rank, index));
  if (it == g.peerOf_.end()) return;
  if (auto p = peerStreams_.find(it->second); p != peerStreams_.end() && --p->second == 0)
    peerStreams_.erase(p);
  g.peerOf_.erase(it);
}

void GroupRegistry::streamClosed(const Group& group, uint32_t rank, uint16_t streamIndex) {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group.id());
  if (it == groups_.end() || it->second.get() != &group) return;
  Group& g = *it->second;
  if (streamIndex >= g.params().streamCount) {  // a lane
    uncountConnectionLocked(g, rank, streamIndex);
  } else {
    const size_t slot = static_cast<size_t>(rank) * g.params().streamCount + streamIndex;
    if (slot >= g.streamConnected_.size() || !g.streamConnected_[slot]) return;
    g.streamConnected_[slot] = false;
    uncountConnectionLocked(g, rank, streamIndex);
    if (streamsOfRankLocked(g, rank) == 0) rs::logger().info("{}: rank {} left", g.name(), rank);
  }
  if (g.openStreams_ == 0 && !anyDeclaredLocked(g)) eraseLocked(g);
}

uint32_t GroupRegistry::streamsOfRankLocked(const Group& g, uint32_t rank) {
  uint32_t n = 0;
  for (uint16_t s = 0; s < g.params().streamCount; ++s)
    n += g.streamConnected_[static_cast<size_t>(rank) * g.params().streamCount + s] ? 1 : 0;
  return n;
}

bool GroupRegistry::anyDeclaredLocked(const Group& g) {
  for (bool d : g.declared_)
    if (d) return true;
  return false;
}

void GroupRegistry::eraseLocked(const Group& g) {
  // A joining group cancelled (proto/FAILOVER.md, "A reducer comes back") leaves no tombstone:
  // its members redial it later; nor does one that its members moved away from, which they
  // may take back by a rejoin.
  if (g.aborted() && !g.joining() && !g.movedAway()) {
    if (tombstones_.size() >= kMaxTombstones) {
      // Drop expired ones first; if none expired, the oldest-inserted is as good as any.
      auto now = std::chrono::steady_clock::now();
      std::erase_if(tombstones_, [&](const auto& kv) { return kv.second.expires <= now; });
      if (tombstones_.size() >= kMaxTombstones) tombstones_.erase(tombstones_.begin());
    }
    tombstones_[g.id()] = {g.job(), g.abortReason().message(),
                           std::chrono::steady_clock::now() + kTombstoneLifetime};
  }
  rs::logger().info("{} closed: {} reductions, {} in, {} out{}", g.name(),
                    g.counters_.reductions.load(), g.counters_.bytesIn.load(),
                    g.counters_.bytesOut.load(), g.aborted() ? " (aborted)" : "");
  if (!g.job().empty()) {
    auto jobGroups = groupsOfJob_.find(g.job());
    if (jobGroups != groupsOfJob_.end() && --jobGroups->second == 0) groupsOfJob_.erase(jobGroups);
  }
  const GroupId id = g.id();  // erasing may destroy g
  groups_.erase(id);
}

uint32_t GroupRegistry::membersKnownLocked(const Group& g) {
  const GroupParams& p = g.params();
  uint32_t known = 0;
  for (uint32_t r = 0; r < p.worldSize; ++r) {
    bool any = g.declared_[r];
    for (uint16_t s = 0; s < p.streamCount && !any; ++s)
      any = g.streamConnected_[static_cast<size_t>(r) * p.streamCount + s];
    known += any ? 1 : 0;
  }
  return known;
}

Result<uint32_t> GroupRegistry::declareMember(const GroupId& id, uint32_t rank,
                                              const GroupParams& params) {
  std::lock_guard lock(mu_);
  auto found = findOrCreateLocked(id, rank, params);
  if (!found) return found.status();
  Group& g = **found;
  g.declared_[rank] = true;
  return membersKnownLocked(g);
}

Result<std::shared_ptr<Group>> GroupRegistry::leaveMember(const GroupId& id, uint32_t rank,
                                                          const std::string& job) {
  std::lock_guard lock(mu_);
  auto it = groups_.find(id);
  if (it == groups_.end()) return std::shared_ptr<Group>();
  Group& g = *it->second;
  if (g.job() != job) return anotherJob(id);
  if (rank < g.declared_.size()) g.declared_[rank] = false;
  if (g.openStreams_ == 0 && !anyDeclaredLocked(g)) {
    eraseLocked(g);
    return std::shared_ptr<Group>();
  }
  return it->second;
}

std::shared_ptr<Group> GroupRegistry::find(const GroupId& id) const {
  std::lock_guard lock(mu_);
  auto it = groups_.find(id);
  return it == groups_.end() ? nullptr : it->second;
}

std::vector<GroupSnapshot> GroupRegistry::snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<GroupSnapshot> out;
  out.reserve(groups_.size());
  for (const auto& [id, g] : groups_) out.push_back({g, g->openStreams_, membersKnownLocked(*g)});
  return out;
}

RegistryCounts GroupRegistry::counts() const {
  std::lock_guard lock(mu_);
  RegistryCounts out;
  out.groups = groups_.size();
  for (const auto& [id, g] : groups_) out.members += membersKnownLocked(*g);
  out.draining = draining_;
  return out;
}

size_t GroupRegistry::size() const {
  std::lock_guard lock(mu_);
  return groups_.size();
}

void GroupRegistry::setDraining(bool draining) {
  std::lock_guard lock(mu_);
  draining_ = draining;
}

bool GroupRegistry::draining() const {
  std::lock_guard lock(mu_);
  return draining_;
}

}  // namespace rs::server
