#include "core/wire/auth.h"

#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rs::wire {
namespace {
// Names what the MAC is for and in which version, so that it can never be confused with
// another use of the same secret (a later handshake version, gRPC call proofs).
constexpr uint8_t kProofLabel[8] = {'R', 'S', 'A', 'U', 'T', 'H', '2', 0};
}  // namespace

Digest hmacSha256(std::string_view key, const uint8_t* data, size_t size) {
  hmac_sha256_ctx ctx;
  hmac_sha256_set_key(&ctx, key.size(), reinterpret_cast<const uint8_t*>(key.data()));
  hmac_sha256_update(&ctx, size, data);
  Digest out{};
  hmac_sha256_digest(&ctx, out.size(), out.data());
  return out;
}

Result<Nonce> randomNonce() {
  Nonce n{};
  // The kernel's CSPRNG; it blocks only until the pool is first seeded at boot. Requests this
  // small are never cut short once seeded, but a signal can interrupt the wait for seeding.
  size_t filled = 0;
  while (filled < n.size()) {
    const ssize_t got = getrandom(n.data() + filled, n.size() - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      return internalError(std::string("the random number generator failed (getrandom: ") +
                           std::strerror(errno) + ")");
    filled += static_cast<size_t>(got);
  }
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
  return memeql_sec(a.data(), b.data(), a.size()) != 0;
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
