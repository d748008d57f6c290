// The shared core behind rs::client::Communicator: io threads, one Connection per (reducer,
// stream), chunk planning and routing, and failure handling.
//
// Failure is all-or-nothing, as in NCCL: the first error closes every connection, and the
// requests in flight are failed only after every connection has drained, because until then a
// pending read may still be writing into a caller's buffer. A lost reducer is not a failure
// (proto/FAILOVER.md; communicator_failover.cc): its connections are retired, and once they
// have drained what they held goes, with what the retention store kept of its chunks, to the
// survivors on lanes, as do later chunks of its; every reducer lost is the failure of today.
//
// A lost reducer restarted under the same address is taken back (communicator_rejoin.cc;
// proto/FAILOVER.md, "A reducer comes back"): each lost reducer is redialled with back-off on
// the io threads, and at the rejoin point the members agreed with it, its K redialled
// connections become its streams again (and the lanes of the smaller dead set open).
//
// A request whose results are all in completes once the retention store has kept what its
// reducers have not committed yet (client/retention_store.h); while the store is full it
// waits there, within its timeout, and a failure fails it with the others.
#pragma once

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "client/caller_progress.h"
#include "client/commit_ledger.h"
#include "client/connection.h"
#include "client/fabric_hubs.h"
#include "client/request_state.h"
#include "client/retention_store.h"
#include "core/cluster/dead_set.h"
#include "core/cluster/lane.h"
#include "core/cluster/sharding.h"
#include "core/transport/user_memory.h"
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
  FailoverStats failover() const;
  FabricStats fabric() const;
  Result<BufferRegistration> registerBuffer(const void* data, size_t bytes);
  Status deregisterBuffer(const BufferRegistration& registration);
  // Test access to what is kept (failover will resend from it).
  const RetentionStore& retentionStore() const { return retention_; }
  // Tests only, set before start(): how long a RECEIVED that no REDUCE carried waits to go
  // alone (kAckDelay).
  void setAckDelayForTest(std::chrono::milliseconds delay) { ackDelay_ = delay; }
  // Tests only, set before start(): runs on the io thread of a connection that found its
  // reducer lost, before the loss is adopted, so that a test can put a submit in that window.
  void setOnReducerLostForTest(std::function<void()> hook) {
    onReducerLostForTest_ = std::move(hook);
  }
  // Tests only, set before start(): runs on the io thread whose connection's drain finished an
  // adoption, once the lanes' chunks are posted and the routing lock is released, before that
  // handler returns, so that a test can submit from another thread in that window.
  void setOnAdoptedForTest(std::function<void()> hook) { onAdoptedForTest_ = std::move(hook); }
  // Tests only: this member takes `reducer` for lost on its stream 0, as it would on finding
  // it silent past the loss bound, while the reducer lives (a stall of the machine longer
  // than the bound). Posted to the stream's io thread.
  void takeForLostForTest(uint32_t reducer);
  const ClientOptions& options() const { return options_; }
  // Streams whose payloads go on a fabric channel, and those that asked for one and run on TCP
  // (handshaken so far; each stream counted once per handshake).
  size_t fabricStreams() const { return fabricStreams_.load(std::memory_order_relaxed); }
  size_t fabricDeclined() const { return fabricDeclined_.load(std::memory_order_relaxed); }
  const GroupSpec& group() const { return group_; }

  // --- ConnectionOwner: from connections, on their io threads ---
  void onConnected(Connection& connection) override;
  // One log line per reducer for the fabric's fallback (and one for its use).
  void onFabricChosen(Connection& connection, const std::string& notUsed) override;
  void onFailed(const Status& reason) override { fail(reason); }
  // The one place where a lost reducer is dealt with: its chunks move to the survivors
  // (adopt), or, with every reducer lost, the communicator fails.
  void onReducerLost(Connection& connection, const Status& reason) override;
  void onLost(Connection& connection, const std::vector<uint32_t>& dead,
              uint64_t generation) override;
  // Rejoin (communicator_rejoin.cc).
  void onJoinOffer(Connection& connection) override;
  void onJoinAt(Connection& connection, uint64_t at) override;
  bool onRejoinEnded(Connection& connection, const Status& why) override;
  void onResultsIn(std::shared_ptr<RequestState> request) override;
  void onCommitted(Connection& connection, uint64_t chunk) override;
  void onDrained(Connection& connection, std::vector<ChunkTransfer> unfinished) override;
  // Chunks that reached a connection after it drained: failed with the others, or resent.
  void onLateChunks(Connection& connection, std::vector<ChunkTransfer> chunks) override;

 private:
  // The REDUCE header of chunk i (0-based) of `request`, whose results() are set: every
  // header of the collective's chunks is built here (submit, keep, failover's resend).
  wire::FrameHeader chunkHeader(const RequestState& request, uint64_t i) const;
  // The index of the connection (and retention lane) of `chunk`'s home and stream.
  size_t laneOf(uint64_t chunk) const;
  // Failover (communicator_failover.cc).
  // The reducers in `lost` are lost (`why`): retires their streams and every lane, then
  // (finishAdoption, once those drained) opens the lanes of the larger dead set and resends.
  void adopt(const std::vector<uint32_t>& lost, const Status& why);
  void finishAdoptionLocked();
  // Where `chunk` goes now: its home's stream, a lane, or (null) deferred_ while adopting.
  std::shared_ptr<Connection> routeLocked(const ChunkTransfer& chunk);
  // A connection and the chunks routed to it.
  using Batch = std::pair<std::shared_ptr<Connection>, std::vector<ChunkTransfer>>;
  // Posts the chunks to their connections, grouped by io thread, each thread's batch started
  // together (link_share.h). Under submitMu_, where they were routed (Connection::batchPosted).
  void post(std::vector<Batch> work);
  void failRequestsOf(std::vector<ChunkTransfer>& chunks);
  // For a timeout while `request` waits for room in the retention store: who has not committed.
  std::string retentionDebts(const RequestState& request) const;
  // The io_context (index into ios_) that runs connections_[connection]. Streams of one
  // reducer go to different threads first, so K streams use K threads.
  size_t ioIndexOf(size_t connection) const { return connection % ios_.size(); }
  bool callerDriven() const { return progress_ != nullptr; }
  // Waits until pred() holds (checked under mu_), driving the I/O if the caller must; with a
  // deadline, false when it passed first.
  void waitLocked(const std::function<bool()>& pred);
  bool waitLocked(const std::function<bool()>& pred,
                  std::chrono::steady_clock::time_point until);

  // Rejoin (communicator_rejoin.cc; proto/FAILOVER.md, "A reducer comes back"), under
  // submitMu_ unless said otherwise.
  // Nothing is adopting: the next redial of every lost reducer not being redialled, after its
  // back-off.
  void scheduleRedialLocked();
  // (Re)arms `reducer`'s rejoin timer for `wait` under a new attempt; it calls redial.
  void armRejoinTimerLocked(uint32_t reducer, std::chrono::milliseconds wait);
  // `reducer`'s timer ran out (io thread): after the back-off, K connections to it with the
  // rejoin flag; while they wait for JOIN_OFFER or JOIN_AT, the end of that wait (a cancel).
  void redial(uint32_t reducer, uint64_t attempt);
  // Ends `reducer`'s redial in progress (its connections closed), and schedules the next while
  // it is still lost. `cancelled`: it reached the reducer (counted and logged).
  void endRedialLocked(uint32_t reducer, const Status& why, bool cancelled);
  // The loss bound of a redial's waits (twice it for JOIN_OFFER, and for JOIN_AT).
  std::chrono::milliseconds redialBound() const;
  // Before submitMu_: waits while a rejoin holds this member's collectives (between JOIN and
  // JOIN_AT, and at a rejoin point until the lost reducers' chunks below it are committed).
  // Returns submitMu_ held, with the gate open; an error when the wait ran past the
  // collective timeout (the communicator is failed with it).
  Result<std::unique_lock<std::mutex>> lockForSubmit(std::chrono::milliseconds timeout);
  // Under mu_: whether a submit may go on (rejoinGate_ set).
  bool gateOpenLocked() const;
  // Under mu_: rejoinGate_ from holding_ and switchAt_, waking the waiters.
  void updateGateLocked();
  // At the submit that reaches the rejoin point of one or more reducers: their redialled
  // connections become their streams, the lanes of the dead set close and those of the smaller
  // one open, and the generation goes up by one per reducer. Then the LOSTs of the new
  // generation kept meanwhile are adopted (posted).
  void switchToRejoinedLocked();
  // Whether every chunk below `at` of every reducer of `dead` is committed (their lines'
  // watermarks).
  bool committedBelow(const cluster::DeadSet& dead, uint64_t at) const;
  // Whether the streams of some redial are all in (FailoverStats::redialUp).
  void refreshRedialUpLocked();
  // Whether `reducer`'s redial reached it (its streams all in, or further): its end is a
  // cancel (FailoverStats::rejoinsCancelled), not a redial that failed.
  bool reachedLocked(uint32_t reducer) const;
  void finishFailedRequests();

  const ClientOptions options_;
  const GroupSpec group_;
  const uint32_t reducers_;
  const uint32_t streams_;
  const cluster::ChunkingOptions chunking_;

  std::vector<std::unique_ptr<asio::io_context>> ios_;
  // Per io thread, the batches post() gave it, in the order they were routed (under
  // submitMu_): its handlers take them from here in that order, whichever handler runs first.
  // asio's handler order alone is not the routing order: an io_context with the one-thread
  // hint queues a post made from its own thread privately until the running handler returns,
  // behind posts that other threads made meanwhile (a lane's resend, posted from the drain
  // that finished an adoption, behind a later collective's chunks submitted by the caller).
  struct Inbox {
    std::mutex mu;
    std::deque<std::vector<Batch>> batches;
  };
  std::vector<std::unique_ptr<Inbox>> inboxes_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::vector<std::thread> threads_;
  std::unique_ptr<CallerProgress> progress_;  // Progress::kCaller only
  // One per io_context, beside it (destroyed first, once no thread runs them).
  std::vector<std::unique_ptr<AckTimer>> ackTimers_;
  // One fabric hub per io_context, or none (RS_FABRIC). Destroyed after the connections, which
  // drop their channels once drained, and before the io_contexts.
  std::unique_ptr<FabricHubs> fabric_;
  // The buffers registered for zero-copy sends, which every hub follows (registerBuffer).
  std::shared_ptr<transport::UserMemory> userMemory_ = std::make_shared<transport::UserMemory>();
  std::vector<bool> fabricLogged_;  // [reducer], under mu_: its fabric line is out
  std::atomic<size_t> fabricStreams_{0};
  std::atomic<size_t> fabricDeclined_{0};
  std::vector<std::shared_ptr<Connection>> connections_;  // [reducer * streams + stream]
  // [reducer]: this member's share of each reducer's link (null: unpaced), which its streams
  // to that reducer and its lanes to it as a survivor draw on together.
  std::vector<std::shared_ptr<transport::LinkShare>> reducerLinks_;
  RetentionStore retention_;  // one lane per connection, numbered alike

  mutable std::mutex mu_;
  std::condition_variable cv_;
  size_t connected_ = 0;
  size_t live_ = 0;  // connections (streams and lanes) started and not drained
  bool failed_ = false;
  std::atomic<bool> failedFlag_{false};
  Status failure_;
  std::vector<std::shared_ptr<RequestState>> toFail_;
  bool shutDown_ = false;

  std::mutex submitMu_;  // keeps chunk numbering, routing and posting order together
  uint64_t nextSeq_ = 0;
  uint64_t nextChunk_ = 0;

  // Failover, under submitMu_ (lock order: submitMu_, then mu_).
  std::optional<cluster::DeadSet> dead_;  // none until a reducer is lost
  // The lanes under dead_, by laneKey: (R - |D|) |D| K of them, where a table of every
  // (survivor, lost, stream) would be R R K (4 GiB of pointers at R = 1024, K = 256).
  std::unordered_map<uint64_t, std::shared_ptr<Connection>> lanes_;
  uint64_t laneKey(uint32_t survivor, const cluster::Lane& lane) const {
    return (uint64_t{survivor} * reducers_ + lane.deadHome) * streams_ + lane.stream;
  }
  bool adopting_ = false;   // connections retired, not all drained: lanes not open yet
  size_t retiring_ = 0;     // retired connections not drained yet
  std::vector<ChunkTransfer> handedOver_;  // what they held
  std::vector<ChunkTransfer> deferred_;    // lost homes' chunks submitted while adopting
  // Collectives submitted and not yet handed to the retention store: a failover resends their
  // lost homes' chunks whose results are already in (in the caller's buffer, copied).
  std::vector<std::weak_ptr<RequestState>> inFlight_;
  CommitLedger ledger_;
  std::function<void()> onReducerLostForTest_;
  std::function<void()> onAdoptedForTest_;
  std::chrono::milliseconds ackDelay_ = kAckDelay;

  // Rejoin, under submitMu_ (communicator_rejoin.cc).
  uint64_t generation_ = 0;  // rejoins taken: the dead set's generation (cluster::DeadView)
  struct Rejoin {
    enum class Phase { kIdle, kBackingOff, kDialing, kAnswered, kAt };
    Phase phase = Phase::kIdle;
    uint64_t attempt = 0;  // a timer or connection of an earlier attempt is stale
    std::vector<std::shared_ptr<Connection>> streams;  // the redial's, by stream index
    std::chrono::milliseconds backoff{0};  // the wait before the next redial (0: lost anew)
    uint32_t connected = 0;  // the redial's connections handshaken
    uint64_t answer = 0;  // this member's JOIN
    uint64_t at = 0;      // JOIN_AT's T
    bool lostAfterAt = false;  // its connections ended after JOIN_AT, before the switch
    std::chrono::steady_clock::time_point lostSince;
  };
  std::vector<Rejoin> rejoin_;  // [reducer]: idle unless it is lost
  // [reducer], on ios_[0] only: its back-off, then its wait for JOIN_OFFER or JOIN_AT.
  std::vector<std::unique_ptr<asio::steady_timer>> rejoinTimers_;
  // LOSTs of a newer generation than this member's: each adopted at the switch that reaches
  // its generation.
  struct KeptLost {
    uint64_t generation;
    std::vector<uint32_t> dead;
  };
  std::vector<KeptLost> laterLost_;
  // Set while a rejoin may hold a submit: the healthy path reads this and nothing else.
  std::atomic<bool> rejoinGate_{false};
  // Under mu_: the gate (holding_: rejoins between JOIN and JOIN_AT; switchAt_: those with
  // their T, until their switch, each with the dead set whose chunks below T must be committed
  // first), and the next chunk number as submit will take it.
  uint32_t holding_ = 0;
  struct SwitchAt {
    uint32_t reducer;
    uint64_t chunk;
    cluster::DeadSet dead;
  };
  std::vector<SwitchAt> switchAt_;
  std::atomic<uint64_t> nextChunkSeen_{0};
  std::atomic<uint64_t> rejoins_{0};
  std::atomic<uint64_t> rejoinsCancelled_{0};
  std::atomic<uint32_t> lostNow_{0};
  std::atomic<bool> redialUp_{false};
};

}  // namespace rs::client
