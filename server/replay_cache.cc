#include "server/replay_cache.h"

#include <fmt/format.h>

namespace rs::server {

Result<bool> ReplayCache::remember(const std::string& job, const wire::Nonce& nonce,
                                   Clock::time_point now) {
  forgetExpired(now);
  auto mine = seen_.find(job);
  if (mine != seen_.end() && mine->second.contains(nonce)) return false;
  const size_t held = mine == seen_.end() ? 0 : mine->second.size();
  const auto minutes = std::chrono::duration_cast<std::chrono::minutes>(keep_).count();
  if (job.empty() && held >= shares_.pool)
    return resourceExhausted(fmt::format(
        "the pool's secret made {} calls within the last {} min, its whole share of this "
        "reducer's replay cache; try again later",
        held, minutes));
  if (!job.empty() && held >= shares_.job)
    return resourceExhausted(fmt::format(
        "job '{}' made {} calls within the last {} min, its whole share of this reducer's "
        "replay cache; try again later",
        job, held, minutes));
  if (!job.empty() && jobNonces_ >= shares_.jobsTotal)
    return resourceExhausted(fmt::format(
        "the jobs on this reducer made {} calls within the last {} min, all that its replay "
        "cache keeps for jobs together; job '{}' may try again later",
        jobNonces_, minutes, job));
  if (mine == seen_.end()) mine = seen_.emplace(job, std::set<wire::Nonce>{}).first;
  mine->second.insert(nonce);
  if (!job.empty()) ++jobNonces_;
  expiry_.push_back({now + keep_, mine, nonce});
  return true;
}

void ReplayCache::forgetExpired(Clock::time_point now) {
  while (!expiry_.empty() && expiry_.front().at <= now) {
    const Expiry& e = expiry_.front();
    e.caller->second.erase(e.nonce);
    if (!e.caller->first.empty()) --jobNonces_;
    if (e.caller->second.empty()) seen_.erase(e.caller);  // no other entry names it
    expiry_.pop_front();
  }
}

}  // namespace rs::server
