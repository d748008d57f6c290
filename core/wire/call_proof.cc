#include "core/wire/call_proof.h"

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

}  // namespace rs::wire
