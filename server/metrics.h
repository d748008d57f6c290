// Prometheus metrics (--metrics-listen): an HTTP endpoint whose /metrics is built at scrape time
// from the io threads' relaxed counters (DataPlane::stats) and one look at the group registry.
// The data plane does nothing for it beyond what it already counts: no lock, no map lookup and
// no allocation per chunk; the cost of a scrape falls on the scraping HTTP thread.
//
// The HTTP server is prometheus-cpp's pull exposer (civetweb, its own two threads). Destroying
// the endpoint stops it and waits for a scrape in progress, so the Server stops it before the
// data plane. server/README.md lists every metric.
#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/common/endpoint.h"
#include "core/common/status.h"
#include "server/config.h"
#include "server/data_plane.h"
#include "server/group_registry.h"

namespace prometheus {
class Exposer;
}

namespace rs::server {

// Everything one scrape shows.
struct MetricsSnapshot {
  DataPlaneStats plane;
  RegistryCounts registry;
  uint64_t maxGroups = 0;
  uint64_t maxSlotsPerGroup = 0;
  bool authRequired = false;    // a job secret is configured
  uint64_t grpcCallsRefused = 0;  // gRPC calls refused for their proof or its rights
  double startTimeSeconds = 0;  // Unix time
};

// The metric families of one scrape, every labelled series present (zeros included) so that
// rate() sees a series from its first increment. Pure: no I/O.
std::vector<prometheus::MetricFamily> metricFamilies(const MetricsSnapshot& snapshot);

class MetricsEndpoint {
 public:
  // Serves http://<config.metricsListen>/metrics; the error names the flag and the address.
  // `grpcCallsRefused` reads the control service's count (none: 0).
  static Result<std::unique_ptr<MetricsEndpoint>> start(
      const ServerConfig& config, const DataPlane& plane, const GroupRegistry& registry,
      std::function<uint64_t()> grpcCallsRefused = {});
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  uint16_t port() const { return port_; }

 private:
  class Collector;
  MetricsEndpoint() = default;

  std::shared_ptr<Collector> collector_;  // the exposer holds it weakly
  std::unique_ptr<prometheus::Exposer> exposer_;
  uint16_t port_ = 0;
  Endpoint self_;  // where a connection reaches the endpoint (see the destructor)
};

}  // namespace rs::server
