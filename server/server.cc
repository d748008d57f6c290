#include "server/server.h"

#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <grpcpp/health_check_service_interface.h>

#include <cstdio>
#include <fstream>

#include "core/common/build_info.h"
#include "core/common/byte_size.h"
#include "core/common/endpoint.h"
#include "core/common/log.h"
#include "server/slot_pool.h"
#include "core/reduce/reduce.h"

namespace rs::server {
namespace {
constexpr auto kDrainTimeout = std::chrono::seconds(60);
constexpr auto kDrainPoll = std::chrono::milliseconds(200);

// gRPC on the data host and the data port + 1; an ephemeral data port asks for an ephemeral
// gRPC port too.
Result<std::string> defaultGrpcAddress(const std::string& dataListen, uint16_t dataPort) {
  auto data = parseEndpoint(dataListen, "--data-listen", PortZero::kAllowed);
  if (!data) return data.status();
  if (data->port == 0) return data->toString();
  if (dataPort == UINT16_MAX)
    return invalidArgument(
        "the data port is 65535, so gRPC has no data port + 1: set --grpc-listen");
  return data->withPort(static_cast<uint16_t>(dataPort + 1)).toString();
}
}  // namespace

Server::Server(ServerConfig config)
    : config_(std::move(config)),
      registry_(RegistryLimits{.maxGroups = config_.maxGroups,
                               .maxGroupsPerJob = config_.maxGroupsPerJob,
                               .maxTimeoutMs = config_.collectiveTimeoutMs,
                               .maxStreamsPerWorker = config_.maxStreamsPerWorker,
                               .maxConnectionsPerGroup = config_.maxConnectionsPerGroup,
                               .maxConnectionsPerPeer = config_.maxConnectionsPerPeer},
                static_cast<uint32_t>(config_.ioThreads),
                std::make_shared<MemoryBudget>(
                    config_.memoryLimitBytes, static_cast<uint32_t>(config_.ioThreads),
                    SlotPool::roundUp(2ull * config_.maxChunkBytes))),
      dataPlane_(config_, registry_),
      statsTimer_(control_),
      drainTimer_(control_),
      signals_(control_) {}

Server::~Server() { stop(); }

Status Server::start() {
  rs::logger().info("{} starting: {}", versionLine("reduction-server", reduce::activeTargetName()),
                    config_.describe());
  if (config_.secret.empty())
    rs::logger().warn("no job secret (--secret-file, RS_SECRET_FILE or RS_SECRET): this reducer "
                      "is OPEN, any peer that reaches the data port can join any group and "
                      "change its results");
  else
    rs::logger().info("data connections must prove the job secret (HMAC-SHA256 challenge)");
  RS_RETURN_IF_ERROR(dataPlane_.start(control_));

  controlService_ =
      std::make_unique<ControlService>(config_, registry_, dataPlane_, [this] { drain(); });
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  auto defaultGrpc = defaultGrpcAddress(config_.dataListen, dataPlane_.port());
  if (config_.grpcListen.empty() && !defaultGrpc) {
    dataPlane_.stop();
    return defaultGrpc.status();
  }
  const std::string grpcAddress = config_.grpcListen.empty() ? *defaultGrpc : config_.grpcListen;
  int selected = 0;
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!config_.grpcTlsCert.empty()) {
    grpc::SslServerCredentialsOptions tls;
    tls.pem_key_cert_pairs.push_back({config_.grpcTlsKey, config_.grpcTlsCert});
    credentials = grpc::SslServerCredentials(tls);
  }
  builder.AddListeningPort(grpcAddress, credentials, &selected);
  builder.RegisterService(controlService_.get());
  grpcServer_ = builder.BuildAndStart();
  if (!grpcServer_ || selected == 0) {
    dataPlane_.stop();
    return ioError("gRPC cannot listen on " + grpcAddress);
  }
  grpcPort_ = static_cast<uint16_t>(selected);
  grpcServer_->GetHealthCheckService()->SetServingStatus(true);
  if (!config_.metricsListen.empty()) {
    auto metrics = MetricsEndpoint::start(config_, dataPlane_, registry_, [this] {
      return controlService_->callsRefused();
    });
    if (!metrics) return metrics.status();  // the destructor stops what started
    metrics_ = std::move(*metrics);
  }

  lastStats_ = dataPlane_.stats();
  lastStatsTime_ = std::chrono::steady_clock::now();
  if (config_.statsIntervalSeconds > 0) scheduleStatsLine();
  controlThread_ = std::thread([this] {
    auto guard = asio::make_work_guard(control_);
    control_.run();
  });
  RS_RETURN_IF_ERROR(writePortFile());
  rs::logger().info("listening: data port {}, gRPC port {} ({}), {}, {} io threads, {} of slot "
                    "memory",
                    dataPlane_.port(), grpcPort_, config_.grpcTlsCert.empty() ? "plaintext" : "TLS",
                    metrics_ ? fmt::format("metrics on port {} (/metrics)", metrics_->port())
                             : std::string("metrics off"),
                    config_.ioThreads, formatByteSize(config_.memoryLimitBytes));
  return Status::ok();
}

