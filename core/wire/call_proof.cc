#include "core/wire/call_proof.h"

#include <charconv>

#include "core/wire/frame.h"

namespace rs::wire {

AuthProof callProof(std::string_view key, std::string_view method, std::string_view job,
                    int64_t timestampMs, const Nonce& nonce, std::string_view request) {
  // Another label than the HELLO's, so that no call proof can ever pass as a HELLO proof.
  std::string m("RSCALL1\0", 8);
  m.append(method).push_back('\0');
  m.append(job).push_back('\0');
  m.append(std::to_string(timestampMs)).push_back('\0');
  m.append(reinterpret_cast<const char*>(nonce.data()), nonce.size());
  m.append(request);
  return hmacSha256(key, reinterpret_cast<const uint8_t*>(m.data()), m.size());
}

Result<CallClaim> decodeCallMetadata(const CallMetadata& call) {
  if (!call.proof)
    return failedPrecondition(
        "the call carries no proof (rs-proof metadata), and this reducer requires the job "
        "secret");
  if (!call.timestamp || !call.nonce)
    return failedPrecondition("the call's proof lacks its rs-timestamp or rs-nonce metadata");
  CallClaim claim;
  claim.job = call.job.value_or("");
  if (call.job && !isValidJobName(claim.job))
    return failedPrecondition("the call's rs-job is not a job name (1..128 of A-Z a-z 0-9 . _ -)");
  const std::string& t = *call.timestamp;
  if (auto r = std::from_chars(t.data(), t.data() + t.size(), claim.timestampMs);
      r.ec != std::errc() || r.ptr != t.data() + t.size())
    return failedPrecondition("the call's rs-timestamp is not a decimal number of ms");
  // Unix time in ms, before the year 33658: so that the reducer's clock arithmetic cannot overflow.
  if (claim.timestampMs < 0 || claim.timestampMs > kMaxCallTimestampMs)
    return failedPrecondition("the call's rs-timestamp is out of range");
  const auto nonce = fromHex(*call.nonce);
  const auto proof = fromHex(*call.proof);
  if (!nonce || !proof)
    return failedPrecondition("the call's rs-nonce or rs-proof is not 64 hex digits");
  claim.nonce = *nonce;
  claim.proof = *proof;
  return claim;
}

}  // namespace rs::wire
