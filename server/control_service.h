// The gRPC control plane (proto/reduction.proto): GetInfo, JoinGroup, LeaveGroup, GetStats,
// Drain, plus the standard grpc.health.v1.Health service. It reaches the data plane only
// through the registry (locked) and the data plane's thread-safe entry points.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>

#include "proto/reduction.grpc.pb.h"
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

 private:
  std::vector<std::string> dataEndpoints() const;

  const ServerConfig& config_;
  GroupRegistry& registry_;
  DataPlane& plane_;
  std::function<void()> onDrain_;
  const std::chrono::steady_clock::time_point started_;
};

// Maps our Status onto a gRPC status with the same message.
grpc::Status toGrpc(const Status& status);

}  // namespace rs::server
