#include "core/cluster/dead_set.h"

#include <algorithm>
#include <bit>

namespace rs::cluster {

Result<DeadSet> DeadSet::none(uint32_t reducers) {
  if (reducers == 0 || reducers > kMaxReducers)
    return invalidArgument("a group's reducer list has " + std::to_string(reducers) +
                           " reducers; failover handles 1 to " + std::to_string(kMaxReducers));
  return DeadSet(reducers);
}

Result<DeadSet> DeadSet::of(uint32_t reducers, std::span<const uint32_t> dead) {
  Result<DeadSet> set = none(reducers);
  if (!set) return set;
  for (uint32_t r : dead)
    if (Status s = set->add(r); !s.isOk()) return s;
  return set;
}

Status DeadSet::add(uint32_t reducer) {
  if (reducer >= reducers_)
    return invalidArgument("reducer " + std::to_string(reducer) +
                           " declared lost, but the list has " + std::to_string(reducers_) +
                           " reducers (0.." + std::to_string(reducers_ - 1) + ")");
  if (contains(reducer)) return Status::ok();
  words_[reducer / 64] |= uint64_t{1} << (reducer % 64);
  ++dead_;
  return Status::ok();
}

Status DeadSet::unite(const DeadSet& other) {
  if (other.reducers_ != reducers_)
    return invalidArgument("a dead set over " + std::to_string(other.reducers_) +
                           " reducers cannot join one over " + std::to_string(reducers_) +
                           " (every member must use the same reducer list)");
  dead_ = 0;
  for (size_t w = 0; w < words_.size(); ++w) {
    words_[w] |= other.words_[w];
    dead_ += static_cast<uint32_t>(std::popcount(words_[w]));
  }
  return Status::ok();
}

uint32_t DeadSet::deadBelow(uint32_t reducer) const {
  // No bit at or past reducers_ is ever set, so counting up to the index (capped) is enough.
  const uint32_t end = std::min(reducer, kMaxReducers);
  uint32_t n = 0;
  for (uint32_t w = 0; w < end / 64; ++w) n += static_cast<uint32_t>(std::popcount(words_[w]));
  if (end % 64 != 0)
    n += static_cast<uint32_t>(std::popcount(words_[end / 64] & ((uint64_t{1} << (end % 64)) - 1)));
  return n;
}

uint32_t DeadSet::nthDead(uint32_t n) const {
  for (uint32_t w = 0; w < words_.size(); ++w) {
    const auto here = static_cast<uint32_t>(std::popcount(words_[w]));
    if (n >= here) {
      n -= here;
      continue;
    }
    uint64_t bits = words_[w];
    for (; n > 0; --n) bits &= bits - 1;  // drop the n lowest
    return w * 64 + static_cast<uint32_t>(std::countr_zero(bits));
  }
  return reducers_;  // n >= size(): no such reducer
}

std::string DeadSet::toString() const {
  if (empty()) return "none";
  std::string out;
  for (uint32_t r = 0; r < reducers_; ++r) {
    if (!contains(r)) continue;
    if (!out.empty()) out += ",";
    out += std::to_string(r);
  }
  return out;
}

}  // namespace rs::cluster
