// The families a scrape builds from the reducer's counters (server/metrics.h), checked as
// Prometheus will read them: the text exposition prometheus-cpp writes. The endpoint itself,
// over HTTP with real traffic, is covered by tests/dataplane/metrics_endpoint_test.cc and, with
// a real Prometheus server, by tests/integration/metrics_test.sh.
#include "server/metrics.h"

#include <catch2/catch.hpp>
#include <prometheus/text_serializer.h>

#include <set>
#include <sstream>
#include <string>

#include "core/common/build_info.h"

namespace {

using namespace rs::server;
using namespace std::chrono_literals;
using prometheus::MetricType;

bool hasLine(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l == line) return true;
  return false;
}

MetricsSnapshot sample() {
  MetricsSnapshot s;
  s.plane.bytesIn = 1234;
  s.plane.bytesOut = 5678;
  s.plane.chunksReduced[static_cast<size_t>(rs::DataType::kFloat32)]
                       [static_cast<size_t>(rs::ReduceOp::kSum)] = 7;
  s.plane.collectivesReduced[static_cast<size_t>(rs::DataType::kBfloat16)]
                            [static_cast<size_t>(rs::ReduceOp::kAvg)] = 3;
  s.plane.framesRejected[static_cast<size_t>(FrameRejection::kDuplicate)] = 2;
  s.plane.handshakeFailuresBy[static_cast<size_t>(HandshakeFailure::kDraining)] = 4;
  s.plane.handshakeFailuresBy[static_cast<size_t>(HandshakeFailure::kAuth)] = 3;
  s.authRequired = true;
  s.plane.groupAborts[static_cast<size_t>(AbortReason::kTimeout)] = 1;
  s.plane.connectionsAccepted = 9;
  s.plane.handshakesPending = 1;
  s.plane.connectionsOpen = 8;
  s.plane.streamsJoined = 8;
  s.plane.slotsOpen = 5;
  s.plane.slotBytesInUse = 1 << 20;
  s.plane.slotBytesLimit = 2ull << 30;
  s.plane.heartbeatsSent = 11;
  s.plane.heartbeatsReceived = 12;
  s.plane.membersLost[static_cast<size_t>(MemberLoss::kSilent)] = 13;
  s.plane.failovers = 14;
  s.plane.chunksResent = 15;
  s.plane.groupsMovedAway = 16;
  LatencyHistogram h;
  h.observe(30us);
  h.observe(3ms);
  h.observe(20s);
  h.mergeInto(s.plane.reduceLatency);
  s.registry = {2, 6, true};
  s.maxGroups = 1024;
  s.maxSlotsPerGroup = 256;
  s.grpcCallsRefused = 9;
  s.startTimeSeconds = 1700000000;
  return s;
}

TEST_CASE("metrics: names follow Prometheus naming, and no label can carry a group id") {
  const auto families = metricFamilies(sample());
  std::set<std::string> names;
  for (const auto& f : families) {
    INFO(f.name);
    CHECK(names.insert(f.name).second);  // one family per name
    CHECK(f.name.rfind("rs_", 0) == 0);
    CHECK(!f.help.empty());
    CHECK(!f.metric.empty());
    if (f.type == MetricType::Counter) CHECK(f.name.ends_with("_total"));
    else CHECK(f.name.find("_total") == std::string::npos);
    // Base units only, as the last word (or before _total).
    for (const char* unit : {"_milliseconds", "_microseconds", "_kilobytes", "_megabytes"})
      CHECK(f.name.find(unit) == std::string::npos);
    for (const auto& m : f.metric)
      for (const auto& l : m.label) {
        CHECK(l.name.find("group") == std::string::npos);
        CHECK(l.name != "rank");
      }
  }
  for (const char* wanted :
       {"rs_build_info", "rs_auth_required", "rs_draining", "rs_received_bytes_total", "rs_sent_bytes_total",
        "rs_chunks_reduced_total", "rs_collectives_reduced_total", "rs_reduce_latency_seconds",
        "rs_slots_in_use", "rs_slot_memory_in_use_bytes", "rs_slot_memory_limit_bytes",
        "rs_bookkeeping_memory_bytes",
        "rs_groups", "rs_group_members", "rs_connections_open", "rs_connections_accepted_total",
        "rs_frames_rejected_total", "rs_group_aborts_total", "rs_handshake_failures_total",
        "rs_grpc_calls_refused_total", "rs_members_lost_total", "rs_heartbeats_sent_total",
        "rs_heartbeats_received_total", "rs_failovers_total", "rs_chunks_resent_total",
        "rs_groups_moved_away_total"})
    CHECK(names.count(wanted) == 1);
}

