// gRPC calls to a reducer with a job secret (proto/WIRE.md, "Control plane"): every call but the
// health check carries a proof (client/control/attach_call_proof.h); a missing, wrong, replayed
// or stale one is refused UNAUTHENTICATED with a named reason; Drain needs the pool's secret;
// a job's JoinGroup binds the group to the job, and another job cannot join, leave or see it.
#include <catch2/catch.hpp>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <thread>

#include "client/control/attach_call_proof.h"
#include "core/wire/auth.h"
#include "proto/health.grpc.pb.h"
#include "proto/reduction.grpc.pb.h"
#include "tests/support/group_id_bytes.h"
#include "tests/support/healthy_group.h"
#include "tests/support/local_pool.h"
#include "tests/support/log_capture.h"
#include "tests/support/text_contains.h"
#include "tests/support/wait_until.h"

namespace rs::test {
namespace {

constexpr const char* kGrpcPoolSecret = "pool-secret-5d1a9e7c3b2f4086";
constexpr const char* kJoin = "/rs.v1.ReductionServer/JoinGroup";
constexpr const char* kDrain = "/rs.v1.ReductionServer/Drain";

std::string grpcJobSecret(const std::string& job) {
  return *wire::deriveJobSecret(kGrpcPoolSecret, job);
}

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string freshNonce() { return wire::toHex(*wire::randomNonce()); }

struct Reducer {
  Reducer()
      : pool(1, config()),
        channel(grpc::CreateChannel("127.0.0.1:" + std::to_string(pool.reducer(0).grpcPort()),
                                    grpc::InsecureChannelCredentials())),
        stub(rs::v1::ReductionServer::NewStub(channel)) {}
  static server::ServerConfig config() {
    server::ServerConfig c = testServerConfig();
    c.secret = kGrpcPoolSecret;
    return c;
  }
  LocalPool pool;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<rs::v1::ReductionServer::Stub> stub;
};

rs::v1::JoinGroupRequest joinRequest(const GroupId& id, uint32_t rank) {
  rs::v1::JoinGroupRequest join;
  join.set_group_id(idBytes(id));
  join.set_world_size(2);
  join.set_rank(rank);
  join.set_stream_count(1);
  join.set_reducer_count(1);
  return join;
}

// JoinGroup signed by `job` (empty: the pool's secret).
grpc::Status joinAs(Reducer& r, const std::string& job, const GroupId& id, uint32_t rank) {
  grpc::ClientContext ctx;
  const auto request = joinRequest(id, rank);
  REQUIRE(client::attachCallProof(ctx, kJoin, request,
                                  job.empty() ? kGrpcPoolSecret : grpcJobSecret(job), job)
              .isOk());
  rs::v1::JoinGroupResponse out;
  return r.stub->JoinGroup(&ctx, request, &out);
}

// GetInfo signed by `job` (empty: the pool's secret).
grpc::Status getInfoAs(Reducer& r, const std::string& job) {
  grpc::ClientContext ctx;
  const rs::v1::GetInfoRequest request;
  REQUIRE(client::attachCallProof(ctx, "/rs.v1.ReductionServer/GetInfo", request,
                                  job.empty() ? kGrpcPoolSecret : grpcJobSecret(job), job)
              .isOk());
  rs::v1::GetInfoResponse out;
  return r.stub->GetInfo(&ctx, request, &out);
}

void requireUnauthenticated(const grpc::Status& s, const std::string& named) {
  INFO(s.error_message());
  CHECK(s.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(contains(s.error_message(), named));
}

}  // namespace

TEST_CASE("grpc auth: Drain and JoinGroup without a valid proof are refused by name") {
  Reducer r;
  const GroupId id = GroupId::random();
  const auto join = joinRequest(id, 0);
  rs::v1::JoinGroupResponse joined;
  rs::v1::DrainResponse drained;

  {  // no proof at all
    grpc::ClientContext ctx;
    requireUnauthenticated(r.stub->Drain(&ctx, {}, &drained), "carries no proof");
    grpc::ClientContext ctx2;
    requireUnauthenticated(r.stub->JoinGroup(&ctx2, join, &joined), "carries no proof");
  }
  {  // a proof under another secret
    grpc::ClientContext ctx;
    REQUIRE(client::attachCallProof(ctx, kDrain, rs::v1::DrainRequest(),
                                    "not-the-pool-secret-0123456789")
                .isOk());
    requireUnauthenticated(r.stub->Drain(&ctx, {}, &drained), "proof is wrong");
  }
  {  // a job's secret presented as another job's
    grpc::ClientContext ctx;
    REQUIRE(client::attachCallProof(ctx, kJoin, join, grpcJobSecret("team-b"), "team-a").isOk());
    requireUnauthenticated(r.stub->JoinGroup(&ctx, join, &joined),
                           "proof is wrong for job 'team-a'");
  }
  {  // a valid proof of another request (a changed group id, rank...)
    grpc::ClientContext ctx;
    REQUIRE(client::attachCallProof(ctx, kJoin, joinRequest(id, 1), kGrpcPoolSecret).isOk());
    requireUnauthenticated(r.stub->JoinGroup(&ctx, join, &joined), "proof is wrong");
  }
  {  // a valid proof for another method
    grpc::ClientContext ctx;
    REQUIRE(client::attachCallProof(ctx, "/rs.v1.ReductionServer/GetInfo", rs::v1::DrainRequest(),
                                    kGrpcPoolSecret)
                .isOk());
    requireUnauthenticated(r.stub->Drain(&ctx, {}, &drained), "proof is wrong");
  }
  {  // stale, and from the future
    for (int64_t offset : {int64_t{-10} * 60 * 1000, int64_t{10} * 60 * 1000}) {
      grpc::ClientContext ctx;
      client::addCallProof(
          ctx, client::makeCallProof(kDrain, rs::v1::DrainRequest(), kGrpcPoolSecret, "",
                                     nowMs() + offset, freshNonce()));
      requireUnauthenticated(r.stub->Drain(&ctx, {}, &drained), "timestamp is");
    }
  }
  {  // replayed: the same valid metadata twice
    const auto proof =
        client::makeCallProof(kJoin, join, kGrpcPoolSecret, "", nowMs(), freshNonce());
    grpc::ClientContext first;
    client::addCallProof(first, proof);
    REQUIRE(r.stub->JoinGroup(&first, join, &joined).ok());
    grpc::ClientContext second;
    client::addCallProof(second, proof);
    requireUnauthenticated(r.stub->JoinGroup(&second, join, &joined), "nonce was already used");
  }
  {  // GetInfo and GetStats need a proof too; the health check stays open for the kubelet
    grpc::ClientContext ctx;
    rs::v1::GetInfoResponse info;
    requireUnauthenticated(r.stub->GetInfo(&ctx, {}, &info), "carries no proof");
    grpc::ClientContext ctx2;
    rs::v1::GetStatsResponse stats;
    requireUnauthenticated(r.stub->GetStats(&ctx2, {}, &stats), "carries no proof");
    grpc::ClientContext ctx3;
    grpc::health::v1::HealthCheckResponse health;
    REQUIRE(grpc::health::v1::Health::NewStub(r.channel)->Check(&ctx3, {}, &health).ok());
    CHECK(health.status() == grpc::health::v1::HealthCheckResponse::SERVING);
    grpc::ClientContext ctx4;
    REQUIRE(client::attachCallProof(ctx4, "/rs.v1.ReductionServer/GetInfo",
                                    rs::v1::GetInfoRequest(), grpcJobSecret("team-a"), "team-a")
                .isOk());
    REQUIRE(r.stub->GetInfo(&ctx4, {}, &info).ok());
    CHECK(info.auth_required());
  }
  {  // a job may not drain; the operator (the pool's secret) may
    grpc::ClientContext ctx;
    REQUIRE(client::attachCallProof(ctx, kDrain, rs::v1::DrainRequest(), grpcJobSecret("team-a"),
                                    "team-a")
                .isOk());
    grpc::Status s = r.stub->Drain(&ctx, {}, &drained);
    CHECK(s.error_code() == grpc::StatusCode::PERMISSION_DENIED);
    CHECK(contains(s.error_message(), "Drain needs the pool's secret"));
    CHECK_FALSE(r.pool.reducer(0).dataPlane().registry().draining());
    grpc::ClientContext ctx2;
    REQUIRE(client::attachCallProof(ctx2, kDrain, rs::v1::DrainRequest(), kGrpcPoolSecret).isOk());
    REQUIRE(r.stub->Drain(&ctx2, {}, &drained).ok());
    CHECK(r.pool.reducer(0).dataPlane().registry().draining());
  }
}

TEST_CASE("grpc auth: a job's group is its own: another job cannot join, leave or see it") {
  Reducer r;
  const GroupId id = GroupId::random();
  REQUIRE(joinAs(r, "team-a", id, 0).ok());

  const std::string named = "group " + id.toString().substr(0, 8) + " belongs to another job";
  for (const std::string intruder : {"team-b", ""}) {  // another job, and the job-less pool
    INFO("intruder '" << intruder << "'");
    grpc::Status s = joinAs(r, intruder, id, 1);
    CHECK(s.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    CHECK(contains(s.error_message(), named));
    grpc::ClientContext ctx;
    rs::v1::LeaveGroupRequest leave;
    leave.set_group_id(idBytes(id));
    leave.set_rank(0);
    REQUIRE(client::attachCallProof(ctx, "/rs.v1.ReductionServer/LeaveGroup", leave,
                                    intruder.empty() ? kGrpcPoolSecret : grpcJobSecret(intruder),
                                    intruder)
                .isOk());
    rs::v1::LeaveGroupResponse left;
    s = r.stub->LeaveGroup(&ctx, leave, &left);
    CHECK(s.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    CHECK(contains(s.error_message(), named));
  }
  // The owner's second member joins; the group is still declared.
  REQUIRE(joinAs(r, "team-a", id, 1).ok());

  auto statsAs = [&](const std::string& job) {
    grpc::ClientContext ctx;
    REQUIRE(client::attachCallProof(ctx, "/rs.v1.ReductionServer/GetStats",
                                    rs::v1::GetStatsRequest(),
                                    job.empty() ? kGrpcPoolSecret : grpcJobSecret(job), job)
                .isOk());
    rs::v1::GetStatsResponse stats;
    REQUIRE(r.stub->GetStats(&ctx, {}, &stats).ok());
    return stats;
  };
  CHECK(statsAs("team-b").groups_size() == 0);  // another job sees nothing of it
  const auto own = statsAs("team-a");
  REQUIRE(own.groups_size() == 1);
  CHECK(own.groups(0).group_id() == idBytes(id).substr(0, 4));  // truncated
  CHECK(own.groups(0).members_connected() == 2);
  const auto operatorView = statsAs("");
  REQUIRE(operatorView.groups_size() == 1);
  CHECK(operatorView.groups(0).group_id() == idBytes(id).substr(0, 4));

  // The data plane agrees: job A's workers join the group job A declared.
  Status st = runRanks(2, [&](int rank) -> Status {
    auto o = testClientOptions(r.pool.endpoints(), 1);
    o.jobName = "team-a";
    o.secret = grpcJobSecret("team-a");
    auto comm = client::Communicator::connect(o, {id, 2, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    std::vector<float> buf(1000, 1.0f);
    RS_RETURN_IF_ERROR(
        (*comm)->allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32, ReduceOp::kSum));
    return buf[999] == 2.0f ? Status::ok() : internalError("wrong sum");
  });
  CHECK(st.toString() == "OK");
}

TEST_CASE("grpc auth: one job's own calls fill only its share of the replay cache, other jobs "
          "and the operator still get in, beside a healthy group") {
  Reducer r;
  // Job team-b's workers keep doing exact all-reduces on the same reducer throughout.
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  Status healthy;
  std::thread healthyThread([&] {
    healthy = runHealthyGroup(r.pool.endpoints(), {.stop = &stop,
                                                   .done = &rounds,
                                                   .secret = grpcJobSecret("team-b"),
                                                   .job = "team-b"});
  });
  // Job team-a makes valid calls, each with a fresh nonce, until the reducer refuses one (past
  // what the single cache of 65536 nonces took, to show what it did to everyone else).
  constexpr int kMaxCalls = 70000;
  grpc::Status refused;
  int calls = 0;
  while (calls < kMaxCalls && (refused = getInfoAs(r, "team-a")).ok()) ++calls;
  // Another job, and the operator, are not locked out; team-a still is.
  const grpc::Status otherJob = getInfoAs(r, "team-c");
  const grpc::Status operatorInfo = getInfoAs(r, "");
  const grpc::Status againA = getInfoAs(r, "team-a");
  grpc::ClientContext statsCtx;
  REQUIRE(client::attachCallProof(statsCtx, "/rs.v1.ReductionServer/GetStats",
                                  rs::v1::GetStatsRequest(), kGrpcPoolSecret)
              .isOk());
  rs::v1::GetStatsResponse stats;
  const grpc::Status operatorStats = r.stub->GetStats(&statsCtx, {}, &stats);
  const int before = rounds.load();
  const bool moving = test::waitUntil([&] { return rounds.load() >= before + 3; });
  stop = true;
  healthyThread.join();

  INFO("team-a made " << calls << " calls; refused: " << refused.error_message());
  CHECK(refused.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(contains(refused.error_message(), "job 'team-a'"));
  CHECK(againA.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(otherJob.ok());
  CHECK(operatorInfo.ok());
  CHECK(operatorStats.ok());
  {  // the operator can still drain
    grpc::ClientContext ctx;
    REQUIRE(client::attachCallProof(ctx, kDrain, rs::v1::DrainRequest(), kGrpcPoolSecret).isOk());
    rs::v1::DrainResponse drained;
    CHECK(r.stub->Drain(&ctx, {}, &drained).ok());
  }
  CHECK(moving);
  CHECK(healthy.toString() == "OK");
}

TEST_CASE("grpc auth: refused calls are logged at most 20 lines per 10 s") {
  LogCapture log;  // before the pool's threads
  Reducer r;
  const auto start = std::chrono::steady_clock::now();
  constexpr int kCalls = 2000;
  int unauthenticated = 0;
  for (int i = 0; i < kCalls; ++i) {
    grpc::ClientContext ctx;
    rs::v1::GetInfoResponse info;
    unauthenticated +=
        r.stub->GetInfo(&ctx, {}, &info).error_code() == grpc::StatusCode::UNAUTHENTICATED;
  }
  // The limiter's windows that the calls spanned, each allowed its 20 lines.
  const auto windows = 1 + (std::chrono::steady_clock::now() - start) / std::chrono::seconds(10);
  CHECK(unauthenticated == kCalls);
  const size_t lines = log.count("refused gRPC");
  INFO(lines << " lines over " << windows << " windows of 10 s");
  CHECK(lines >= 1);
  CHECK(lines <= 20 * static_cast<size_t>(windows));
}

}  // namespace rs::test
