// What a member has seen committed of each (home reducer, stream) of its chunks
// (proto/FAILOVER.md, "How the members agree"): while a home is live its COMMITs come in order on
// its stream; once it is lost, its chunks are committed by the survivors that own them, each on
// its own lane and at its own pace, so out of order. The ledger keeps, per (home, stream), the
// watermark (the lowest chunk not seen committed: what a FAILOVER carries, and below which the
// retention store may drop what it kept) and the chunks above it seen committed (each resent
// as a COMMITTED marker). Socket-free (tests/client/commit_ledger_test.cc); one lock, taken per
// COMMIT frame.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "core/cluster/dead_set.h"
#include "core/common/status.h"
#include "core/wire/frame.h"

namespace rs::client {

class CommitLedger {
 public:
  CommitLedger(uint32_t reducers, uint32_t streams);

  // Every chunk of (home, stream) up to `chunk` is committed: a COMMIT on the home's stream.
  // Returns the new watermark when it rose.
  std::optional<uint64_t> streamCommitted(uint32_t home, uint32_t stream, uint64_t chunk);
  // Every chunk of (home, stream) up to `chunk` that `owner` owns under `dead` is committed: a
  // COMMIT on owner's lane (home, stream). Returns the new watermark when it rose. `numbered`:
  // the chunks this member has numbered are those below it, and a commit covers only chunks
  // that every member sent, so a `chunk` at or past it is an error (from the network: it would
  // walk the line that far, or forever where it wraps), as is a chunk not of (home, stream).
  Result<std::optional<uint64_t>> laneCommitted(uint32_t home, uint32_t stream, uint32_t owner,
                                                const cluster::DeadSet& dead, uint64_t chunk,
                                                uint64_t numbered);

  // The lowest chunk of (home, stream) not seen committed.
  uint64_t watermark(uint32_t home, uint32_t stream) const;
  // A chunk of a lost home went to a lane with this REDUCE header: remembered until the
  // watermark passes it, so that, seen committed out of order, it can be resent as a COMMITTED
  // marker after another loss (committedAbove).
  void sentOnLane(const wire::FrameHeader& header);
  // The headers of the chunks of (home, stream) seen committed above its watermark.
  std::vector<wire::FrameHeader> committedAbove(uint32_t home, uint32_t stream) const;
  // Whether `chunk` (of its home and stream) was seen committed.
  bool committed(uint64_t chunk) const;

 private:
  struct Line {
    uint64_t watermark = 0;
    std::set<uint64_t> above;  // seen committed, above the watermark
    std::map<uint64_t, wire::FrameHeader> onLanes;  // sentOnLane's, at or above the watermark
  };
  Line& lineOf(uint32_t home, uint32_t stream) { return lines_[home * streams_ + stream]; }
  // Moves the watermark over the chunks of `above` that follow it; true when it moved.
  bool advance(Line& line);

  const uint32_t reducers_;
  const uint32_t streams_;
  const uint64_t step_;  // R x K: the distance between two chunks of one (home, stream)
  mutable std::mutex mu_;
  std::vector<Line> lines_;
};

}  // namespace rs::client
