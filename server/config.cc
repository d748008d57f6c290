#include "server/config.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <limits>
#include <thread>

#include "core/cluster/cluster_spec.h"
#include "core/common/build_info.h"
#include "core/common/byte_size.h"
#include "core/common/env.h"
#include "core/common/secret.h"
#include "core/reduce/reduce.h"
#include "core/common/endpoint.h"

namespace rs::server {

std::string ServerConfig::describe() const {
  return fmt::format(
      "data={} grpc={} io_threads={} max_streams_per_worker={} max_chunk={} memory_limit={} "
      "max_groups={} max_groups_per_job={} max_slots_per_group={} collective_timeout_ms={} "
      "handshake_timeout_ms={} loss_detect_ms={} "
      "max_connections_per_group={} max_connections_per_peer={} max_pending_handshakes={} max_pending_handshakes_per_peer={} "
      "idle_timeout_ms={} piece={} read_wake={} max_lead={} link_gbps={} stats_interval_s={} log={}/{} sndbuf={} rcvbuf={} "
      "metrics={} fabric={}{}",
      dataListen, grpcListen, ioThreads, maxStreamsPerWorker, formatByteSize(maxChunkBytes),
      formatByteSize(memoryLimitBytes), maxGroups, maxGroupsPerJob, maxSlotsPerGroup,
      collectiveTimeoutMs,
      handshakeTimeoutMs, lossDetectMs, maxConnectionsPerGroup, maxConnectionsPerPeer, maxPendingHandshakes,
      maxPendingHandshakesPerPeer, idleTimeoutMs,
      formatByteSize(pieceBytes), formatByteSize(readWakeBytes),
      formatByteSize(maxLeadBytes), linkGbps, statsIntervalSeconds, logLevel, logFormat,
      transport.tcp.sendBufferBytes, transport.tcp.recvBufferBytes, metricsListen.empty() ? "off" : metricsListen,
      fabricProvider, fabricNode.empty() ? "" : "@" + fabricNode);
}

uint32_t ServerConfig::streamLossDetectMs(uint32_t askedMs) const {
  if (lossDetectMs == 0 || askedMs == 0) return lossDetectMs;
  return std::min(askedMs, lossDetectMs);
}

Status ServerConfig::validate() const {
  if (ioThreads < 1 || ioThreads > 1024)
    return invalidArgument("--io-threads must be 1..1024, got " + std::to_string(ioThreads));
  if (maxStreamsPerWorker < 1 || maxStreamsPerWorker > 256)
    return invalidArgument("--max-streams-per-worker must be 1..256");
  if (maxChunkBytes < 4096) return invalidArgument("--max-chunk must be at least 4 KiB");
  if (pieceBytes < 4096 || pieceBytes % 64 != 0)
    return invalidArgument("--piece must be at least 4 KiB and a multiple of 64 bytes");
  if (maxLeadBytes != 0 && maxLeadBytes < pieceBytes)
    return invalidArgument(fmt::format("--max-lead must be 0 (no limit) or at least --piece ({})",
                                       formatByteSize(pieceBytes)));
  // One chunk's accumulator (fp32 for 16-bit types: twice the payload) must fit in one io
  // thread's share, or that chunk could never be reduced.
  const uint64_t perThread = memoryLimitBytes / static_cast<uint64_t>(ioThreads);
  if (perThread < 2ull * maxChunkBytes)
    return invalidArgument(fmt::format(
        "--memory-limit {} leaves {} per io thread, less than one fp16 chunk's accumulator "
        "(2 x --max-chunk = {}); raise the limit or lower --max-chunk/--io-threads",
        formatByteSize(memoryLimitBytes), formatByteSize(perThread),
        formatByteSize(2ull * maxChunkBytes)));
  if (maxGroups < 1) return invalidArgument("--max-groups must be at least 1");
  if (maxGroupsPerJob < 1) return invalidArgument("--max-groups-per-job must be at least 1");
  if (maxSlotsPerGroup < 1) return invalidArgument("--max-slots-per-group must be at least 1");
  if (collectiveTimeoutMs < 1) return invalidArgument("--collective-timeout-ms must be >= 1");
  if (handshakeTimeoutMs < 1) return invalidArgument("--handshake-timeout-ms must be >= 1");
  if (lossDetectMs != 0 && lossDetectMs < wire::kMinLossDetectMs)
    return invalidArgument(fmt::format("--loss-detect-ms must be 0 (off) or at least {}, got {}",
                                       wire::kMinLossDetectMs, lossDetectMs));
  if (maxConnectionsPerGroup < 1)
    return invalidArgument("--max-connections-per-group must be at least 1");
  if (maxConnectionsPerPeer < 1)
    return invalidArgument("--max-connections-per-peer must be at least 1");
  if (maxPendingHandshakes < 1)
    return invalidArgument("--max-pending-handshakes must be at least 1");
  if (maxPendingHandshakesPerPeer < 1)
    return invalidArgument("--max-pending-handshakes-per-peer must be at least 1");
  if (statsIntervalSeconds < 0) return invalidArgument("--stats-interval must be >= 0");
  if (!(linkGbps >= 0 && linkGbps <= 100000))
    return invalidArgument("--link-gbps must be 0 (not paced) .. 100000");
  if (!metricsListen.empty()) {
    // The parse of every listen address; it also refuses civetweb's lists ("a:1,b:2", which
    // would listen on each).
    if (auto ep = parseEndpoint(metricsListen,
                                "--metrics-listen must be HOST:PORT (port 0: any free port)",
                                PortZero::kAllowed);
        !ep)
      return ep.status();
  }
  if (fabricProvider.empty() ||
      !std::all_of(fabricProvider.begin(), fabricProvider.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' ||
               ch == ';';
      }))
    return invalidArgument("--fabric-provider must be auto, off or a libfabric provider name "
                           "(verbs, efa, tcp), got '" + fabricProvider + "'");
  return Status::ok();
}

