// The proof every gRPC call to a reducer with a job secret carries (proto/WIRE.md, "Control
// plane"): per-call metadata naming the caller's job (optional), a timestamp and a fresh nonce,
// and HMAC-SHA256 under the job's key (or the pool's secret) over
//   "RSCALL1\0" || method || "\0" || job || "\0" || decimal timestamp || "\0" || nonce (32) ||
//   the serialized request
// so a proof is bound to one method, one request and one moment, and the server refuses it
// outside a time window or a second time within it. No I/O and no gRPC here: the client's
// attachCallProof and the server's CallAuthenticator put it on and read it off the call.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/common/status.h"
#include "core/wire/auth.h"

namespace rs::wire {

// Metadata keys (gRPC lower-cases keys; none ends in -bin, so values are printable text).
inline constexpr std::string_view kCallJobKey = "rs-job";              // a job name, or absent
inline constexpr std::string_view kCallTimestampKey = "rs-timestamp";  // Unix time, ms, decimal
inline constexpr std::string_view kCallNonceKey = "rs-nonce";          // 64 hex digits
inline constexpr std::string_view kCallProofKey = "rs-proof";          // 64 hex digits

AuthProof callProof(std::string_view key, std::string_view method, std::string_view job,
                    int64_t timestampMs, const Nonce& nonce, std::string_view request);

inline constexpr int64_t kMaxCallTimestampMs = 1'000'000'000'000'000;

// The rs-* metadata of one call, as it arrived from the network (absent keys are nullopt).
struct CallMetadata {
  std::optional<std::string> job, timestamp, nonce, proof;
};

// What that metadata says, once every field is well formed.
struct CallClaim {
  std::string job;  // empty: no rs-job (the pool's own secret)
  int64_t timestampMs = 0;
  Nonce nonce{};
  AuthProof proof{};
};

// Decodes a call's metadata: all of rs-timestamp, rs-nonce and rs-proof present, rs-job (if
// present) a job name, the timestamp decimal, nonce and proof 64 hex digits each. A refusal is
// a FAILED_PRECONDITION naming the field. The proof itself is not checked here.
Result<CallClaim> decodeCallMetadata(const CallMetadata& call);

}  // namespace rs::wire
