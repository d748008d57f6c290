#include "server/call_auth.h"

#include <fmt/format.h>

#include "core/wire/call_proof.h"
#include "core/wire/frame.h"

namespace rs::server {

CallAuthenticator::CallAuthenticator(std::string poolSecret, std::chrono::milliseconds window,
                                     ReplayCache::Shares shares)
    : secret_(std::move(poolSecret)), window_(window), seen_(2 * window, shares) {}

Result<Caller> CallAuthenticator::check(const CallMetadata& call, std::string_view method,
                                        std::string_view request, int64_t nowMs) {
  if (secret_.empty()) return Caller{true, {}};
  auto claim = wire::decodeCallMetadata(call);
  if (!claim) return claim.status();
  const std::string& job = claim->job;
  // The proof first: only a holder of the key may learn about its clock or take a place in the
  // cache (and then only in its own job's share).
  auto key = wire::helloKey(secret_, job);
  if (!key) return key.status();
  if (!wire::proofsEqual(
          wire::callProof(*key, method, job, claim->timestampMs, claim->nonce, request),
          claim->proof))
    return failedPrecondition(
        job.empty() ? std::string("the call's proof is wrong: a different secret, or a changed "
                                  "request")
                    : "the call's proof is wrong for job '" + job +
                          "': not that job's secret, or a changed request");
  const int64_t skew = claim->timestampMs - nowMs;
  if (skew > window_.count() || -skew > window_.count())
    return failedPrecondition(fmt::format(
        "the call's timestamp is {} s away from this reducer's clock (at most {} s): a stale or "
        "replayed call, or clocks that disagree",
        skew / 1000, window_.count() / 1000));
  std::lock_guard lock(mu_);
  auto fresh = seen_.remember(job, claim->nonce, std::chrono::steady_clock::now());
  if (!fresh) return fresh.status();
  if (!*fresh) return failedPrecondition("the call's nonce was already used: a replayed call");
  return Caller{false, job};
}

}  // namespace rs::server
