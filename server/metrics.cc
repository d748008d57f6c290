#include "server/metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <string>
#include <thread>

#include "core/common/build_info.h"
#include "core/reduce/reduce.h"
#include "core/transport/connector.h"

namespace rs::server {
namespace {

// How long one knock on the stopping endpoint may take (see ~MetricsEndpoint).
constexpr std::chrono::milliseconds kKnockTimeout{50};

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

class Families {
 public:
  void counter(const char* name, const char* help, double value, Labels labels = {}) {
    family(name, help, MetricType::Counter).metric.push_back(sample(std::move(labels), value, true));
  }
  void gauge(const char* name, const char* help, double value, Labels labels = {}) {
    family(name, help, MetricType::Gauge).metric.push_back(sample(std::move(labels), value, false));
  }
  // One series per reason, `name(i)` giving reason i's label value.
  template <size_t N, typename NameOf>
  void counterByReason(const char* name, const char* help, const std::array<uint64_t, N>& values,
                       NameOf nameOf) {
    for (size_t i = 0; i < N; ++i)
      counter(name, help, static_cast<double>(values[i]), {{"reason", std::string(nameOf(i))}});
  }
  void counterByDtypeOp(const char* name, const char* help,
                        const DataPlaneStats::PerDtypeOp& values) {
    for (int d = 0; d < kNumDataTypes; ++d)
      for (int o = 0; o < kNumReduceOps; ++o)
        counter(name, help, static_cast<double>(values[d][o]),
                {{"dtype", std::string(dataTypeName(static_cast<DataType>(d)))},
                 {"op", std::string(reduceOpName(static_cast<ReduceOp>(o)))}});
  }
  void histogram(const char* name, const char* help, const LatencyHistogram::Snapshot& h) {
    ClientMetric m;
    for (size_t i = 0; i < LatencyHistogram::kBoundsSeconds.size(); ++i)
      m.histogram.bucket.push_back({h.cumulative(i), LatencyHistogram::kBoundsSeconds[i]});
    m.histogram.bucket.push_back({h.count(), std::numeric_limits<double>::infinity()});
    m.histogram.sample_count = h.count();
    m.histogram.sample_sum = h.sumSeconds();
    family(name, help, MetricType::Histogram).metric.push_back(std::move(m));
  }

  std::vector<MetricFamily> take() { return std::move(families_); }

 private:
  // Series of one family are added one after another: the family is the last one, or new.
  MetricFamily& family(const char* name, const char* help, MetricType type) {
    if (families_.empty() || families_.back().name != name)
      families_.push_back({name, help, type, {}});
    return families_.back();
  }
  static ClientMetric sample(Labels labels, double value, bool isCounter) {
    ClientMetric m;
    m.label = std::move(labels);
    (isCounter ? m.counter.value : m.gauge.value) = value;
    return m;
  }

