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
#include <string>
#include <string_view>

#include "core/wire/auth.h"

namespace rs::wire {

// Metadata keys (gRPC lower-cases keys; none ends in -bin, so values are printable text).
inline constexpr std::string_view kCallJobKey = "rs-job";              // a job name, or absent
inline constexpr std::string_view kCallTimestampKey = "rs-timestamp";  // Unix time, ms, decimal
inline constexpr std::string_view kCallNonceKey = "rs-nonce";          // 64 hex digits
inline constexpr std::string_view kCallProofKey = "rs-proof";          // 64 hex digits

AuthProof callProof(std::string_view key, std::string_view method, std::string_view job,
                    int64_t timestampMs, const Nonce& nonce, std::string_view request);

}  // namespace rs::wire
