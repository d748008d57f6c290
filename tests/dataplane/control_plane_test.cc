// The gRPC control plane of a running reducer: GetInfo, JoinGroup, GetStats, LeaveGroup,
// Drain, and the standard grpc.health.v1.Health service.
#include <catch2/catch.hpp>
#include <grpcpp/grpcpp.h>

#include <thread>

#include "proto/health.grpc.pb.h"
#include "proto/reduction.grpc.pb.h"
#include "tests/support/group_id_bytes.h"
#include "tests/support/local_pool.h"
#include "tests/support/wait_until.h"

namespace rs::test {
namespace {

// grpc.health.v1.Health/Check with an empty service name; returns the ServingStatus enum
// (1 SERVING, 2 NOT_SERVING), or -1 when the call fails.
int healthStatus(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  grpc::health::v1::HealthCheckResponse response;
  if (!stub->Check(&ctx, {}, &response).ok()) return -1;
  return response.status();
}

}  // namespace

TEST_CASE("GetInfo, JoinGroup, GetStats, LeaveGroup, health and Drain", "[control]") {
  LocalPool pool(1);
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(pool.reducer(0).grpcPort()),
                                     grpc::InsecureChannelCredentials());
  auto stub = rs::v1::ReductionServer::NewStub(channel);

  {
    grpc::ClientContext ctx;
    rs::v1::GetInfoResponse info;
    REQUIRE(stub->GetInfo(&ctx, {}, &info).ok());
    CHECK(info.protocol_version() == 3);
    CHECK(info.dtypes_size() == kNumDataTypes);
    CHECK(info.ops_size() == kNumReduceOps);
    CHECK(info.max_chunk_bytes() == testServerConfig().maxChunkBytes);
    REQUIRE(info.data_endpoints_size() == 1);
    CHECK(info.data_endpoints(0) == "127.0.0.1:" + std::to_string(pool.reducer(0).dataPort()));
    CHECK(!info.draining());
  }
  CHECK(healthStatus(channel) == 1);

  const GroupId id = GroupId::random();
  rs::v1::JoinGroupRequest join;
  join.set_group_id(idBytes(id));
  join.set_world_size(2);
  join.set_rank(0);
  join.set_stream_count(1);
  join.set_reducer_index(0);
  join.set_reducer_count(1);
  {
    grpc::ClientContext ctx;
    rs::v1::JoinGroupResponse out;
    REQUIRE(stub->JoinGroup(&ctx, join, &out).ok());
    CHECK(out.members_joined() == 1);
  }
  SECTION("bad requests are refused with the reason") {
    rs::v1::JoinGroupRequest bad = join;
    bad.set_world_size(3);  // disagrees with the group
    grpc::ClientContext ctx;
    rs::v1::JoinGroupResponse out;
    grpc::Status s = stub->JoinGroup(&ctx, bad, &out);
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(s.error_message().find("world_size=3") != std::string::npos);
    grpc::ClientContext ctx2;
    bad = join;
    bad.set_group_id("short");
    CHECK(stub->JoinGroup(&ctx2, bad, &out).error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  }
  SECTION("JoinGroup applies HELLO's limits, naming the field and the limit") {
    struct Case {
      uint32_t world, streams;
      std::string named;
    };
    const std::vector<Case> cases = {
        {1u << 31, 1, "world_size 2147483648 is outside 1..65536"},
        {65537, 1, "world_size 65537 is outside 1..65536"},
        {2, 17, "stream_count 17 is outside 1..16 (--max-streams-per-worker)"},
        {2, 70000, "stream_count 70000"}};
    for (const Case& c : cases) {
      rs::v1::JoinGroupRequest bad = join;
      bad.set_group_id(idBytes(GroupId::random()));  // a new group: nothing to disagree with
      bad.set_world_size(c.world);
      bad.set_stream_count(c.streams);
      grpc::ClientContext ctx;
      rs::v1::JoinGroupResponse out;
      grpc::Status s = stub->JoinGroup(&ctx, bad, &out);
      INFO(s.error_message());
      CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
      CHECK(s.error_message().find(c.named) != std::string::npos);
    }
    // None of them created a group: only the declared one is served.
    grpc::ClientContext ctx;
    rs::v1::GetStatsResponse stats;
    REQUIRE(stub->GetStats(&ctx, {}, &stats).ok());
    CHECK(stats.groups_size() == 1);
  }
  SECTION("the data plane joins the same group and stats show the traffic") {
    Status st = runRanks(2, [&](int rank) -> Status {
      auto options = testClientOptions(pool.endpoints(), 1);
      auto comm = client::Communicator::connect(options, {id, 2, static_cast<uint32_t>(rank)});
      if (!comm) return comm.status();
      std::vector<float> buf(1000, 1.0f);
      return (*comm)->allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                                ReduceOp::kSum);
    });
    REQUIRE(st.toString() == "OK");
    // A write is counted when its completion handler runs, which may be just after the
    // member has read the bytes: poll briefly.
    rs::v1::GetStatsResponse stats;
    CHECK(waitUntil([&] {
      grpc::ClientContext ctx;
      return stub->GetStats(&ctx, {}, &stats).ok() && stats.bytes_out() >= 2 * 4000;
    }));
    CHECK(stats.reductions() >= 1);
    CHECK(stats.bytes_in() >= 2 * 4000);
    CHECK(stats.bytes_out() >= 2 * 4000);
    CHECK(stats.slot_bytes_limit() == testServerConfig().memoryLimitBytes);
    // The group is still declared by rank 0's JoinGroup, with its counters.
    REQUIRE(stats.groups_size() == 1);
    CHECK(stats.groups(0).group_id() == idBytes(id).substr(0, 4));  // truncated, as in the logs
    CHECK(stats.groups(0).reductions() >= 1);
  }
  SECTION("LeaveGroup forgets a declared member; Drain refuses new groups") {
    {
      grpc::ClientContext ctx;
      rs::v1::LeaveGroupRequest leave;
      leave.set_group_id(idBytes(id));
      leave.set_rank(0);
      rs::v1::LeaveGroupResponse out;
      REQUIRE(stub->LeaveGroup(&ctx, leave, &out).ok());
    }
    {
      grpc::ClientContext ctx;
      rs::v1::GetStatsResponse stats;
      REQUIRE(stub->GetStats(&ctx, {}, &stats).ok());
      CHECK(stats.groups_size() == 0);
    }
    {
      grpc::ClientContext ctx;
      rs::v1::DrainResponse out;
      REQUIRE(stub->Drain(&ctx, {}, &out).ok());
      CHECK(out.groups_active() == 0);
    }
    CHECK(healthStatus(channel) == 2);
    auto options = testClientOptions(pool.endpoints(), 1);
    auto comm = client::Communicator::connect(options, {GroupId::random(), 1, 0});
    REQUIRE(!comm.isOk());
    CHECK(comm.status().message().find("draining") != std::string::npos);
  }
}

}  // namespace rs::test