namespace {

// CLI11 transform for sizes such as 64KiB: the option then holds the number of bytes.
std::function<std::string(std::string)> byteSizeTransform() {
  return [](std::string value) -> std::string {
    auto parsed = parseByteSize(value);
    if (!parsed) throw CLI::ValidationError(parsed.status().message());
    return std::to_string(*parsed);
  };
}

// A flag and its RS_* twin, with its default shown in --help.
template <typename T>
CLI::Option* addOption(CLI::App& app, const std::string& flag, T* target, const std::string& help,
                       const std::string& env) {
  return app.add_option(flag, *target, help)->envname(env)->capture_default_str();
}

// A size flag (64KiB, 8MiB, a plain number of bytes) and its RS_* twin, stored into *target and
// saturated at the largest value its type holds.
template <typename T>
CLI::Option* addByteSizeOption(CLI::App& app, const std::string& flag, T* target,
                               const std::string& help, const std::string& env) {
  auto store = [target](const std::string& bytes) {
    const uint64_t most = static_cast<uint64_t>(std::numeric_limits<T>::max());
    *target = static_cast<T>(std::min<uint64_t>(std::stoull(bytes), most));
  };
  return app.add_option_function<std::string>(flag, store, help)
      ->envname(env)
      ->transform(byteSizeTransform())
      ->type_name("SIZE")
      ->default_str(formatByteSize(static_cast<uint64_t>(*target)));
}

// The port CLUSTER_SPEC gives this task, when it is a reducer; 0 otherwise.
Result<uint16_t> reducerPortFromClusterSpec() {
  const std::optional<std::string> spec = envString("CLUSTER_SPEC");
  if (!spec) return uint16_t{0};
  auto parsed = cluster::parseClusterSpec(*spec);
  if (!parsed) return parsed.status();
  if (!parsed->isReducerTask()) return uint16_t{0};
  const auto& reducers = parsed->reducers();
  if (parsed->taskIndex < 0 || static_cast<size_t>(parsed->taskIndex) >= reducers.size())
    return invalidArgument(fmt::format(
        "CLUSTER_SPEC: task.index {} is not a valid index into cluster.workerpool2 ({} entries)",
        parsed->taskIndex, reducers.size()));
  return reducers[static_cast<size_t>(parsed->taskIndex)].port;
}

// The job secret: the file named by --secret-file or RS_SECRET_FILE, else RS_SECRET, read as the
// workers read it (core/common/secret.h). There is no --secret flag: a command line is visible
// to every user of the machine.
Status loadSecret(ServerConfig& c) {
  auto secret = secretFromEnvironment(c.secretFile, "--secret-file (or RS_SECRET_FILE)");
  if (!secret) return secret.status();
  c.secret = std::move(*secret);
  return Status::ok();
}

// The gRPC TLS pair: both files or neither, each readable and PEM.
Status loadGrpcTls(ServerConfig& c) {
  if (c.grpcTlsCertFile.empty() != c.grpcTlsKeyFile.empty())
    return invalidArgument("--grpc-tls-cert and --grpc-tls-key (RS_GRPC_TLS_CERT, "
                           "RS_GRPC_TLS_KEY) go together: give both or neither");
  if (c.grpcTlsCertFile.empty()) return Status::ok();
  auto read = [](const std::string& path, const char* flag, const char* marker,
                 std::string* out) -> Status {
    std::ifstream f(path, std::ios::binary);
    if (!f) return invalidArgument(fmt::format("{}: cannot read '{}'", flag, path));
    out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    if (out->find(marker) == std::string::npos)
      return invalidArgument(fmt::format("{}: '{}' holds no PEM {}", flag, path, marker));
    return Status::ok();
  };
  RS_RETURN_IF_ERROR(read(c.grpcTlsCertFile, "--grpc-tls-cert", "CERTIFICATE", &c.grpcTlsCert));
  return read(c.grpcTlsKeyFile, "--grpc-tls-key", "PRIVATE KEY", &c.grpcTlsKey);
}

}  // namespace

