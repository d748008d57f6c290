// Authentication of a data connection with the job secret: the bytes of the proof and the
// crypto behind it (Nettle's HMAC-SHA256 and constant-time compare, the kernel's getrandom).
// Nettle rather than OpenSSL: a small library with no global state that every Debian release
// ships as a static archive, so the portable NCCL plugin links it inside (docker/README.md).
// No I/O: the two handshakes, server/handshake.h and client/handshake.h, run the exchange
// (proto/WIRE.md, "Authentication").
//
// The reducer opens every connection with a CHALLENGE carrying a fresh random nonce. The worker
// answers in its HELLO with a nonce of its own and
//   HMAC-SHA256(secret, "RSAUTH2\0" || reducer nonce || HELLO header (72 bytes) ||
//               HELLO payload with the proof zeroed (216 bytes))
// so the proof is bound to this connection's challenge and to everything the HELLO says: the
// group, the rank, the stream index and counts, the timeout, the worker's nonce and its job. A proof
// taken from one connection is worthless on another, and the secret never crosses the wire.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/common/status.h"
#include "core/wire/frame.h"

namespace rs::wire {

using Digest = std::array<uint8_t, 32>;  // an HMAC-SHA256 output

// HMAC-SHA256 (RFC 2104, FIPS 180-4) of `size` bytes under `key`.
Digest hmacSha256(std::string_view key, const uint8_t* data, size_t size);

// kNonceSize bytes from the kernel's CSPRNG (getrandom); an error only if it fails.
Result<Nonce> randomNonce();

// The proof for `header` + `hello` (its authProof ignored) answering `reducerNonce`.
AuthProof helloProof(std::string_view secret, const Nonce& reducerNonce,
                     const FrameHeader& header, const HelloPayload& hello);

// Compares in constant time (Nettle's memeql_sec), so that timing tells an attacker nothing about
// how many leading bytes of a guess were right.
bool proofsEqual(const AuthProof& a, const AuthProof& b);

// Lower-case hex of 32 bytes, and back (nullopt unless exactly 64 hex digits).
std::string toHex(const Digest& bytes);
std::optional<Digest> fromHex(std::string_view text);

// True for an all-zero proof: the worker has no secret.
bool isEmptyProof(const AuthProof& proof);

// A standing pool that serves several jobs gives each its own secret, derived from the pool's
// secret and the job's name, so that a job's secret tells nothing about the pool's or another
// job's: hex(HMAC-SHA256(poolSecret, "RSJOBKEY1\0" || jobName)), 64 characters. A name is 1..128
// characters of [A-Za-z0-9._-]; anything else is refused with a message naming it.
Result<std::string> deriveJobSecret(std::string_view poolSecret, std::string_view jobName);

// The key that a HELLO or a gRPC call (call_proof.h) naming `jobName` must be proven with, as
// the reducer that holds the pool's secret sees it: the pool's secret itself for no job, else
// the job's derived secret. The reducer's handshake and its call authenticator both take the
// key from here.
Result<std::string> helloKey(std::string_view poolSecret, std::string_view jobName);

}  // namespace rs::wire
