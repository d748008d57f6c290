// libFuzzer target: the rs-* metadata of a gRPC call, as any client can send it to a reducer
// with a secret (core/wire/call_proof.h, decodeCallMetadata). Whatever the bytes, decoding
// returns a Status naming a field, never crashes or overflows; what it accepts is exactly what
// it promised (a job name or none, a timestamp in range, nonce and proof that print back to the
// hex they came from); and a claim's proof is checked against one computed for it.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/wire/call_proof.h"
#include "core/wire/frame.h"

namespace {

using namespace rs::wire;

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "call_metadata_fuzz: %s\n", what);
    std::abort();
  }
}

bool lowerHex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The first byte says which keys are present; the rest is cut into four values at 0xFF bytes.
  if (size == 0) return 0;
  const uint8_t present = data[0];
  std::string fields[4];
  size_t field = 0;
  for (size_t i = 1; i < size; ++i) {
    if (data[i] == 0xFF && field < 3) {
      ++field;
      continue;
    }
    fields[field].push_back(static_cast<char>(data[i]));
  }
  CallMetadata call;
  if (present & 1) call.job = fields[0];
  if (present & 2) call.timestamp = fields[1];
  if (present & 4) call.nonce = fields[2];
  if (present & 8) call.proof = fields[3];

  auto claim = decodeCallMetadata(call);
  if (!claim) {
    require(!claim.status().message().empty(), "a refusal without a message");
    return 0;
  }
  require(call.timestamp && call.nonce && call.proof, "accepted with a key missing");
  require(claim->job.empty() ? (!call.job || call.job->empty()) : isValidJobName(claim->job),
          "accepted a job that is not a job name");
  require(claim->timestampMs >= 0 && claim->timestampMs <= kMaxCallTimestampMs,
          "accepted a timestamp out of range");
  // Hex is read case-insensitively; what was accepted prints back to it.
  std::string nonceText = *call.nonce, proofText = *call.proof;
  for (char& c : nonceText) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (char& c : proofText) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  require(lowerHex(toHex(claim->nonce)) && toHex(claim->nonce) == nonceText,
          "the nonce does not print back to its hex");
  require(toHex(claim->proof) == proofText, "the proof does not print back to its hex");
  // The proof computed for this claim matches itself and not a claim one field away.
  const AuthProof p = callProof("fuzz-secret-0123456789", "/m", claim->job, claim->timestampMs,
                                claim->nonce, "request");
  require(proofsEqual(p, callProof("fuzz-secret-0123456789", "/m", claim->job,
                                   claim->timestampMs, claim->nonce, "request")),
          "a call proof is not deterministic");
  require(!proofsEqual(p, callProof("fuzz-secret-0123456789", "/m", claim->job,
                                    claim->timestampMs + 1, claim->nonce, "request")),
          "the call proof ignores the timestamp");
  return 0;
}
