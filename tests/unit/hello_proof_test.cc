// The HELLO proof (core/wire/auth.h): HMAC-SHA256 against RFC 4231's vectors, what the proof
// binds, and the constant-time comparison's answers.
#include <catch2/catch.hpp>

#include <string>

#include "core/wire/auth.h"
#include "tests/support/hex_of.h"

namespace rs::wire {
namespace {

using test::hexOf;

Digest hmacOf(const std::string& key, const std::string& data) {
  return hmacSha256(key, reinterpret_cast<const uint8_t*>(data.data()), data.size());
}

}  // namespace

TEST_CASE("auth: HMAC-SHA256 matches RFC 4231's test vectors") {
  // Test case 1: a 20-byte key.
  CHECK(hexOf(hmacOf(std::string(20, '\x0b'), "Hi There")) ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // Test case 2: a key shorter than the output.
  CHECK(hexOf(hmacOf("Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 6: a key longer than SHA-256's block, hashed first.
  CHECK(hexOf(hmacOf(std::string(131, '\xaa'),
                     "Test Using Larger Than Block-Size Key - Hash Key First")) ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

namespace {
constexpr std::string_view kSecret = "0123456789abcdef-job-secret";

struct Hello {
  FrameHeader header;
  HelloPayload payload;
};

Hello sampleHello() {
  Hello h;
  h.header.type = FrameType::kHello;
  h.header.group = GroupId{0x1111, 0x2222};
  h.header.rank = 3;
  h.header.payloadLength = kHelloPayloadSize;
  h.payload.worldSize = 8;
  h.payload.streamIndex = 1;
  h.payload.streamCount = 4;
  h.payload.reducerIndex = 2;
  h.payload.reducerCount = 3;
  h.payload.timeoutMs = 60000;
  for (size_t i = 0; i < kNonceSize; ++i) h.payload.clientNonce[i] = static_cast<uint8_t>(i);
  return h;
}

Nonce sampleNonce() {
  Nonce n{};
  for (size_t i = 0; i < n.size(); ++i) n[i] = static_cast<uint8_t>(0xC0 ^ i);
  return n;
}
}  // namespace

TEST_CASE("auth: the proof binds the challenge, the secret and every field of the HELLO") {
  const Hello base = sampleHello();
  const Nonce nonce = sampleNonce();
  const AuthProof proof = helloProof(kSecret, nonce, base.header, base.payload);
  CHECK_FALSE(isEmptyProof(proof));
  CHECK(proofsEqual(proof, helloProof(kSecret, nonce, base.header, base.payload)));

  // Its own proof field is not part of what it signs.
  Hello signed_ = base;
  signed_.payload.authProof = proof;
  CHECK(proofsEqual(proof, helloProof(kSecret, nonce, signed_.header, signed_.payload)));

  // Another secret, or another connection's challenge (a replay), gives another proof.
  CHECK_FALSE(proofsEqual(proof, helloProof("0123456789abcdef-job-secreT", nonce, base.header,
                                            base.payload)));
  for (size_t i : {size_t{0}, kNonceSize - 1}) {
    Nonce other = nonce;
    other[i] ^= 0x01;
    CHECK_FALSE(proofsEqual(proof, helloProof(kSecret, other, base.header, base.payload)));
  }

  // Every field the HELLO carries.
  const std::pair<const char*, void (*)(Hello&)> changes[] = {
      {"group.hi", [](Hello& h) { h.header.group = GroupId{0x1112, 0x2222}; }},
      {"group.lo", [](Hello& h) { h.header.group = GroupId{0x1111, 0x2223}; }},
      {"rank", [](Hello& h) { h.header.rank = 4; }},
      {"worldSize", [](Hello& h) { h.payload.worldSize = 9; }},
      {"streamIndex", [](Hello& h) { h.payload.streamIndex = 2; }},
      {"streamCount", [](Hello& h) { h.payload.streamCount = 5; }},
      {"reducerIndex", [](Hello& h) { h.payload.reducerIndex = 1; }},
      {"reducerCount", [](Hello& h) { h.payload.reducerCount = 4; }},
      {"timeoutMs", [](Hello& h) { h.payload.timeoutMs = 60001; }},
      {"clientNonce", [](Hello& h) { h.payload.clientNonce[31] ^= 0x80; }},
      {"jobName", [](Hello& h) { h.payload.jobName = "job-b"; }},
  };
  for (const auto& [name, change] : changes) {
    INFO(name);
    Hello h = base;
    change(h);
    CHECK_FALSE(proofsEqual(proof, helloProof(kSecret, nonce, h.header, h.payload)));
  }
}

TEST_CASE("auth: the comparison tells equal from unequal at every byte") {
  AuthProof a{};
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 3);
  CHECK(proofsEqual(a, a));
  for (size_t i = 0; i < a.size(); ++i) {
    AuthProof b = a;
    b[i] ^= 0x40;
    CHECK_FALSE(proofsEqual(a, b));
  }
  CHECK(isEmptyProof(AuthProof{}));
  AuthProof one{};
  one[31] = 1;
  CHECK_FALSE(isEmptyProof(one));
}

TEST_CASE("auth: nonces are fresh") {
  auto a = randomNonce();
  auto b = randomNonce();
  REQUIRE(a.isOk());
  REQUIRE(b.isOk());
  CHECK(*a != *b);
}

}  // namespace rs::wire

namespace rs::wire {

TEST_CASE("auth: a job's secret is derived from the pool's secret and the job's name") {
  const std::string pool = "pool-secret-0123456789abcdef";
  auto a = deriveJobSecret(pool, "team-a.train-7");
  REQUIRE(a.isOk());
  // Python: hmac.new(pool, b"RSJOBKEY1\0" + b"team-a.train-7", hashlib.sha256).hexdigest()
  CHECK(*a == "363d62f92d59dd89088a09a469c5b6bd1661541c6d16365ccca083de00df4b45");
  CHECK(*deriveJobSecret(pool, "team-a.train-8") != *a);
  CHECK(*deriveJobSecret("pool-secret-0123456789abcdeF", "team-a.train-7") != *a);
  for (const char* bad : {"", "has space", "slash/name", "nul\x01"}) {
    INFO(bad);
    auto r = deriveJobSecret(pool, bad);
    REQUIRE_FALSE(r.isOk());
    CHECK(r.status().message().find("job name") != std::string::npos);
  }
  CHECK_FALSE(deriveJobSecret(pool, std::string(129, 'j')).isOk());
  CHECK(deriveJobSecret(pool, std::string(128, 'j')).isOk());
}

TEST_CASE("auth: a HELLO is proven with the pool's secret, or with its job's derived one") {
  const std::string pool = "pool-secret-0123456789abcdef";
  CHECK(*helloKey(pool, "") == pool);
  CHECK(*helloKey(pool, "team-a.train-7") == *deriveJobSecret(pool, "team-a.train-7"));
  CHECK_FALSE(helloKey(pool, "bad name").isOk());
}

}  // namespace rs::wire
