// The gRPC control plane (proto/reduction.proto): GetInfo, JoinGroup, LeaveGroup, GetStats,
// Drain, plus the standard grpc.health.v1.Health service. It reaches the data plane only
// through the registry (locked) and the data plane's thread-safe entry points.
//
// With a job secret every call but the health check must carry a proof (call_auth.h): Drain
// the pool's own (the operator's), the others the pool's or a job's; a job sees and changes
// only its own groups. Without a secret everything is open, as the daemon warns at start.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

#include "core/common/log_limiter.h"
#include "proto/reduction.grpc.pb.h"
#include "server/call_auth.h"
#include "server/config.h"
#include "server/data_plane.h"
#include "server/group_registry.h"

namespace rs::server {

class ControlService final : public rs::v1::ReductionServer::Service {
 public:
  ControlService(const ServerConfig& config, GroupRegistry& registry, DataPlane& plane,
                 std::function<void()> onDrain);

  grpc::Status GetInfo(grpc::ServerContext*, const rs::v1::GetInfoRequest*,
                       rs::v1::GetInfoResponse*) override;
  grpc::Status JoinGroup(grpc::ServerContext*, const rs::v1::JoinGroupRequest*,
                         rs::v1::JoinGroupResponse*) override;
  grpc::Status LeaveGroup(grpc::ServerContext*, const rs::v1::LeaveGroupRequest*,
                          rs::v1::LeaveGroupResponse*) override;
  grpc::Status GetStats(grpc::ServerContext*, const rs::v1::GetStatsRequest*,
                        rs::v1::GetStatsResponse*) override;
  grpc::Status Drain(grpc::ServerContext*, const rs::v1::DrainRequest*,
                     rs::v1::DrainResponse*) override;

  // Calls refused for their proof, or for what the proven caller may not do (any thread).
  uint64_t callsRefused() const { return callsRefused_.load(std::memory_order_relaxed); }

 private:
  std::vector<std::string> dataEndpoints() const;
  // Checks the call's proof for `method`; a refusal is logged with the peer and answered
  // UNAUTHENTICATED (or RESOURCE_EXHAUSTED) with its reason.
  grpc::Status authenticate(grpc::ServerContext* ctx, std::string_view method,
                            const google::protobuf::Message& request, Caller* caller);
  // Counts a refused call and logs it, within refusalLog_.
  void refused(std::string_view method, const std::string& peer, std::string_view why);

  const ServerConfig& config_;
  GroupRegistry& registry_;
  DataPlane& plane_;
  std::function<void()> onDrain_;
  CallAuthenticator auth_;
  std::atomic<uint64_t> callsRefused_{0};
  // Refusals are logged at most 20 per 10 s, as the data port's are: anyone who reaches the
  // port can make them. rs_grpc_calls_refused_total counts every one.
  LogLimiter refusalLog_{20, std::chrono::seconds(10)};
  const std::chrono::steady_clock::time_point started_;
};

// Maps our Status onto a gRPC status with the same message.
grpc::Status toGrpc(const Status& status);

}  // namespace rs::server
