// The data plane: T io threads (one io_context and one Shard each), the acceptor that runs
// each new connection's handshake, and the broadcast that aborts a group on every thread.
#pragma once

#include <asio/io_context.hpp>
#include <array>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "core/common/status.h"
#include "core/transport/stream.h"
#include "server/config.h"
#include "server/failure_reason.h"
#include "server/group_registry.h"
#include "server/shard.h"

namespace rs::server {

class Acceptor;

// The io threads' counters summed, plus the acceptor's and the abort counts (see ShardStats).
struct DataPlaneStats {
  using PerDtypeOp = std::array<std::array<uint64_t, kNumReduceOps>, kNumDataTypes>;

  uint64_t bytesIn = 0, bytesOut = 0;  // payload bytes
  uint64_t reductions = 0;             // chunks, all dtypes and ops
  PerDtypeOp chunksReduced{}, collectivesReduced{};
  uint64_t protocolErrors = 0;  // frames rejected, all reasons
  std::array<uint64_t, kNumFrameRejections> framesRejected{};
  std::array<uint64_t, kNumAbortReasons> groupAborts{};
  uint64_t connectionsAccepted = 0;  // TCP accepts on the data port
  uint64_t acceptErrors = 0;         // failed accepts (EMFILE, ...), retried after a pause
  int64_t handshakesPending = 0;
  uint64_t handshakeFailures = 0;  // all reasons
  std::array<uint64_t, kNumHandshakeFailures> handshakeFailuresBy{};
  // Pending handshakes refused to make room for another address (also counted in 'limit').
  uint64_t handshakeEvictions = 0;
  uint64_t streamsJoined = 0;
  uint64_t fabricStreams = 0;
  // Payload bytes sent on the fabric: results written straight from the slots (zero-copy),
  // and payloads copied into a send ring first (the probes; any slot buffer not registered).
  uint64_t fabricBytesZeroCopy = 0, fabricBytesCopied = 0;
  int64_t connectionsOpen = 0;  // joined streams open now
  int64_t slotsOpen = 0;
  uint64_t slotBytesInUse = 0, slotBytesLimit = 0, parkedSessions = 0, parks = 0;
  uint64_t heartbeatsSent = 0, heartbeatsReceived = 0;
  std::array<uint64_t, kNumMemberLosses> membersLost{};
  uint64_t failovers = 0, chunksResent = 0, groupsMovedAway = 0;
  uint64_t rejoins = 0, rejoinsCancelled = 0;
  // Bookkeeping charged against --memory-limit: per group (MemoryBudget) and per slot.
  uint64_t bookkeepingBytes = 0;
  LatencyHistogram::Snapshot reduceLatency;
};

class DataPlane {
 public:
  DataPlane(const ServerConfig& config, GroupRegistry& registry);
  ~DataPlane();

  // Binds the data listener on `control` (the io_context that runs handshakes) and starts
  // the io threads.
  Status start(asio::io_context& control);
  // Closes every stream and joins the io threads.
  void stop();

  uint16_t port() const;
  const ServerConfig& config() const { return config_; }
  GroupRegistry& registry() { return registry_; }
  DataPlaneStats stats() const;

  // Hands a handshaken stream to the io thread that owns its stream index. Any thread.
  void handOff(std::unique_ptr<transport::Stream> stream, std::shared_ptr<Group> group,
               uint32_t rank, uint16_t streamIndex, uint32_t lossDetectMs, bool askedFabric);
  // Aborts the group on every io thread (first reason wins, and is counted). Any thread. Not
  // while stopping: a reducer going away only closes its streams, and its groups go on without
  // it (proto/FAILOVER.md); its io threads close their streams one after another, and a member
  // that adopted the loss early closes its other streams here, which must not be taken for a
  // member leaving in the middle of a chunk, nor tell the members still reading here to abort.
  void abortGroup(const std::shared_ptr<Group>& group, const Status& reason,
                  bool movedAway = false);
  // The group's dead set grew to `dead`: every io thread tells its members there and retires
  // its older lanes (Shard::groupLost). Any thread.
  void loseReducers(const std::shared_ptr<Group>& group, const cluster::DeadView& dead);
  // Every stream of a joining group is in: its stream 0's thread offers the rejoin.
  void offerRejoin(const std::shared_ptr<Group>& group);
  // `rank` left this reducer: every io thread looks at its lanes for chunks that wait for it
  // (Shard::memberLeftReducer). Any thread.
  void reportLeft(const std::shared_ptr<Group>& group, uint32_t rank);

 private:
  struct IoThread {
    asio::io_context io{1};  // one thread runs it: no locking inside Asio
    std::unique_ptr<Shard> shard;  // destroyed before the io_context its timers use
    std::thread thread;
  };

  const ServerConfig& config_;
  GroupRegistry& registry_;
  std::vector<std::unique_ptr<IoThread>> threads_;
  std::unique_ptr<Acceptor> acceptor_;
  std::array<std::atomic<uint64_t>, kNumAbortReasons> groupAborts_{};
  std::atomic<uint64_t> rejoinsCancelled_{0};
  std::atomic<uint64_t> groupsMovedAway_{0};  // dropped as a member moved away, once each
  bool running_ = false;
  std::atomic<bool> stopping_{false};
};

}  // namespace rs::server
