// One io thread's counters (see ShardStats); the data plane sums them for GetStats, the log
// line and the metrics scrape.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "core/reduce/dtype.h"
#include "server/failure_reason.h"
#include "server/latency_histogram.h"

namespace rs::server {

// Per-thread counters, written only by this shard's thread (relaxed atomics, no lock) and summed
// at read time by GetStats, the throughput log line and the metrics scrape (DataPlane::stats).
// Byte counts are payload bytes (REDUCE in, RESULT out); frame headers are not counted.
struct alignas(64) ShardStats {
  std::atomic<uint64_t> bytesIn{0};
  std::atomic<uint64_t> bytesOut{0};
  // Completed chunks by [dtype][op], and the collectives whose first chunk (element offset 0)
  // completed here: exactly one reducer of a pool reduces that chunk of each collective.
  std::array<std::array<std::atomic<uint64_t>, kNumReduceOps>, kNumDataTypes> chunksReduced{};
  std::array<std::array<std::atomic<uint64_t>, kNumReduceOps>, kNumDataTypes> collectivesReduced{};
  std::array<std::atomic<uint64_t>, kNumFrameRejections> framesRejected{};
  std::atomic<uint64_t> streamsJoined{0};  // streams handed to this thread after their handshake
  std::atomic<uint64_t> fabricStreams{0};  // of them, offered a fabric channel (proto/FABRIC.md)
  std::atomic<int64_t> connectionsOpen{0};
  std::atomic<int64_t> slotsOpen{0};
  std::atomic<uint64_t> slotBytesInUse{0};
  std::atomic<uint64_t> slotStateBytes{0};  // per-rank state of open slots (Slot::stateBytes)
  std::atomic<uint64_t> parkedSessions{0};  // parked now
  std::atomic<uint64_t> parks{0};           // parked ever (backpressure events)
  // HEARTBEAT frames written to members and read from them (proto/WIRE.md), and members
  // declared lost by how (Shard::memberLost).
  std::atomic<uint64_t> heartbeatsSent{0};
  std::atomic<uint64_t> heartbeatsReceived{0};
  std::array<std::atomic<uint64_t>, kNumMemberLosses> membersLost{};
  // Failover (proto/FAILOVER.md): the times a group's dead set grew here (a FAILOVER named a
  // reducer this one did not know lost), and the lost reducers' chunks resolved here.
  std::atomic<uint64_t> failovers{0};
  std::atomic<uint64_t> chunksResent{0};
  // A reducer taken back (proto/FAILOVER.md, "A reducer comes back"): the joining groups whose
  // members agreed on their rejoin point here (the cancelled ones, and the groups dropped
  // because a member moved away: DataPlane::abortGroup).
  std::atomic<uint64_t> rejoins{0};
  // From a chunk's slot opening to its result written to every member; see Session::onWritten.
  LatencyHistogram reduceLatency;

  void countRejection(FrameRejection r) {
    framesRejected[static_cast<size_t>(r)].fetch_add(1, std::memory_order_relaxed);
  }
};

}  // namespace rs::server