  std::vector<MetricFamily> families_;
};

double asDouble(uint64_t v) { return static_cast<double>(v); }
double asDouble(int64_t v) { return static_cast<double>(std::max<int64_t>(0, v)); }

}  // namespace

std::vector<MetricFamily> metricFamilies(const MetricsSnapshot& s) {
  const DataPlaneStats& p = s.plane;
  Families f;
  const BuildInfo& build = buildInfo();
  f.gauge("rs_build_info", "Always 1; the labels say what runs: version, git commit, build type, "
          "and the SIMD target the reduction kernels dispatch to.", 1,
          {{"version", std::string(build.version)},
           {"commit", std::string(build.commit)},
           {"build_type", std::string(build.buildType)},
           {"simd", reduce::activeTargetName()}});
  f.gauge("rs_start_time_seconds", "Unix time at which this reducer started.", s.startTimeSeconds);
  f.gauge("rs_auth_required", "1 when data connections must prove the job secret "
          "(--secret-file); 0 when this reducer is open to any peer that reaches its data port.",
          s.authRequired ? 1 : 0);
  f.counter("rs_grpc_calls_refused_total", "gRPC calls refused for a missing, wrong, stale or "
            "replayed proof, or a job's Drain (the health check is never refused).",
            asDouble(s.grpcCallsRefused));
  f.gauge("rs_draining", "1 while the reducer drains (SIGTERM or the Drain RPC): it refuses new "
          "groups and stops once the active ones are gone.", s.registry.draining ? 1 : 0);

  f.counter("rs_received_bytes_total", "Chunk payload bytes received from workers (REDUCE "
            "frames; frame headers not counted).", asDouble(p.bytesIn));
  f.counter("rs_sent_bytes_total", "Result payload bytes written to workers (RESULT frames; "
            "frame headers not counted).", asDouble(p.bytesOut));
  f.counterByDtypeOp("rs_chunks_reduced_total", "Chunks whose reduction completed (every member's "
                     "contribution summed), by element type and operator.", p.chunksReduced);
  f.counterByDtypeOp("rs_collectives_reduced_total", "Collectives whose first chunk (element "
                     "offset 0) this reducer reduced, by element type and operator. Exactly one "
                     "reducer of a pool reduces that chunk, so the sum over the pool counts every "
                     "collective once.", p.collectivesReduced);
  f.histogram("rs_reduce_latency_seconds", "Per chunk: from its slot opening (the first "
              "member's REDUCE header in and memory granted) until its last result byte was "
              "written to every member's socket.", p.reduceLatency);

  f.gauge("rs_slots_in_use", "Chunks being reduced now (reduction slots held).",
          asDouble(p.slotsOpen));
  f.gauge("rs_slots_per_group_limit", "Most chunks one group may hold open per io thread "
          "(--max-slots-per-group).", asDouble(s.maxSlotsPerGroup));
  f.gauge("rs_slot_memory_in_use_bytes", "Accumulator memory held by open slots and results not "
          "yet written.", asDouble(p.slotBytesInUse));
  f.gauge("rs_slot_memory_limit_bytes", "Accumulator memory limit (--memory-limit); when it is "
          "reached the reducer stops reading and TCP pushes back on the workers.",
          asDouble(p.slotBytesLimit));
  f.gauge("rs_bookkeeping_memory_bytes", "State sized by world size (per group and per open "
          "slot), charged against --memory-limit: the slots get what it leaves.",
          asDouble(p.bookkeepingBytes));
  f.gauge("rs_streams_parked", "Worker streams not being read now because slot memory or the "
          "group's slot quota is exhausted.", asDouble(p.parkedSessions));
  f.counter("rs_stream_parks_total", "Times a worker stream was parked for slot memory "
            "(back-pressure events).", asDouble(p.parks));

  f.gauge("rs_groups", "Groups (communicators) served now.", asDouble(s.registry.groups));
  f.gauge("rs_groups_limit", "Most groups served at once (--max-groups).", asDouble(s.maxGroups));
  f.gauge("rs_group_members", "Members of the groups served, summed over groups (ranks with a "
          "stream open or declared over gRPC).", asDouble(s.registry.members));

  f.counter("rs_connections_accepted_total", "TCP connections accepted on the data port, before "
            "their handshake.", asDouble(p.connectionsAccepted));
  f.counter("rs_accept_errors_total", "Failed accepts on the data port (out of file descriptors, "
            "...), each retried after 50 ms.", asDouble(p.acceptErrors));
  const char* openHelp = "Data connections open: in their handshake, or joined to a group.";
  f.gauge("rs_connections_open", openHelp, asDouble(p.handshakesPending), {{"state", "handshake"}});
  f.gauge("rs_connections_open", openHelp, asDouble(p.connectionsOpen), {{"state", "joined"}});
  f.counter("rs_streams_joined_total", "Data connections whose HELLO was accepted into a group.",
            asDouble(p.streamsJoined));
  f.counter("rs_fabric_streams_total", "Joined streams offered a fabric channel for their "
            "payloads (--fabric-provider; proto/FABRIC.md).",
            asDouble(p.fabricStreams));
  const char* fabricBytesHelp = "Payload bytes sent on the fabric: results written straight "
                                "from the slots' buffers (zero_copy), or copied into a send "
                                "ring first (copied).";
  f.counter("rs_fabric_payload_bytes_total", fabricBytesHelp, asDouble(p.fabricBytesZeroCopy),
            {{"path", "zero_copy"}});
  f.counter("rs_fabric_payload_bytes_total", fabricBytesHelp, asDouble(p.fabricBytesCopied),
            {{"path", "copied"}});
  f.counterByReason("rs_handshake_failures_total", "Data connections refused before joining a "
                    "group, by reason.", p.handshakeFailuresBy,
                    [](size_t i) { return handshakeFailureName(static_cast<HandshakeFailure>(i)); });
  f.counter("rs_handshake_evictions_total", "Pending handshakes refused to make room for a "
            "connection from another address while the handshake pool was full (each also "
            "counted in rs_handshake_failures_total{reason=\"limit\"}).",
            asDouble(p.handshakeEvictions));
  f.counterByReason("rs_frames_rejected_total", "Frames refused on joined streams (the stream is "
                    "closed and its group aborted), by reason.", p.framesRejected,
                    [](size_t i) { return frameRejectionName(static_cast<FrameRejection>(i)); });
  f.counterByReason("rs_group_aborts_total", "Groups aborted, by reason. An abort fails every "
                    "collective the group has in flight on every member, and the group takes no "
                    "more.", p.groupAborts,
                    [](size_t i) { return abortReasonName(static_cast<AbortReason>(i)); });
  f.counterByReason("rs_members_lost_total", "Members this reducer declared lost, by how it "
                    "found out: silent (not a byte for the stream's loss bound, --loss-detect-ms, "
                    "while it waited on the member), unresponsive (the connection timed out: for "
                    "the bound, the member's host acknowledged nothing sent to it, or the member "
                    "read nothing of it). Each fails its group (rs_group_aborts_total).",
                    p.membersLost,
                    [](size_t i) { return memberLossName(static_cast<MemberLoss>(i)); });
  f.counter("rs_heartbeats_sent_total", "HEARTBEAT frames written to members: each on a stream "
            "that owed its member results and had sent nothing for a third of its loss bound, "
            "so about 0 while streams are busy.", asDouble(p.heartbeatsSent));
  f.counter("rs_heartbeats_received_total", "HEARTBEAT frames read from members (each from a "
            "member that owed or awaited something and had sent nothing for a third of the "
            "stream's loss bound).", asDouble(p.heartbeatsReceived));
  f.counter("rs_failovers_total", "Times a group's dead set grew on this reducer: a member's "
            "FAILOVER named a reducer it did not know lost, and it took over its share of that "
            "reducer's chunks (proto/FAILOVER.md).", asDouble(p.failovers));
  f.counter("rs_chunks_resent_total", "Chunks of lost reducers that members resent to this "
            "reducer on lanes and it resolved.", asDouble(p.chunksResent));
  f.counter("rs_groups_moved_away_total", "Groups dropped by this reducer, without failing "
            "them, because a member took it for lost and moved away from it (said so with a "
            "FAILOVER on its stream): the group goes on on the survivors (proto/FAILOVER.md, "
            "'A live reducer taken for lost').", asDouble(p.groupsMovedAway));
  f.counter("rs_rejoins_total", "Groups that took this reducer back after it was restarted: "
            "every member's JOIN came and JOIN_AT went (proto/FAILOVER.md, 'A reducer comes "
            "back').", asDouble(p.rejoins));
  f.counter("rs_rejoins_cancelled_total", "Groups whose rejoin of this reducer was cancelled: "
            "a member's streams or JOIN did not come within the group's loss bound, or a stream "
            "closed before JOIN_AT.", asDouble(p.rejoinsCancelled));
  return f.take();
}

// Builds the families from live counters at every scrape (on an HTTP thread).
class MetricsEndpoint::Collector : public prometheus::Collectable {
 public:
  Collector(const ServerConfig& config, const DataPlane& plane, const GroupRegistry& registry,
            std::function<uint64_t()> grpcCallsRefused)
      : config_(config),
        plane_(plane),
        registry_(registry),
        grpcCallsRefused_(std::move(grpcCallsRefused)),
        startTime_(std::chrono::duration<double>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count()) {}