// Lines the exposition of sample() must hold, exactly as prometheus-cpp writes them.
void checkLines(const std::string& text, std::initializer_list<const char*> lines) {
  for (const char* line : lines) {
    INFO("missing: " << line);
    CHECK(hasLine(text, line));
  }
}

TEST_CASE("metrics: the exposition carries the counters' values and every label combination") {
  const std::string text = prometheus::TextSerializer().Serialize(metricFamilies(sample()));
  INFO(text);
  checkLines(text, {
      "# TYPE rs_received_bytes_total counter",
      "rs_received_bytes_total 1234",
      "rs_sent_bytes_total 5678",
      "rs_chunks_reduced_total{dtype=\"fp32\",op=\"sum\"} 7",
      "rs_chunks_reduced_total{dtype=\"int8\",op=\"prod\"} 0",  // present at 0
      "rs_collectives_reduced_total{dtype=\"bf16\",op=\"avg\"} 3",
      "rs_frames_rejected_total{reason=\"duplicate\"} 2",
      "rs_frames_rejected_total{reason=\"malformed\"} 0",
      "rs_handshake_failures_total{reason=\"draining\"} 4",
      "rs_group_aborts_total{reason=\"timeout\"} 1",
      "rs_connections_open{state=\"handshake\"} 1",
      "rs_connections_open{state=\"joined\"} 8",
      "rs_slots_in_use 5",
      "rs_slot_memory_limit_bytes 2147483648",
      "rs_groups 2",
      "rs_auth_required 1",
      "rs_grpc_calls_refused_total 9",
      "rs_handshake_failures_total{reason=\"auth\"} 3",
      "rs_group_members 6",
      "rs_draining 1",
      "rs_members_lost_total{reason=\"silent\"} 13",
      "rs_heartbeats_sent_total 11",
      "rs_heartbeats_received_total 12",
      "rs_failovers_total 14",
      "rs_chunks_resent_total 15",
      "rs_groups_moved_away_total 16",
  });
  const rs::BuildInfo& b = rs::buildInfo();
  CHECK(text.find("rs_build_info{version=\"" + std::string(b.version) + "\",commit=\"" +
                  std::string(b.commit) + "\",build_type=\"" + std::string(b.buildType) +
                  "\",simd=\"") != std::string::npos);
  // 12 dtypes (fp8e4m3 and fp8e5m2 the last) x 5 ops, each a series of both per-dtype counters.
  size_t chunkSeries = 0;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) chunkSeries += l.rfind("rs_chunks_reduced_total{", 0) == 0;
  CHECK(chunkSeries == 60);
  CHECK(text.find("rs_chunks_reduced_total{dtype=\"fp8e5m2\",op=\"avg\"}") != std::string::npos);
}

TEST_CASE("metrics: the latency histogram is cumulative and its +Inf bucket is the count") {
  const std::string text = prometheus::TextSerializer().Serialize(metricFamilies(sample()));
  INFO(text);
  checkLines(text, {
      "# TYPE rs_reduce_latency_seconds histogram",
      "rs_reduce_latency_seconds_count 3",
      "rs_reduce_latency_seconds_bucket{le=\"5e-05\"} 1",
      "rs_reduce_latency_seconds_bucket{le=\"0.005\"} 2",
      "rs_reduce_latency_seconds_bucket{le=\"10\"} 2",
      "rs_reduce_latency_seconds_bucket{le=\"+Inf\"} 3",
  });
}

}  // namespace
