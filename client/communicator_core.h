// The shared core behind rs::client::Communicator: io threads, one Connection per (reducer,
// stream), chunk planning and routing, and failure handling.
//
// Failure is all-or-nothing, as in NCCL: the first error closes every connection, and the
// requests in flight are failed only after every connection has drained, because until then a
// pending read may still be writing into a caller's buffer.
//
// A request whose results are all in completes once the retention store has kept what its
// reducers have not committed yet (client/retention_store.h); while the store is full it
// waits there, within its timeout, and a failure fails it with the others.
#pragma once

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/caller_progress.h"
#include "client/connection.h"
#include "client/request_state.h"
#include "client/retention_store.h"
#include "core/cluster/sharding.h"
#include "rs/client.h"

namespace rs::client {

class CommunicatorCore final : public std::enable_shared_from_this<CommunicatorCore>,
                               public ConnectionOwner {
 public:
  CommunicatorCore(ClientOptions options, GroupSpec group);
  ~CommunicatorCore();

  // Starts the io threads (if any) and the connections and waits until all are handshaken.
  Status start();
  Result<std::shared_ptr<RequestState>> submit(const void* send, void* recv, size_t count,
                                               DataType type, ReduceOp op,
                                               std::chrono::milliseconds timeout);
  // First caller wins: closes every connection; in-flight requests fail once all drained.
  // `tellReducers` sends ABORT first so that the other members fail at once too; a normal
  // close does not (the others may still be reading their last results).
  void fail(const Status& reason, bool tellReducers = true);
  // fail() if needed, wait for the drain, stop the threads. Idempotent.
  void shutdown();
  // A request passed its deadline: fail the communicator with a message naming who owes what.
  void failOnTimeout(const RequestState& request);
  // Blocks until every connection drained (after fail()).
  void waitDrained();
  // Waits until `request` finished or `until`; true when finished. With Progress::kCaller the
  // calling thread does the I/O meanwhile.
  bool waitFor(const RequestState& request, std::chrono::steady_clock::time_point until);
  // Progress::kCaller: runs the I/O that is ready, without blocking. Otherwise nothing.
  void poll();

  Status health() const;
  RetentionStats retention() const;
  // Test access to what is kept (failover will resend from it).
  const RetentionStore& retentionStore() const { return retention_; }
  const ClientOptions& options() const { return options_; }
  const GroupSpec& group() const { return group_; }

  // --- ConnectionOwner: from connections, on their io threads ---
  void onConnected(Connection& connection) override;
  void onFailed(const Status& reason) override { fail(reason); }
  // The one place where a lost reducer is dealt with. Today it fails the communicator, as
  // any error does (the reducers hear why, so the other members fail at once too); failover
  // (proto/FAILOVER.md) will move the lost reducer's chunks to the survivors here instead.
  void onReducerLost(Connection& /*connection*/, const Status& reason) override { fail(reason); }
  void onResultsIn(std::shared_ptr<RequestState> request) override;
  void onCommitted(Connection& connection, uint64_t chunk) override;
  void onDrained(Connection& connection,
                 std::vector<std::shared_ptr<RequestState>> touched) override;
  // Requests that reached a connection after it drained: fail them with the others.
  void onLateRequests(std::vector<std::shared_ptr<RequestState>> requests) override;

 private:
  // The index of the connection (and retention lane) that carries `chunk`.
  size_t laneOf(uint64_t chunk) const;
  // For a timeout while `request` waits for room in the retention store: who has not committed.
  std::string retentionDebts(const RequestState& request) const;
  // The io_context (index into ios_) that runs connections_[connection]. Streams of one
  // reducer go to different threads first, so K streams use K threads.
  size_t ioIndexOf(size_t connection) const { return connection % ios_.size(); }
  bool callerDriven() const { return progress_ != nullptr; }
  // Waits until pred() holds (checked under mu_), driving the I/O if the caller must.
  void waitLocked(const std::function<bool()>& pred);
  void finishFailedRequests();

  const ClientOptions options_;
  const GroupSpec group_;
  const uint32_t reducers_;
  const uint32_t streams_;
  const cluster::ChunkingOptions chunking_;

  std::vector<std::unique_ptr<asio::io_context>> ios_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::vector<std::thread> threads_;
  std::unique_ptr<CallerProgress> progress_;  // Progress::kCaller only
  // One per io_context, beside it (destroyed first, once no thread runs them).
  std::vector<std::unique_ptr<AckTimer>> ackTimers_;
  std::vector<std::shared_ptr<Connection>> connections_;  // [reducer * streams + stream]
  RetentionStore retention_;  // one lane per connection, numbered alike

  mutable std::mutex mu_;
  std::condition_variable cv_;
  size_t connected_ = 0;
  size_t drained_ = 0;
  bool failed_ = false;
  std::atomic<bool> failedFlag_{false};
  Status failure_;
  std::vector<std::shared_ptr<RequestState>> toFail_;
  bool shutDown_ = false;

  std::mutex submitMu_;  // keeps chunk numbering and posting order together
  uint64_t nextSeq_ = 0;
  uint64_t nextChunk_ = 0;
};

}  // namespace rs::client
