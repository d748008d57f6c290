// The reducer: the data plane, the gRPC control plane, the periodic throughput line, and
// graceful drain on SIGTERM. main() only parses flags and calls run().
#pragma once

#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "core/common/status.h"
#include "server/config.h"
#include "server/control_service.h"
#include "server/data_plane.h"
#include "server/group_registry.h"
#include "server/metrics.h"

namespace rs::server {

class Server {
 public:
  explicit Server(ServerConfig config);
  ~Server();

  // Binds both listeners and starts every thread. Errors name the address that failed.
  Status start();
  // Blocks until SIGINT/SIGTERM (first: drain, second: stop at once), the end of a drain, or
  // stop(); then stops everything.
  void run();
  // Stops everything (any thread but the data plane's and the control thread's own); wakes
  // run(). Calls from several threads are serialised.
  void stop();
  // Refuses new groups and stops once the active ones are gone (or after the drain timeout).
  // Any thread.
  void drain();

  uint16_t dataPort() const { return dataPlane_.port(); }
  uint16_t grpcPort() const { return grpcPort_; }
  uint16_t metricsPort() const { return metrics_ ? metrics_->port() : 0; }  // 0: metrics off
  DataPlane& dataPlane() { return dataPlane_; }
  GroupRegistry& registry() { return registry_; }

 private:
  void onSignal(const std::error_code& ec, int signal);
  void requestStop();  // marks the server stopped and wakes run()
  void scheduleStatsLine();
  void logStats();
  void checkDrained();
  Status writePortFile() const;

  ServerConfig config_;
  GroupRegistry registry_;
  // Declared before the data plane, which outlives its use of it: the acceptor's listener and
  // its timers belong to control_ and are destroyed with the data plane.
  asio::io_context control_;  // handshakes, signals, timers
  DataPlane dataPlane_;
  std::thread controlThread_;
  asio::steady_timer statsTimer_;
  asio::steady_timer drainTimer_;
  asio::signal_set signals_;  // SIGINT and SIGTERM while run() waits; handled on control_
  std::unique_ptr<ControlService> controlService_;
  std::unique_ptr<grpc::Server> grpcServer_;
  uint16_t grpcPort_ = 0;
  std::unique_ptr<MetricsEndpoint> metrics_;  // reads dataPlane_ and registry_: stopped first
  std::atomic<bool> stopped_{false};  // set through requestStop()
  std::mutex stopMu_;                 // with stopCv_: run() sleeps until stopped_
  std::condition_variable stopCv_;
  std::mutex teardownMu_;  // one stop() at a time
  std::atomic<bool> draining_{false};
  std::chrono::steady_clock::time_point drainDeadline_;
  DataPlaneStats lastStats_;
  std::chrono::steady_clock::time_point lastStatsTime_;
};

}  // namespace rs::server
