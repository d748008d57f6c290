// The dead set D of a group (proto/FAILOVER.md, "Terms"): the reducers of the job's list that
// the group no longer uses. Members learn of losses in different orders and from different
// peers; D is a plain set, so the union of what they learned is the same whatever the order,
// and everything that follows from it (chunkOwner, chunkRoute) is a function of D alone.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "core/common/status.h"

namespace rs::cluster {

class DeadSet {
 public:
  // The largest reducer list a group may use with failover: D is a fixed-size bitset, so it
  // copies without allocating and a frame that carries it has a bounded size.
  static constexpr uint32_t kMaxReducers = 1024;

  // No reducer dead, of a list of `reducers` (1..kMaxReducers).
  static Result<DeadSet> none(uint32_t reducers);
  // The reducers `dead` (in any order, repeats allowed) of a list of `reducers`: what a
  // member or a frame names. Errors as none() and add().
  static Result<DeadSet> of(uint32_t reducers, std::span<const uint32_t> dead);

  // Marks `reducer` dead; an index past the list is an error (it names a reducer the group
  // does not have). Marking a dead reducer again changes nothing.
  Status add(uint32_t reducer);
  // D = D u other: what two members learned, merged. The lists must be the same length.
  Status unite(const DeadSet& other);

  // False past the list (such a reducer is not in the group's list, hence not in D).
  bool contains(uint32_t reducer) const {
    return reducer < reducers_ && reducer < kMaxReducers &&  // the second for the compiler
           (words_[reducer / 64] >> (reducer % 64) & 1) != 0;
  }
  uint32_t reducers() const { return reducers_; }
  uint32_t size() const { return dead_; }
  bool empty() const { return dead_ == 0; }
  uint32_t liveCount() const { return reducers_ - dead_; }
  // Nothing is left to move a chunk to: the group cannot go on (today's clear error).
  bool allDead() const { return dead_ == reducers_; }
  // How many dead reducers have a lower index (where `reducer`'s lanes are numbered, lane.h).
  uint32_t deadBelow(uint32_t reducer) const;
  // The dead reducer with `n` dead below it (n < size()).
  uint32_t nthDead(uint32_t n) const;
  // "none", or the dead indices in order: "2,5,7".
  std::string toString() const;

  bool operator==(const DeadSet& other) const = default;

 private:
  explicit DeadSet(uint32_t reducers) : reducers_(reducers) {}

  uint32_t reducers_ = 0;
  uint32_t dead_ = 0;
  std::array<uint64_t, kMaxReducers / 64> words_{};
};

}  // namespace rs::cluster
