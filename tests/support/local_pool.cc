#include "tests/support/local_pool.h"

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "core/common/env.h"
#include "core/common/log.h"

namespace rs::test {
namespace {

// RS_TEST_FABRIC=1: the pools' reducers offer the fabric and the members take it, on the
// provider the fabric tests use (RS_TEST_FABRIC_PROVIDER, tcp by default, bound to
// RS_TEST_FABRIC_NODE, 127.0.0.1 by default), so that the data-plane suites run over it as
// they are (tests/CMakeLists.txt registers them a second time so). Unset: no fabric at all.
struct TestFabric {
  std::string provider = "off";
  std::string node;
};

TestFabric testFabric() {
  if (envString("RS_TEST_FABRIC").value_or("") != "1") return {};
  TestFabric f;
  f.provider = envString("RS_TEST_FABRIC_PROVIDER").value_or("");
  f.node = envString("RS_TEST_FABRIC_NODE").value_or("");
  if (f.provider.empty()) {
    f.provider = "tcp";
    if (f.node.empty()) f.node = "127.0.0.1";
  }
  return f;
}

}  // namespace

server::ServerConfig testServerConfig() {
  server::ServerConfig c;
  c.dataListen = "127.0.0.1:0";
  c.grpcListen = "127.0.0.1:0";
  c.ioThreads = 2;
  c.memoryLimitBytes = 256ull << 20;
  c.maxChunkBytes = 8u << 20;
  c.statsIntervalSeconds = 0;
  c.collectiveTimeoutMs = 300000;  // a hang guard: healthy collectives end long before
  // The loss bound too, and the ceiling on what a member asks: a sanitizer build on a loaded
  // 2-core machine can hold a thread for seconds, so a test that means to find a silent peer
  // asks for a short bound on that peer's stream (RawMember, RS_LOSS_DETECT_MS) or sets one.
  c.lossDetectMs = 300000;
  // No fabric unless asked (testFabric): "auto" would probe for RDMA devices in every reducer
  // a test starts, and use one where it found it.
  c.fabricProvider = testFabric().provider;
  c.fabricNode = testFabric().node;
  return c;
}

LocalPool::LocalPool(int reducers, const server::ServerConfig& config) {
  // Quiet by default; RS_TEST_LOG_LEVEL=info (or debug) shows the reducers' logs.
  (void)configureLogging(envString("RS_TEST_LOG_LEVEL").value_or("warn"), "text");
  for (int i = 0; i < reducers; ++i) {
    auto s = std::make_unique<server::Server>(config);
    if (Status st = s->start(); !st.isOk())
      throw std::runtime_error("reducer " + std::to_string(i) + ": " + st.toString());
    ports_.push_back(s->dataPort());
    servers_.push_back(std::move(s));
  }
}

LocalPool::~LocalPool() {
  for (auto& s : servers_)
    if (s) s->stop();
}

std::vector<Endpoint> LocalPool::endpoints() const {
  std::vector<Endpoint> out;
  for (uint16_t port : ports_) out.push_back({"127.0.0.1", port});
  return out;
}

void LocalPool::stopReducer(int i) { servers_[static_cast<size_t>(i)]->stop(); }

void LocalPool::restartReducer(int i, server::ServerConfig config) {
  auto& slot = servers_[static_cast<size_t>(i)];
  config.dataListen = "127.0.0.1:" + std::to_string(ports_[static_cast<size_t>(i)]);
  slot->stop();
  auto s = std::make_unique<server::Server>(config);
  if (Status st = s->start(); !st.isOk())
    throw std::runtime_error("reducer " + std::to_string(i) + " restarted: " + st.toString());
  slot = std::move(s);
}

client::ClientOptions testClientOptions(const std::vector<Endpoint>& reducers,
                                        uint32_t streams) {
  client::ClientOptions o;
  o.reducers = reducers;
  o.streamsPerReducer = streams;
  o.ioThreads = 1;
  // Hang guards, far above a healthy run on a loaded machine (tests of the timeouts set theirs).
  o.collectiveTimeout = std::chrono::milliseconds(300000);
  o.connectTimeout = std::chrono::milliseconds(60000);
  o.fabricProbeTimeout = o.connectTimeout;
  // No fabric unless asked, as for the reducers (testFabric).
  o.fabric = testFabric().provider;
  o.fabricNode = testFabric().node;
  return o;
}

Status runRanks(int world, const std::function<Status(int rank)>& fn) {
  std::mutex mu;
  Status first;
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      Status s;
      try {
        s = fn(r);
      } catch (const std::exception& e) {
        s = internalError(std::string("exception: ") + e.what());
      }
      if (!s.isOk()) {
        std::lock_guard lock(mu);
        if (first.isOk()) first = Status(s.code(), "rank " + std::to_string(r) + ": " + s.message());
      }
    });
  for (auto& t : threads) t.join();
  return first;
}

}  // namespace rs::test
