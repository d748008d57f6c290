#include "core/failover/rank_tally.h"

#include <algorithm>

namespace rs::failover {

void RankTally::add(uint32_t rank, uint64_t value) {
  have_[rank] = true;
  ++received_;
  largest_ = std::max(largest_, value);
}

std::string RankTally::missingRanks() const {
  std::string out;
  for (size_t r = 0; r < have_.size(); ++r)
    if (!have_[r]) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

}  // namespace rs::failover
