// The reducer's check of a gRPC call's proof (core/wire/call_proof.h): which job made the call,
// or the pool's own secret (the operator), or nothing at all on a reducer without a secret.
// Refuses a missing or wrong proof, a timestamp outside the window and a nonce seen within it
// (replay_cache.h: a share per caller, so that one job's calls cannot lock out the others or the
// operator), each with a message that names what was wrong.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "core/common/status.h"
#include "core/wire/call_proof.h"
#include "server/replay_cache.h"

namespace rs::server {

// Who made a call, as its proof says.
struct Caller {
  bool open = false;  // the reducer has no secret: nothing was checked, anyone may do anything
  std::string job;    // the proven job; empty with !open: the pool's own secret (the operator)
  bool isPool() const { return open || job.empty(); }
};

using wire::CallMetadata;

class CallAuthenticator {
 public:
  // An empty secret: every call is admitted as an open Caller.
  explicit CallAuthenticator(std::string poolSecret,
                             std::chrono::milliseconds window = std::chrono::minutes(5),
                             ReplayCache::Shares shares = {});

  // `method` is the full gRPC name ("/rs.v1.ReductionServer/Drain"), `request` the request as
  // serialized; `nowMs` the Unix time in ms. A refusal is a FAILED_PRECONDITION (the caller
  // answers UNAUTHENTICATED), or RESOURCE_EXHAUSTED when the caller's share of the replay cache
  // is full.
  Result<Caller> check(const CallMetadata& call, std::string_view method,
                       std::string_view request, int64_t nowMs);

 private:
  const std::string secret_;
  const std::chrono::milliseconds window_;
  std::mutex mu_;
  // A timestamp may be a window ahead of this clock, and is then good for two windows.
  ReplayCache seen_;  // guarded by mu_
};

}  // namespace rs::server
