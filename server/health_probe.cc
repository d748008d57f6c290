#include "server/health_probe.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <cstdio>

#include "core/common/endpoint.h"
#include "proto/health.grpc.pb.h"

namespace rs::server {

namespace {

using grpc::health::v1::HealthCheckResponse;

void say(const std::string& address, const std::string& what) {
  fmt::print("reduction-server health probe: {} {}\n", address, what);
  std::fflush(stdout);
}

}  // namespace

Result<std::string> healthProbeAddress(const ServerConfig& config) {
  Endpoint grpc;
  if (!config.grpcListen.empty()) {
    auto ep = parseEndpoint(config.grpcListen, "--grpc-listen (RS_GRPC_LISTEN)");
    if (!ep)
      return invalidArgument(ep.status().message() +
                             "; an ephemeral port cannot be probed: pass --health-probe HOST:PORT");
    grpc = *ep;
  } else {
    auto data = parseEndpoint(
        config.dataListen, "the data address (--data-listen, RS_DATA_LISTEN or CLUSTER_SPEC)");
    if (!data)
      return invalidArgument(data.status().message() +
                             "; an ephemeral port cannot be probed: pass --health-probe HOST:PORT");
    if (data->port == UINT16_MAX)
      return invalidArgument("the data port is 65535, so gRPC has no data port + 1: set "
                             "--grpc-listen or pass --health-probe HOST:PORT");
    grpc = data->withPort(static_cast<uint16_t>(data->port + 1));
  }
  return grpc.reachableLocally().toString();
}

int runHealthProbe(const std::string& address, std::chrono::milliseconds timeout) {
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  grpc::health::v1::HealthCheckRequest request;  // service "": the server as a whole
  HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);

  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    say(address, fmt::format("gave no answer within {} ms", timeout.count()));
    return 1;
  }
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    say(address, "is unreachable: " + status.error_message());
    return 1;
  }
  if (!status.ok()) {
    say(address, fmt::format("failed the health check with gRPC status {}: {}",
                             static_cast<int>(status.error_code()), status.error_message()));
    return 1;
  }
  const std::string name = HealthCheckResponse::ServingStatus_Name(response.status());
  if (response.status() == HealthCheckResponse::SERVING) {
    say(address, "is SERVING");
    return 0;
  }
  if (response.status() == HealthCheckResponse::NOT_SERVING) {
    say(address, "is NOT_SERVING (draining or stopping)");
    return 1;
  }
  say(address, "answered " + name);
  return 1;
}

}  // namespace rs::server
