// The reducer's check of a gRPC call's proof (server/call_auth.h), without gRPC: the key per
// job, the time window on both sides, the replay cache and its bound, and an open reducer.
#include <catch2/catch.hpp>

#include <string>

#include "core/wire/call_proof.h"
#include "server/call_auth.h"
#include "tests/support/nonce_of.h"

namespace rs::server {
namespace {

constexpr const char* kPool = "pool-secret-0123456789abcdef";
constexpr const char* kMethod = "/rs.v1.ReductionServer/JoinGroup";
constexpr int64_t kNow = 1'800'000'000'000;  // ms

using test::nonceOf;

CallMetadata signedCall(const std::string& key, const std::string& job, int64_t ts,
                        const wire::Nonce& nonce, const std::string& request = "req") {
  CallMetadata m;
  if (!job.empty()) m.job = job;
  m.timestamp = std::to_string(ts);
  m.nonce = wire::toHex(nonce);
  m.proof = wire::toHex(wire::callProof(key, kMethod, job, ts, nonce, request));
  return m;
}

std::string refusal(const Result<Caller>& r) {
  REQUIRE_FALSE(r.isOk());
  return r.status().message();
}

}  // namespace

TEST_CASE("call auth: the pool's secret, or a job's derived key, each naming its caller") {
  CallAuthenticator auth(kPool);
  auto pool = auth.check(signedCall(kPool, "", kNow, nonceOf(1)), kMethod, "req", kNow);
  REQUIRE(pool.isOk());
  CHECK(pool->isPool());
  const std::string jobKey = *wire::deriveJobSecret(kPool, "team-a");
  auto job = auth.check(signedCall(jobKey, "team-a", kNow, nonceOf(2)), kMethod, "req", kNow);
  REQUIRE(job.isOk());
  CHECK(job->job == "team-a");
  CHECK_FALSE(job->isPool());
  // The job's key under another job's name, a changed request, or another method.
  CHECK(refusal(auth.check(signedCall(jobKey, "team-b", kNow, nonceOf(3)), kMethod, "req",
                           kNow))
            .find("wrong for job 'team-b'") != std::string::npos);
  CHECK(refusal(auth.check(signedCall(kPool, "", kNow, nonceOf(4)), kMethod, "reQ", kNow))
            .find("proof is wrong") != std::string::npos);
  CHECK(refusal(auth.check(signedCall(kPool, "", kNow, nonceOf(5)), "/other", "req", kNow))
            .find("proof is wrong") != std::string::npos);
}

TEST_CASE("call auth: missing and malformed metadata are named") {
  CallAuthenticator auth(kPool);
  CallMetadata none;
  CHECK(refusal(auth.check(none, kMethod, "", kNow)).find("carries no proof") !=
        std::string::npos);
  CallMetadata m = signedCall(kPool, "", kNow, nonceOf(1));
  m.timestamp.reset();
  CHECK(refusal(auth.check(m, kMethod, "req", kNow)).find("rs-timestamp or rs-nonce") !=
        std::string::npos);
  m = signedCall(kPool, "", kNow, nonceOf(1));
  m.timestamp = "12x";
  CHECK(refusal(auth.check(m, kMethod, "req", kNow)).find("not a decimal") != std::string::npos);
  // Far from any clock, either way: refused before any arithmetic on it can overflow.
  for (const char* t : {"-9223372036854775808", "9223372036854775807", "-1"}) {
    m = signedCall(kPool, "", kNow, nonceOf(1));
    m.timestamp = t;
    CHECK(refusal(auth.check(m, kMethod, "req", kNow)).find("out of range") != std::string::npos);
  }
  m = signedCall(kPool, "", kNow, nonceOf(1));
  m.proof = "abc";
  CHECK(refusal(auth.check(m, kMethod, "req", kNow)).find("64 hex digits") != std::string::npos);
  m = signedCall(kPool, "", kNow, nonceOf(1));
  m.job = "bad name";
  CHECK(refusal(auth.check(m, kMethod, "req", kNow)).find("not a job name") != std::string::npos);
}

TEST_CASE("call auth: the window holds on both sides, and a nonce counts once") {
  CallAuthenticator auth(kPool, std::chrono::minutes(5), {.pool = 3});
  const int64_t window = 5 * 60 * 1000;
  CHECK(auth.check(signedCall(kPool, "", kNow - window, nonceOf(1)), kMethod, "req", kNow)
            .isOk());
  CHECK(auth.check(signedCall(kPool, "", kNow + window, nonceOf(2)), kMethod, "req", kNow)
            .isOk());
  CHECK(refusal(auth.check(signedCall(kPool, "", kNow - window - 1000, nonceOf(3)), kMethod,
                           "req", kNow))
            .find("timestamp is -301 s away") != std::string::npos);
  CHECK(refusal(auth.check(signedCall(kPool, "", kNow + window + 1000, nonceOf(3)), kMethod,
                           "req", kNow))
            .find("timestamp is 301 s away") != std::string::npos);
  // A replay of an accepted call.
  CHECK(refusal(auth.check(signedCall(kPool, "", kNow, nonceOf(1)), kMethod, "req", kNow))
            .find("already used") != std::string::npos);
  // The cache is bounded: past its size, fresh calls wait for old nonces to expire.
  CHECK(auth.check(signedCall(kPool, "", kNow, nonceOf(3)), kMethod, "req", kNow).isOk());
  auto full = auth.check(signedCall(kPool, "", kNow, nonceOf(4)), kMethod, "req", kNow);
  REQUIRE_FALSE(full.isOk());
  CHECK(full.status().code() == StatusCode::kResourceExhausted);
}

TEST_CASE("call auth: one job's calls fill only its own share, other jobs and the pool's "
          "identity still get in") {
  CallAuthenticator auth(kPool, std::chrono::minutes(5), {.pool = 2, .job = 2, .jobsTotal = 3});
  const std::string keyA = *wire::deriveJobSecret(kPool, "team-a");
  const std::string keyB = *wire::deriveJobSecret(kPool, "team-b");
  const std::string keyC = *wire::deriveJobSecret(kPool, "team-c");
  auto callAs = [&](const std::string& key, const std::string& job, uint8_t n) {
    return auth.check(signedCall(key, job, kNow, nonceOf(n)), kMethod, "req", kNow);
  };
  CHECK(callAs(keyA, "team-a", 1).isOk());
  CHECK(callAs(keyA, "team-a", 2).isOk());
  auto full = callAs(keyA, "team-a", 3);
  REQUIRE_FALSE(full.isOk());
  CHECK(full.status().code() == StatusCode::kResourceExhausted);
  CHECK(full.status().message().find("job 'team-a' made 2 calls within the last 10 min") !=
        std::string::npos);
  // A nonce is one caller's: team-b may use the one team-a used (its proof differs anyway).
  CHECK(callAs(keyB, "team-b", 1).isOk());
  // The operator has its own share, which no job's calls touched.
  CHECK(callAs(kPool, "", 1).isOk());
  CHECK(callAs(kPool, "", 2).isOk());
  auto poolFull = callAs(kPool, "", 3);
  REQUIRE_FALSE(poolFull.isOk());
  CHECK(poolFull.status().message().find("the pool's secret made 2 calls") != std::string::npos);
  // The jobs together are bounded too (three nonces here): a third job waits for that.
  auto total = callAs(keyC, "team-c", 1);
  REQUIRE_FALSE(total.isOk());
  CHECK(total.status().code() == StatusCode::kResourceExhausted);
  CHECK(total.status().message().find("the jobs on this reducer made 3 calls") !=
        std::string::npos);
}

TEST_CASE("call auth: calls without a valid proof take no place in the cache, whatever job they "
          "name") {
  CallAuthenticator auth(kPool, std::chrono::minutes(5), {.pool = 1, .job = 1, .jobsTotal = 1});
  for (int i = 0; i < 1000; ++i) {
    const std::string job = "job-" + std::to_string(i);
    // Signed with a key that is not the job's.
    CHECK_FALSE(auth.check(signedCall("not-a-job-key-0123456789abcdef", job, kNow,
                                      nonceOf(static_cast<uint8_t>(i))),
                           kMethod, "req", kNow)
                    .isOk());
  }
  const std::string key = *wire::deriveJobSecret(kPool, "team-a");
  CHECK(auth.check(signedCall(key, "team-a", kNow, nonceOf(1)), kMethod, "req", kNow).isOk());
  CHECK(auth.check(signedCall(kPool, "", kNow, nonceOf(1)), kMethod, "req", kNow).isOk());
}

TEST_CASE("call auth: a reducer without a secret admits every call as open") {
  CallAuthenticator auth("");
  auto r = auth.check({}, kMethod, "", kNow);
  REQUIRE(r.isOk());
  CHECK(r->open);
  CHECK(r->isPool());
}

}  // namespace rs::server
