// The nonces of the gRPC calls a reducer admitted, remembered while their timestamps could still
// pass (two time windows), so that a call is refused the second time (call_auth.h).
//
// Kept per caller, each within its own share: one job's calls, however many, can fill only that
// job's share, and another job, or the operator (the pool's own secret), still gets in. The
// pool's identity has a share of its own that no job's calls touch. Jobs together stay within a
// total, so that memory is bounded whatever the number of jobs: a caller's nonces take about
// 130 bytes each, so at most about (pool + jobsTotal) x 130 bytes (25 MB by default). Only
// a caller whose proof checked is remembered (the caller's business), so naming jobs without
// their secrets creates nothing here; and a job's secret proves that job alone, so filling the
// jobs' total takes several jobs (or the operator, who holds every job's key).
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <set>
#include <string>

#include "core/common/status.h"
#include "core/wire/auth.h"

namespace rs::server {

class ReplayCache {
 public:
  using Clock = std::chrono::steady_clock;

  struct Shares {
    size_t pool = 65536;       // the pool's own identity (the operator; a job-less worker)
    size_t job = 16384;        // each job
    size_t jobsTotal = 131072;  // all jobs together: eight jobs at their whole share
  };

  // A nonce is remembered for `keep` after its call.
  ReplayCache(Clock::duration keep, Shares shares) : keep_(keep), shares_(shares) {}

  // Remembers `nonce` of a call by `job` (empty: the pool's identity) made at `now`: true if it
  // is new, false if that caller used it already (a replay). RESOURCE_EXHAUSTED, naming whose
  // share is full, when the caller's share or the jobs' total holds only nonces still current.
  Result<bool> remember(const std::string& job, const wire::Nonce& nonce, Clock::time_point now);

  size_t callers() const { return seen_.size(); }  // callers with a nonce still remembered
  size_t size() const { return expiry_.size(); }   // nonces remembered, every caller's

 private:
  using Seen = std::map<std::string, std::set<wire::Nonce>>;  // caller -> its current nonces
  struct Expiry {
    Clock::time_point at;
    Seen::iterator caller;  // stable: an entry goes only once its last nonce has
    wire::Nonce nonce;
  };
  void forgetExpired(Clock::time_point now);

  const Clock::duration keep_;
  const Shares shares_;
  Seen seen_;
  std::deque<Expiry> expiry_;  // in the order remembered, which is the order they expire
  size_t jobNonces_ = 0;       // nonces of named jobs (against shares_.jobsTotal)
};

}  // namespace rs::server