  std::vector<MetricFamily> Collect() const override {
    MetricsSnapshot s;
    s.plane = plane_.stats();
    s.registry = registry_.counts();
    s.maxGroups = config_.maxGroups;
    s.maxSlotsPerGroup = config_.maxSlotsPerGroup;
    s.authRequired = !config_.secret.empty();
    s.grpcCallsRefused = grpcCallsRefused_ ? grpcCallsRefused_() : 0;
    s.startTimeSeconds = startTime_;
    return metricFamilies(s);
  }

 private:
  const ServerConfig& config_;
  const DataPlane& plane_;
  const GroupRegistry& registry_;
  const std::function<uint64_t()> grpcCallsRefused_;
  const double startTime_;
};

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::start(
    const ServerConfig& config, const DataPlane& plane, const GroupRegistry& registry,
    std::function<uint64_t()> grpcCallsRefused) {
  std::unique_ptr<MetricsEndpoint> e(new MetricsEndpoint());
  e->collector_ =
      std::make_shared<Collector>(config, plane, registry, std::move(grpcCallsRefused));
  try {
    e->exposer_ = std::make_unique<prometheus::Exposer>(config.metricsListen, /*num_threads=*/2);
  } catch (const std::exception& ex) {
    // civetweb says only "possible problem binding to port"; it also has no IPv6 in Debian's build.
    return ioError("metrics endpoint cannot listen on " + config.metricsListen +
                   " (--metrics-listen: is the port taken? IPv6 addresses are not supported): " + ex.what());
  }
  e->exposer_->RegisterCollectable(e->collector_);
  const std::vector<int> ports = e->exposer_->GetListeningPorts();
  if (ports.empty()) return ioError("metrics endpoint on " + config.metricsListen + " has no port");
  e->port_ = static_cast<uint16_t>(ports.front());
  auto self = parseEndpoint(config.metricsListen, "--metrics-listen", PortZero::kAllowed);
  if (!self) return self.status();
  e->self_ = self->withPort(e->port_).reachableLocally();
  return e;
}

MetricsEndpoint::~MetricsEndpoint() {
  // Stopping civetweb waits for its accept thread, which sees the stop flag only when its poll()
  // returns: after up to 2 s (its SOCKET_TIMEOUT_QUANTUM), or at once when a connection
  // arrives. Knock until it has stopped, so that a SIGTERM'd reducer exits promptly.
  std::atomic<bool> stopped{false};
  std::thread knocker([this, &stopped] {
    asio::io_context io;
    // One attempt per knock: a knock that is refused (civetweb stopped listening) is not
    // worth repeating before `stopped` is looked at again.
    auto connector = transport::makeConnector(io, {}, {kKnockTimeout, kKnockTimeout});
    while (!stopped.load()) {
      connector->connect(self_, kKnockTimeout, [](Result<std::unique_ptr<transport::Stream>>) {
        // Connected (and closed again at once) or not: either way the knock is done.
      });
      io.run();
      io.restart();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  exposer_.reset();  // stops civetweb and joins its threads: no scrape runs after this
  stopped = true;
  knocker.join();
}

}  // namespace rs::server