ParsedConfig parseServerConfig(int argc, char** argv) {
  ParsedConfig out;
  ServerConfig& c = out.config;
  CLI::App app{"reduction-server: the reducer daemon of the Reduction Server all-reduce service"};
  app.set_version_flag("--version", versionLine("reduction-server", reduce::activeTargetName()));
  // Modes beside serving; no RS_* twins, or the variable would turn the daemon into a probe.
  auto* probeOpt =
      app.add_option("--health-probe", out.healthProbeAddress,
                     "Do not serve: ask the daemon at HOST:PORT (default: this configuration's "
                     "gRPC address, a wildcard host as loopback) over grpc.health.v1 whether it "
                     "serves; exit 0 if SERVING, else 1 (for container health checks)")
          ->expected(0, 1)
          ->type_name("[HOST:PORT]");
  app.add_option("--derive-job-secret", out.deriveJobSecret,
                 "Do not serve: print the secret of job JOB, derived from this pool's secret "
                 "(--secret-file, RS_SECRET_FILE or RS_SECRET), for the operator to hand to "
                 "that job's workers")
      ->type_name("JOB");
  app.add_option("--health-probe-timeout-ms", out.healthProbeTimeoutMs,
                 "Deadline of the --health-probe check")
      ->check(CLI::Range(1u, 600000u))
      ->type_name("MS")
      ->capture_default_str();

  auto* dataOpt = addOption(app, "--data-listen", &c.dataListen,
                            "Data-plane listen address host:port (port 0: any free port)",
                            "RS_DATA_LISTEN");
  addOption(app, "--grpc-listen", &c.grpcListen,
            "gRPC control-plane listen address host:port (default: data port + 1)",
            "RS_GRPC_LISTEN");
  addOption(app, "--io-threads", &c.ioThreads,
            "Data-plane io threads (0: one per core)",
            "RS_IO_THREADS");
  addOption(app, "--max-streams-per-worker", &c.maxStreamsPerWorker,
            "Most data streams one worker may open to this reducer (HELLO and JoinGroup alike)",
            "RS_MAX_STREAMS_PER_WORKER");
  addByteSizeOption(app, "--max-chunk", &c.maxChunkBytes,
                    "Largest chunk payload accepted (e.g. 8MiB)",
                    "RS_MAX_CHUNK");
  addByteSizeOption(app, "--memory-limit", &c.memoryLimitBytes,
                    "Accumulator memory for all groups, and their state sized by world size "
                    "(e.g. 2GiB); when full, the reducer stops reading and TCP pushes back on the "
                    "workers, and a group whose state does not fit is refused. One group holds at most its share "
                    "of an io thread's part (all but 2 x --max-chunk when alone, an even split "
                    "among active groups), so a stalled job cannot pin it all",
                    "RS_MEMORY_LIMIT");
  addOption(app, "--max-groups", &c.maxGroups,
            "Most groups served at once",
            "RS_MAX_GROUPS");
  addOption(app, "--max-groups-per-job", &c.maxGroupsPerJob,
            "Most groups one job (a worker's RS_JOB, on a pool with per-job keys) may hold at "
            "once, so that one tenant cannot take every group of a shared pool",
            "RS_MAX_GROUPS_PER_JOB");
  addOption(app, "--link-gbps", &c.linkGbps,
            "This host's link rate in Gbit/s (the NIC's or the VM's egress cap): the result "
            "streams are paced to an equal share of it, so that starting them all at once "
            "cannot overflow the host's transmit queue (0: not paced)",
            "RS_LINK_GBPS");
  addOption(app, "--fabric-provider", &c.fabricProvider,
            "The RDMA data path through libfabric (proto/FABRIC.md): auto (offer it where a "
            "verbs or EFA device is found), off, or a provider to offer (verbs, efa; tcp for "
            "tests). Workers use it when both ends agree, else TCP; never needed to start",
            "RS_FABRIC_PROVIDER");
  addOption(app, "--fabric-node", &c.fabricNode,
            "The local address the fabric binds (empty: the data listener's host unless it is "
            "a wildcard, else the provider's first)",
            "RS_FABRIC_NODE");
  addOption(app, "--max-slots-per-group", &c.maxSlotsPerGroup,
            "Most chunks one group may hold open per io thread",
            "RS_MAX_SLOTS_PER_GROUP");
  addOption(app, "--collective-timeout-ms", &c.collectiveTimeoutMs,
            "Abort a group whose chunk waits longer than this for its members: the default, "
            "and the most a group may ask for in HELLO or JoinGroup (bounds a stuck group)",
            "RS_COLLECTIVE_TIMEOUT_MS");
  addOption(app, "--handshake-timeout-ms", &c.handshakeTimeoutMs,
            "Close a connection that sends no HELLO within this time",
            "RS_HANDSHAKE_TIMEOUT_MS");
  addOption(app, "--loss-detect-ms", &c.lossDetectMs,
            "Declare a member lost when it has sent nothing (not a byte) for this long while "
            "this reducer waits on it (a chunk's contribution begun, or its results owed), and "
            "send a HEARTBEAT on a stream that owes a member something and has been quiet for "
            "a third of it, so that members find a stopped reducer within it too: the bound of "
            "every stream, and the most a member may ask for (RS_LOSS_DETECT_MS on the "
            "workers). A lost member fails its group today. Also TCP keep-alive and "
            "TCP_USER_TIMEOUT on data connections (0: off, no heartbeats; else >= 100)",
            "RS_LOSS_DETECT_MS");
  addOption(app, "--max-connections-per-group", &c.maxConnectionsPerGroup,
            "Most data connections one group may hold open (bounds one job's share of the "
            "reducer's descriptors and sessions)",
            "RS_MAX_CONNECTIONS_PER_GROUP");
  addOption(app, "--max-connections-per-peer", &c.maxConnectionsPerPeer,
            "Most joined data connections from one peer address, over all its groups (bounds "
            "what one host can take from the others)",
            "RS_MAX_CONNECTIONS_PER_PEER");
  addOption(app, "--max-pending-handshakes", &c.maxPendingHandshakes,
            "Most data connections in their handshake (accepted, HELLO not yet in) at once "
            "(bounds what silent connections hold); when full, a newcomer takes the place of "
            "the oldest of the address holding the most, if it holds two more than the "
            "newcomer's, else the newcomer is refused with an ERROR",
            "RS_MAX_PENDING_HANDSHAKES");
  addOption(app, "--max-pending-handshakes-per-peer", &c.maxPendingHandshakesPerPeer,
            "Most of those from one peer address (so that one host's silent connections "
            "cannot keep other hosts' workers from joining)",
            "RS_MAX_PENDING_HANDSHAKES_PER_PEER");
  addOption(app, "--idle-timeout-ms", &c.idleTimeoutMs,
            "Fail a group one of whose data connections has sent nothing for this long while "
            "the group has no collective in flight (frees what abandoned jobs hold; 0: never)",
            "RS_IDLE_TIMEOUT_MS");
  addByteSizeOption(app, "--piece", &c.pieceBytes,
                    "Receive-and-sum piece size (cache-sized, e.g. 256KiB)",
                    "RS_PIECE");
  addByteSizeOption(app, "--read-wake", &c.readWakeBytes,
                    "Wake a contribution's read once this much of it has arrived, or the rest of "
                    "its chunk (SO_RCVLOWAT): fewer wake-ups per byte, coarser cut-through (0: any "
                    "byte)",
                    "RS_READ_WAKE");
  addByteSizeOption(app, "--max-lead", &c.maxLeadBytes,
                    "How far one worker's upload of a chunk may run ahead of the slowest worker's "
                    "before the reducer stops reading it, so that workers sharing a reducer's link "
                    "stay in step (0: no limit). Also sets the socket receive buffer to this unless "
                    "--socket-recv-buffer is given: keep it above each stream's share of the "
                    "bandwidth-delay product",
                    "RS_MAX_LEAD");
  addByteSizeOption(app, "--socket-send-buffer", &c.transport.tcp.sendBufferBytes,
                    "SO_SNDBUF for data sockets (0: autotune)", "RS_SOCKET_SEND_BUFFER");
  addByteSizeOption(app, "--socket-recv-buffer", &c.transport.tcp.recvBufferBytes,
                    "SO_RCVBUF for data sockets (0: autotune)", "RS_SOCKET_RECV_BUFFER");
  addOption(app, "--stats-interval", &c.statsIntervalSeconds,
            "Seconds between throughput log lines (0: off)",
            "RS_STATS_INTERVAL");
  addOption(app, "--log-level", &c.logLevel,
            "trace, debug, info, warn, error, critical, off",
            "RS_LOG_LEVEL");
  app.add_option("--log-format", c.logFormat, "text, or json (one object per line)")
      ->envname("RS_LOG_FORMAT")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--port-file", c.portFile,
                 "Write '<data port> <grpc port>' here once listening (for launchers), followed "
                 "by ' <metrics port>' when --metrics-listen is set")
      ->envname("RS_PORT_FILE");
  // No envname: RS_SECRET_FILE is read with RS_SECRET in loadSecret, as the workers read them;
  // the help names it as CLI11 names the others.
  app.add_option("--secret-file", c.secretFile,
                 "File holding the job secret (at least 16 random bytes; RS_SECRET may hold it "
                 "instead). Every data connection must prove it (HMAC-SHA256 over a per-connection "
                 "challenge) before it may join a group. Without one the reducer is open: any peer "
                 "that reaches the data port can join any group")
      ->option_text("TEXT (Env:RS_SECRET_FILE)");
  app.add_option("--grpc-tls-cert", c.grpcTlsCertFile,
                 "PEM certificate (chain) for serving gRPC over TLS, with --grpc-tls-key; "
                 "without them gRPC is plaintext. Protects the calls' proofs and answers from "
                 "being read or altered on the network; the data plane is never encrypted. "
                 "--health-probe then checks over TLS, trusting this certificate")
      ->envname("RS_GRPC_TLS_CERT");
  app.add_option("--grpc-tls-key", c.grpcTlsKeyFile,
                 "PEM private key of --grpc-tls-cert")
      ->envname("RS_GRPC_TLS_KEY");
  addOption(app, "--metrics-listen", &c.metricsListen,
            "Serve Prometheus metrics at http://HOST:PORT/metrics (empty: off; port 0: any free "
            "port). The deployment specs use port 2224 (data 2222, gRPC 2223), e.g. "
            "0.0.0.0:2224",
            "RS_METRICS_LISTEN");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    out.exitCode = app.exit(e);
    return out;
  }
  out.healthProbe = probeOpt->count() > 0;
  if (c.maxLeadBytes != 0 && c.transport.tcp.recvBufferBytes == 0)
    c.transport.tcp.recvBufferBytes = static_cast<int>(std::min<uint64_t>(c.maxLeadBytes, INT32_MAX));
  if (c.ioThreads == 0) c.ioThreads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  if (dataOpt->count() == 0 && !envRaw("RS_DATA_LISTEN")) {
    auto port = reducerPortFromClusterSpec();
    if (!port) {
      fmt::print(stderr, "reduction-server: {}\n", port.status().message());
      out.exitCode = out.healthProbe ? 1 : 2;  // Docker reserves 2 in health checks
      return out;
    }
    if (*port != 0) c.dataListen = "0.0.0.0:" + std::to_string(*port);
  }
  if (Status s = loadGrpcTls(c); !s.isOk() && out.deriveJobSecret.empty()) {
    fmt::print(stderr, "reduction-server: {}\n", s.message());
    out.exitCode = out.healthProbe ? 1 : 2;
    return out;
  }
  if (out.healthProbe) return out;  // the probe uses the listen addresses and the TLS cert
  if (Status s = loadSecret(c); !s.isOk()) {
    fmt::print(stderr, "reduction-server: {}\n", s.message());
    out.exitCode = 2;
    return out;
  }
  if (!out.deriveJobSecret.empty()) {
    if (c.secret.empty()) {
      fmt::print(stderr, "reduction-server: --derive-job-secret needs the pool's secret "
                         "(--secret-file, RS_SECRET_FILE or RS_SECRET)\n");
      out.exitCode = 2;
    }
    return out;  // the other knobs do not matter to it
  }
  if (Status s = c.validate(); !s.isOk()) {
    fmt::print(stderr, "reduction-server: {}\n", s.message());
    out.exitCode = 2;
  }
  return out;
}

}  // namespace rs::server
