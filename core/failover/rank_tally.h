// One answer from each member of a group, and the largest: what a lane's agreed point
// (agreed_point.h: the members' commit watermarks) and a restarted reducer's rejoin point
// (rejoin_point.h: their next chunks) both tally. Each of those keeps its own rule for what an
// answer may be and its own words for a refusal; the counting is written here once.
// Socket-free (tests/unit/rank_tally_test.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rs::failover {

class RankTally {
 public:
  explicit RankTally(uint32_t worldSize) : have_(worldSize, false) {}

  // Why `rank` may not answer now: outside the group, or it answered already.
  enum class Refusal { kNone, kOutside, kTwice };
  Refusal refusal(uint32_t rank) const {
    if (rank >= have_.size()) return Refusal::kOutside;
    return have_[rank] ? Refusal::kTwice : Refusal::kNone;
  }
  // Counts `rank`'s answer; refusal(rank) must be kNone.
  void add(uint32_t rank, uint64_t value);

  uint32_t worldSize() const { return static_cast<uint32_t>(have_.size()); }
  // Every member answered.
  bool complete() const { return received_ == have_.size(); }
  // The largest answer so far (0 before any).
  uint64_t largest() const { return largest_; }
  // "2,5": the ranks without an answer, in order ("" when none).
  std::string missingRanks() const;

 private:
  std::vector<bool> have_;
  uint32_t received_ = 0;
  uint64_t largest_ = 0;
};

}  // namespace rs::failover
