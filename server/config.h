// The reducer's configuration: flags, each with an RS_* environment twin, and CLUSTER_SPEC.
#pragma once

#include <cstdint>
#include <string>

#include "core/common/status.h"
#include "core/transport/options.h"
#include "core/wire/frame.h"

namespace rs::server {

struct ServerConfig {
  std::string dataListen = "0.0.0.0:2222";  // host:port of the data plane; port 0 picks one
  std::string grpcListen;                   // host:port of gRPC; empty: data port + 1
  int ioThreads = 0;                        // 0: one per core
  uint32_t maxStreamsPerWorker = 16;        // streams one worker may open to this reducer
  uint32_t maxChunkBytes = wire::kDefaultMaxPayloadBytes;  // largest chunk payload accepted
  uint64_t memoryLimitBytes = 2ull << 30;   // accumulator memory, split evenly across io threads
  uint32_t maxGroups = 1024;
  uint32_t maxGroupsPerJob = 256;  // of a named job (RS_JOB) on a shared pool
  uint32_t maxSlotsPerGroup = 256;          // chunks one group may hold open per io thread
  uint32_t collectiveTimeoutMs = 300000;    // the default, and the ceiling on a group's own
  uint32_t handshakeTimeoutMs = 10000;      // from accept until the HELLO is in
  // A peer silent this long while the other side waits on it is lost (proto/WIRE.md,
  // "Heartbeats and the loss bound"): the default bound of every stream, and the most a member
  // may ask for in its HELLO. 0: no heartbeats and no loss detection.
  uint32_t lossDetectMs = 10000;
  // Joined data connections one group, or one peer address (all its groups), may hold open.
  uint32_t maxConnectionsPerGroup = 16384;
  uint32_t maxConnectionsPerPeer = 4096;
  // Connections accepted and not yet through their HELLO: in all, and from one peer address
  // (so that one host's silent connections cannot keep every other host out).
  uint32_t maxPendingHandshakes = 4096;
  uint32_t maxPendingHandshakesPerPeer = 1024;
  // A joined stream silent this long while its group has no collective in flight fails its
  // group (0: never). Long, so that evaluation or checkpointing between steps never trips it.
  uint32_t idleTimeoutMs = 3600000;
  uint32_t pieceBytes = 256u << 10;         // summed while receiving, in pieces this size
  // A contribution's read wakes once this much is queued, or the rest of its frame (TCP's
  // SO_RCVLOWAT): fewer wake-ups and calls per byte, at the cost of coarser cut-through.
  uint32_t readWakeBytes = 64u << 10;
  // How far one member's contribution to a chunk may run ahead of the slowest member's before
  // the reducer stops reading it (0: no limit). See Slot. Only a bounded receive window makes
  // the pause reach the sender, so it also sets SO_RCVBUF unless that is given.
  uint64_t maxLeadBytes = 0;
  // This host's link rate (--link-gbps): the reducer paces its result streams to an equal share
  // of it (core/transport/link_share.h). 0: not paced.
  double linkGbps = 0;
  // The fabric (proto/FABRIC.md): "auto" offers it where libfabric finds a verbs or EFA device,
  // a provider name ("tcp" for tests, "verbs", "efa") offers that one, "off" none. Never needed
  // to start: without a provider the reducer logs why and serves over TCP alone.
  std::string fabricProvider = "auto";
  // The local address the fabric binds (the tcp provider's interface); empty: the data
  // listener's host unless that is a wildcard, else the provider's first.
  std::string fabricNode;
  double statsIntervalSeconds = 30;         // the periodic throughput line; 0 turns it off
  std::string logLevel = "info";
  std::string logFormat = "text";
  // If set, "<data port> <grpc port>\n" is written once listening, with " <metrics port>"
  // before the newline when metrics are on.
  std::string portFile;
  std::string metricsListen;  // host:port of the Prometheus endpoint; empty: off; port 0 picks one
  transport::Options transport;  // socket tuning of the data connections
  // Authentication (proto/WIRE.md): the job secret every data connection must prove, from
  // --secret-file (held here), else RS_SECRET_FILE or RS_SECRET (core/common/secret.h); empty:
  // open (any peer may join any group).
  std::string secretFile;
  std::string secret;  // never logged
  // gRPC over TLS (both or neither): PEM files from --grpc-tls-cert / RS_GRPC_TLS_CERT and
  // --grpc-tls-key / RS_GRPC_TLS_KEY, read at start-up into the two strings below. Empty:
  // plaintext gRPC. The data plane is never TLS (proto/WIRE.md).
  std::string grpcTlsCertFile, grpcTlsKeyFile;
  std::string grpcTlsCert, grpcTlsKey;  // PEM; the key is never logged

  // The loss bound of a stream whose HELLO asked for `askedMs` (0: none asked): the operator's
  // --loss-detect-ms caps it, and 0 there turns detection off whatever was asked.
  uint32_t streamLossDetectMs(uint32_t askedMs) const;
  // "data=0.0.0.0:2222 grpc=... io_threads=2 ..." for the start-up log line.
  std::string describe() const;
  // Checks ranges and relations between knobs; the message names the flag.
  Status validate() const;
};

// Parses argv and the RS_* variables (flags win). When CLUSTER_SPEC names this task as a
// reducer (workerpool2), the data port defaults to this task's port in the spec.
// Returns the config, or an error; `--help` is reported through `exitCode` >= 0.
struct ParsedConfig {
  ServerConfig config;
  int exitCode = -1;  // >= 0: stop now with this code (help printed, or a flag error)
  // --health-probe [HOST:PORT]: probe a running daemon instead of starting one (health_probe.h);
  // without an address, the one `config` derives. The daemon's own knobs are not validated then.
  // --derive-job-secret JOB: print the job's secret derived from this pool's secret
  // (wire::deriveJobSecret) instead of serving.
  std::string deriveJobSecret;
  bool healthProbe = false;
  std::string healthProbeAddress;
  uint32_t healthProbeTimeoutMs = 3000;
};
ParsedConfig parseServerConfig(int argc, char** argv);

}  // namespace rs::server
