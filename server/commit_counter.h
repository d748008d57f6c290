// The commit of one stream of one group on its reducer thread (proto/FAILOVER.md, "What each
// member keeps"): how far this reducer has sent results on the stream, how far each member has
// acknowledged them (RECEIVED), and the commit watermark, the highest chunk every member has
// acknowledged, which goes back to every member as COMMIT. After it no member needs anyone's
// copy of those results, so the members drop what they kept of them.
//
// Chunks finish in order on a stream, and every member's stream s of a group is served by one
// io thread, so the commit is a counter beside the stream's slots: no lock, no work on another
// thread. Its state is a watermark per member (charged with the group's bookkeeping,
// memory_budget.h), never a list of chunks, so a member that stops acknowledging costs the
// reducer nothing more; its peers then simply get no COMMIT. Socket-free
// (tests/server/commit_counter_test.cc).
//
// A lane (proto/WIRE.md, "Failover") counts the same way with two differences (Bound::kEntries):
// a member acknowledges a resent chunk whose entry was whole as soon as it sent it, before the
// survivor has resolved it, so a RECEIVED is bounded by the entries read from that member (its
// caller checks that), not by the results sent, and the commit is the lower of the members'
// floor and the chunks resolved; and the chunks below the lane's agreed point count as
// committed at once (commitThrough).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/common/status.h"

namespace rs::server {

class CommitCounter {
 public:
  // What bounds a member's RECEIVED: the results sent (a stream), or the entries it sent (a
  // lane, where the caller checks it).
  enum class Bound { kResults, kEntries };
  explicit CommitCounter(uint32_t worldSize, Bound bound = Bound::kResults);

  // The last RESULT part of `chunk` was queued to every member that gets one (on a lane: the
  // chunk is resolved, with a result or none needed). Chunk numbers only grow (chunks finish in
  // order on a stream or a lane).
  void resultSent(uint64_t chunk);
  // Member `rank` (below the world size) holds every result up to `chunk` (its RECEIVED).
  // Refused, with the reason, when (Bound::kResults) no result up to `chunk` was sent yet, or
  // when `chunk` is not above the member's previous RECEIVED (its watermark only grows).
  Status received(uint32_t rank, uint64_t chunk);
  // A lane's agreed point: every chunk up to `chunk` is committed whatever the members said.
  void commitThrough(uint64_t chunk);
  // The commit watermark, when it rose since it was last taken: every member holds every
  // result up to it.
  std::optional<uint64_t> takeCommit();

 private:
  void findFloor();

  const Bound bound_;
  std::vector<uint64_t> acked_;  // per rank: its RECEIVED watermark, once it sent one
  std::vector<bool> hasAcked_;
  uint32_t silent_;  // members that have not acknowledged anything yet
  // Once every member has: the lowest watermark and how many members are at it, so that a
  // RECEIVED costs O(1) and only the last member to leave the floor looks at all W.
  uint64_t floor_ = 0;
  uint32_t atFloor_ = 0;
  std::optional<uint64_t> sent_;       // the highest chunk whose result went out in full
  std::optional<uint64_t> committed_;  // the last watermark taken
  std::optional<uint64_t> through_;    // commitThrough's
};

}  // namespace rs::server