Status Server::writePortFile() const {
  if (config_.portFile.empty()) return Status::ok();
  const std::string tmp = config_.portFile + ".tmp";
  {
    std::ofstream f(tmp);
    // Launchers read "data grpc"; the metrics port follows only when metrics are on.
    f << dataPlane_.port() << " " << grpcPort_;
    if (metrics_) f << " " << metrics_->port();
    f << "\n";
    if (!f) return ioError("cannot write --port-file " + tmp);
  }
  if (std::rename(tmp.c_str(), config_.portFile.c_str()) != 0)
    return ioError("cannot rename " + tmp + " to " + config_.portFile);
  return Status::ok();
}

void Server::run() {
  // Caught only while run() waits; stop() removes them again on the control thread.
  std::error_code ignored;
  signals_.add(SIGINT, ignored);
  signals_.add(SIGTERM, ignored);
  signals_.async_wait([this](const std::error_code& ec, int sig) { onSignal(ec, sig); });
  {
    std::unique_lock lock(stopMu_);
    stopCv_.wait(lock, [this] { return stopped_.load(); });
  }
  stop();
}

void Server::onSignal(const std::error_code& ec, int sig) {
  if (ec) return;  // cancelled by stop()
  if (!draining_) {
    rs::logger().info("signal {}: draining (a second signal stops at once)", sig);
    drain();
    signals_.async_wait([this](const std::error_code& e, int s) { onSignal(e, s); });
  } else {
    rs::logger().info("signal {}: stopping now", sig);
    requestStop();
  }
}

void Server::requestStop() {
  {
    std::lock_guard lock(stopMu_);
    stopped_ = true;
  }
  stopCv_.notify_all();
}

void Server::drain() {
  if (draining_.exchange(true) || stopped_) return;
  // Refusing new groups and failing health checks take effect before this returns (a Drain
  // RPC's caller may look at once); the wait for active groups runs on the control thread.
  registry_.setDraining(true);
  if (grpcServer_) grpcServer_->GetHealthCheckService()->SetServingStatus(false);
  rs::logger().info("draining: {} groups active; stopping when they finish (at most {} s)",
                    registry_.size(), kDrainTimeout.count());
  asio::post(control_, [this] {
    drainDeadline_ = std::chrono::steady_clock::now() + kDrainTimeout;
    checkDrained();
  });
}

void Server::checkDrained() {
  if (registry_.size() == 0 || std::chrono::steady_clock::now() >= drainDeadline_) {
    if (registry_.size() != 0)
      rs::logger().warn("drain timeout: stopping with {} groups still active", registry_.size());
    requestStop();
    return;
  }
  drainTimer_.expires_after(kDrainPoll);
  drainTimer_.async_wait([this](const std::error_code& ec) {
    if (!ec) checkDrained();
  });
}

void Server::stop() {
  std::lock_guard teardown(teardownMu_);
  requestStop();
  metrics_.reset();  // a scrape reads the data plane: no scrape may run once it stops
  if (grpcServer_) {
    grpcServer_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    grpcServer_.reset();
  }
  dataPlane_.stop();
  if (controlThread_.joinable()) {
    asio::post(control_, [this] {
      statsTimer_.cancel();
      drainTimer_.cancel();
      std::error_code ignored;
      signals_.cancel(ignored);
      signals_.clear(ignored);  // the default dispositions again
      control_.stop();
    });
    controlThread_.join();
    logStats();
    rs::logger().info("reduction-server stopped");
  }
}

void Server::scheduleStatsLine() {
  statsTimer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(config_.statsIntervalSeconds)));
  statsTimer_.async_wait([this](const std::error_code& ec) {
    if (ec) return;
    logStats();
    scheduleStatsLine();
  });
}

void Server::logStats() {
  const DataPlaneStats now = dataPlane_.stats();
  const auto t = std::chrono::steady_clock::now();
  const double secs = std::max(1e-9, std::chrono::duration<double>(t - lastStatsTime_).count());
  const double inGbps = static_cast<double>(now.bytesIn - lastStats_.bytesIn) * 8 / secs / 1e9;
  const double outGbps = static_cast<double>(now.bytesOut - lastStats_.bytesOut) * 8 / secs / 1e9;
  const double reductionsPerSec = static_cast<double>(now.reductions - lastStats_.reductions) / secs;
  rs::logger().info(
      "throughput: in {:.3f} Gbit/s, out {:.3f} Gbit/s, {:.1f} reductions/s; "
      "{} groups, {} connections, slots {} of {}, {} parked, {} protocol errors",
      inGbps, outGbps, reductionsPerSec, registry_.size(), now.connectionsOpen,
      formatByteSize(now.slotBytesInUse), formatByteSize(now.slotBytesLimit), now.parkedSessions,
      now.protocolErrors);
  lastStats_ = now;
  lastStatsTime_ = t;
}

}  // namespace rs::server
