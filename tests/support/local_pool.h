// Test support: R reducers running in this process on loopback (real sockets, real threads),
// and helpers to run W members as threads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster/cluster_spec.h"
#include "rs/client.h"
#include "server/config.h"
#include "server/server.h"
#include "tests/support/verify_pattern.h"

namespace rs::test {

// Small and quiet: ephemeral ports on 127.0.0.1, two io threads, no stats line; the collective
// timeout and the loss bound are hang guards (300 s).
server::ServerConfig testServerConfig();

class LocalPool {
 public:
  explicit LocalPool(int reducers, const server::ServerConfig& config = testServerConfig());
  ~LocalPool();

  std::vector<Endpoint> endpoints() const;
  server::Server& reducer(int i) { return *servers_[static_cast<size_t>(i)]; }
  int size() const { return static_cast<int>(servers_.size()); }
  // Stops reducer i (its streams close, as when the process dies).
  void stopReducer(int i);
  // Starts a new reducer in place of stopped reducer i, on its port (as Kubernetes or Vertex
  // AI restart a replica under its address), with `config` (its data address is the port's).
  void restartReducer(int i, server::ServerConfig config = testServerConfig());

 private:
  std::vector<std::unique_ptr<server::Server>> servers_;
  std::vector<uint16_t> ports_;  // each reducer's data port, kept across a restart
};

client::ClientOptions testClientOptions(const std::vector<Endpoint>& reducers,
                                        uint32_t streams = 2);

// Runs fn(rank) on `world` threads and returns the first failure (rank-prefixed), or OK.
Status runRanks(int world, const std::function<Status(int rank)>& fn);

}  // namespace rs::test
