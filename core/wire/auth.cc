#include "core/wire/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>

namespace rs::wire {
namespace {
// Names what the MAC is for and in which version, so that it can never be confused with
// another use of the same secret (a later handshake version, gRPC call proofs).
constexpr uint8_t kProofLabel[8] = {'R', 'S', 'A', 'U', 'T', 'H', '2', 0};
}  // namespace

Digest hmacSha256(std::string_view key, const uint8_t* data, size_t size) {
  Digest out{};
  unsigned int length = 0;
  // HMAC() with SHA-256 fails only on allocation failure; the digest stays zero then, which
  // never matches a proof computed by a peer that did succeed.
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), data, size, out.data(), &length);
  return out;
}

Result<Nonce> randomNonce() {
  Nonce n{};
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1)
    return internalError("the random number generator failed (OpenSSL RAND_bytes)");
  return n;
}

AuthProof helloProof(std::string_view secret, const Nonce& reducerNonce,
                     const FrameHeader& header, const HelloPayload& hello) {
  HelloPayload unsigned_ = hello;
  unsigned_.authProof = {};
  const HeaderBytes headerBytes = encodeHeader(header);
  const auto payloadBytes = encodeHello(unsigned_);
  std::array<uint8_t, sizeof(kProofLabel) + kNonceSize + kHeaderSize + kHelloPayloadSize> m{};
  auto at = std::copy(std::begin(kProofLabel), std::end(kProofLabel), m.begin());
  at = std::copy(reducerNonce.begin(), reducerNonce.end(), at);
  at = std::copy(headerBytes.begin(), headerBytes.end(), at);
  std::copy(payloadBytes.begin(), payloadBytes.end(), at);
  return hmacSha256(secret, m.data(), m.size());
}

bool proofsEqual(const AuthProof& a, const AuthProof& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool isEmptyProof(const AuthProof& proof) {
  return std::all_of(proof.begin(), proof.end(), [](uint8_t b) { return b == 0; });
}

std::string toHex(const Digest& bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes.size());
  for (uint8_t b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

std::optional<Digest> fromHex(std::string_view text) {
  Digest out{};
  if (text.size() != 2 * out.size()) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = nibble(text[2 * i]), lo = nibble(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return out;
}

Result<std::string> deriveJobSecret(std::string_view poolSecret, std::string_view jobName) {
  if (!isValidJobName(jobName))
    return invalidArgument("job name '" + std::string(jobName.substr(0, kMaxJobNameBytes)) +
                           "': expected 1..128 characters of A-Z a-z 0-9 . _ -");
  constexpr std::string_view kLabel("RSJOBKEY1\0", 10);
  std::string message(kLabel);
  message += jobName;
  const Digest d = hmacSha256(poolSecret, reinterpret_cast<const uint8_t*>(message.data()),
                              message.size());
  return toHex(d);
}

Result<std::string> helloKey(std::string_view poolSecret, std::string_view jobName) {
  if (jobName.empty()) return std::string(poolSecret);
  return deriveJobSecret(poolSecret, jobName);
}

}  // namespace rs::wire
