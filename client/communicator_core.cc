#include "client/communicator_core.h"

#include <algorithm>

#include <asio/post.hpp>

#include "core/common/log.h"
#include "core/wire/control_frames.h"

namespace rs::client {

namespace {
// The automatic stream count resolved once, so that routing and every HELLO use the same one.
ClientOptions withStreamsResolved(ClientOptions options) {
  options.streamsPerReducer = options.effectiveStreams();
  return options;
}
}  // namespace

CommunicatorCore::CommunicatorCore(ClientOptions options, GroupSpec group)
    : options_(withStreamsResolved(std::move(options))),
      group_(group),
      reducers_(static_cast<uint32_t>(options_.reducers.size())),
      streams_(options_.streamsPerReducer),
      chunking_{options_.minChunkBytes, options_.maxChunkBytes},
      retention_(options_.effectiveRetainBytes(), reducers_ * streams_),
      ledger_(reducers_, streams_),
      rejoin_(reducers_),
      rejoinTimers_(reducers_) {}

CommunicatorCore::~CommunicatorCore() { shutdown(); }

Status CommunicatorCore::start() {
  const bool caller = options_.progress == ClientOptions::Progress::kCaller;
  // The caller-driven io_context is run by different threads at different times: no
  // single-thread concurrency hint for it.
  for (uint32_t i = 0; i < (caller ? 1 : options_.ioThreads); ++i) {
    ios_.push_back(caller ? std::make_unique<asio::io_context>()
                          : std::make_unique<asio::io_context>(1));
    guards_.push_back(asio::make_work_guard(*ios_.back()));
    inboxes_.push_back(std::make_unique<Inbox>());
    ackTimers_.push_back(
        std::make_unique<AckTimer>(*ios_.back(), ackDelay_, &Connection::acknowledgeNow));
  }
  if (caller) progress_ = std::make_unique<CallerProgress>(*ios_.front());
  // The hubs open before the threads run them: a failure is a log line, never start()'s.
  buildLoggerBeforeThreads();
  {
    std::vector<asio::io_context*> ios;
    for (auto& io : ios_) ios.push_back(io.get());
    fabric_ = std::make_unique<FabricHubs>(
        options_, ios,
        fmt::format("group {} rank {}", group_.id.toString().substr(0, 8), group_.rank),
        userMemory_);
    fabricLogged_.assign(reducers_, false);
  }
  // Each reducer's link as this member may use it: the group's W members share it. Its rate is
  // RS_REDUCER_LINK_GBPS where the reducers' machines differ from this one (CPU reducers at 32
  // Gbit/s behind GPU workers at 100-200), else this host's, the same machine type. Nothing is
  // paced while this host's rate is unset: pacing is opted into with RS_LINK_GBPS.
  const bool paced = transport::LinkShare::bytesPerSecondFromGbps(options_.linkGbps) != 0;
  const uint64_t reducerRate =
      transport::LinkShare::bytesPerSecondFromGbps(options_.effectiveReducerLinkGbps());
  for (uint32_t r = 0; r < reducers_; ++r) {
    auto reducerLink =
        !paced ? nullptr
               : std::make_shared<transport::LinkShare>(std::max<uint64_t>(
                     1, reducerRate / std::max<uint32_t>(1, group_.worldSize)));
    reducerLinks_.push_back(reducerLink);
    for (uint32_t s = 0; s < streams_; ++s) {
      const size_t thread = ioIndexOf(connections_.size());  // [r * streams_ + s]
      connections_.push_back(std::make_shared<Connection>(
          *this, options_, group_, *ios_[thread], *ackTimers_[thread], r, s,
          options_.reducers[r], reducerLink, std::nullopt, std::nullopt, fabric_->at(thread)));
    }
  }
  {
    std::lock_guard lock(mu_);
    live_ = connections_.size();
  }
  if (!caller)
    for (auto& io : ios_) threads_.emplace_back([io = io.get()] { io->run(); });

  for (auto& c : connections_) asio::post(c->executorContext(), [c] { c->start(); });

  waitLocked([&] { return failed_ || connected_ == connections_.size(); });
  std::lock_guard lock(mu_);
  if (failed_) return failure_;
  rs::logger().info("group {} rank {}/{}: connected to {} reducers x {} streams ({} progress)",
                    group_.id.toString().substr(0, 8), group_.rank, group_.worldSize, reducers_,
                    streams_, caller ? "caller" : "io-thread");
  return Status::ok();
}

void CommunicatorCore::waitLocked(const std::function<bool()>& pred) {
  waitLocked(pred, std::chrono::steady_clock::time_point::max());
}

bool CommunicatorCore::waitLocked(const std::function<bool()>& pred,
                                  std::chrono::steady_clock::time_point until) {
  auto locked = [&] {
    std::lock_guard lock(mu_);
    return pred();
  };
  if (callerDriven()) {
    // Handlers run on this thread and take mu_ themselves: never drive while holding it.
    return progress_->runUntil(until, locked, [&](std::chrono::steady_clock::time_point t) {
      std::unique_lock lock(mu_);
      cv_.wait_until(lock, t, pred);
    });
  }
  std::unique_lock lock(mu_);
  if (until == std::chrono::steady_clock::time_point::max()) {
    cv_.wait(lock, pred);
    return true;
  }
  return cv_.wait_until(lock, until, pred);
}

bool CommunicatorCore::waitFor(const RequestState& request,
                               std::chrono::steady_clock::time_point until) {
  if (!callerDriven()) return request.waitUntil(until, nullptr);
  return progress_->runUntil(
      until, [&] { return request.done(nullptr); },
      [&](std::chrono::steady_clock::time_point t) { request.waitUntil(t, nullptr); });
}

void CommunicatorCore::poll() {
  if (callerDriven()) progress_->poll();
}

void CommunicatorCore::onFabricChosen(Connection& connection, const std::string& notUsed) {
  (notUsed.empty() ? fabricStreams_ : fabricDeclined_).fetch_add(1, std::memory_order_relaxed);
  const uint32_t r = connection.reducerIndex();
  {
    std::lock_guard lock(mu_);
    if (fabricLogged_[r]) return;
    fabricLogged_[r] = true;
  }
  const std::string reducer = fmt::format("reducer {} ({})", r, options_.reducers[r].toString());
  if (notUsed.empty())
    rs::logger().info("{}: data over the fabric ({})", reducer, fabric_->provider());
  else
    rs::logger().warn("{}: fabric not used ({}), data over TCP", reducer, notUsed);
}

void CommunicatorCore::onConnected(Connection& connection) {
  if (connection.rejoining()) {  // a redial's (communicator_rejoin.cc): it waits for JOIN_OFFER
    std::lock_guard lock(submitMu_);
    Rejoin& rejoin = rejoin_[connection.reducerIndex()];
    for (const auto& c : rejoin.streams) {
      if (c.get() != &connection || ++rejoin.connected != streams_) continue;
      refreshRedialUpLocked();
      // Every stream is in: the reducer offers, or cancels, within its loss bound of the first
      // HELLO it had. The wait for the offer is bounded as the hold is (the offer may have
      // come on stream 0 already, which armed the hold's bound).
      if (rejoin.phase == Rejoin::Phase::kDialing)
        armRejoinTimerLocked(connection.reducerIndex(), 2 * redialBound());
    }
    return;
  }
  std::lock_guard lock(mu_);
  ++connected_;
  cv_.notify_all();
}

wire::FrameHeader CommunicatorCore::chunkHeader(const RequestState& request, uint64_t i) const {
  const RequestState::Results& r = request.results();
  return wire::reduceHeader({.group = group_.id,
                             .rank = group_.rank,
                             .seq = request.seq(),
                             .chunk = r.firstChunk + i,
                             .elemOffset = i * r.chunkElems,
                             .elemCount = static_cast<uint32_t>(
                                 std::min(r.chunkElems, r.count - i * r.chunkElems)),
                             .dtype = r.wireType,
                             .op = r.op});
}

size_t CommunicatorCore::laneOf(uint64_t chunk) const {
  const uint32_t r = cluster::reducerForChunk(chunk, reducers_);
  const uint32_t s = cluster::streamForChunk(chunk, reducers_, streams_);
  return static_cast<size_t>(r) * streams_ + s;
}

Result<std::shared_ptr<RequestState>> CommunicatorCore::submit(const void* send, void* recv,
                                                               size_t count, DataType type,
                                                               ReduceOp op,
                                                               std::chrono::milliseconds timeout) {
  if (!isValidDataType(static_cast<uint32_t>(type)) || !isValidReduceOp(static_cast<uint32_t>(op)))
    return invalidArgument("unsupported data type or reduction op");
  if (count > 0 && (send == nullptr || recv == nullptr))
    return invalidArgument("all-reduce of " + std::to_string(count) + " elements with a null buffer");
  if (failedFlag_.load(std::memory_order_acquire)) return health();

  // With wire compression the chunks are planned in wire bytes (the reducers' limit), and the
  // connections convert each chunk between the caller's type and the wire type. An fp8 element
  // counts for 2 bytes, half its fp32 accumulator on the reducer (dtype.h).
  const DataType wireType = options_.wireType(type, op);
  const size_t elemSize = dataTypeSize(type);
  const cluster::ChunkPlan plan =
      cluster::planChunks(count, chunkBytesPerElement(wireType), reducers_, chunking_);
  // Held only while a rejoin holds collectives (communicator_rejoin.cc).
  Result<std::unique_lock<std::mutex>> submitLock =
      lockForSubmit(timeout.count() > 0 ? timeout : options_.collectiveTimeout);
  if (!submitLock) return submitLock.status();
  // The rejoin points: the first collective at or past one takes its reducer back.
  if (rejoinGate_.load(std::memory_order_relaxed)) switchToRejoinedLocked();
  const uint64_t seq = nextSeq_++;
  const uint64_t first = nextChunk_;
  nextChunk_ += plan.numChunks;
  nextChunkSeen_.store(nextChunk_, std::memory_order_release);

  std::vector<uint32_t> perReducer(reducers_, 0);
  for (uint64_t i = 0; i < plan.numChunks; ++i) ++perReducer[cluster::reducerForChunk(first + i, reducers_)];
  auto request = std::make_shared<RequestState>(
      seq, plan.numChunks, std::move(perReducer),
      std::chrono::steady_clock::now() +
          (timeout.count() > 0 ? timeout : options_.collectiveTimeout),
      weak_from_this());
  if (plan.numChunks == 0) return request;
  std::erase_if(inFlight_, [](const std::weak_ptr<RequestState>& w) {
    const auto r = w.lock();
    return !r || r->kept();
  });
  inFlight_.push_back(request);
  request->setResults({.firstChunk = first,
                       .chunkElems = plan.chunkElems,
                       .count = count,
                       .elemSize = elemSize,
                       .recv = static_cast<const std::byte*>(recv),
                       .wireType = wireType,
                       .op = op,
                       .compressed = wireType != type});

  // Group the chunks by connection: per-connection order is the chunk order because this runs
  // under submitMu_ and post() hands each io thread its batches in that order (its inbox).
  std::vector<Batch> work;
  std::vector<size_t> slotOf(connections_.size(), SIZE_MAX);  // a stream's place in work
  const auto* src = static_cast<const std::byte*>(send);
  auto* dst = static_cast<std::byte*>(recv);
  for (uint64_t i = 0; i < plan.numChunks; ++i) {
    const uint64_t chunk = first + i;
    const uint64_t offset = i * plan.chunkElems;
    ChunkTransfer t;
    t.request = request;
    t.header = chunkHeader(*request, i);
    t.src = src + offset * elemSize;
    t.dst = dst + offset * elemSize;
    t.compressed = wireType != type;
    std::shared_ptr<Connection> to = routeLocked(t);
    if (!to) {  // a lost reducer's chunk while its lanes are being opened
      deferred_.push_back(std::move(t));
      continue;
    }
    if (!dead_ || !dead_->contains(cluster::reducerForChunk(chunk, reducers_))) {
      // A stream: its place in work found by index, as most chunks go here.
      size_t& slot = slotOf[laneOf(chunk)];
      if (slot == SIZE_MAX) {
        slot = work.size();
        work.emplace_back(std::move(to), std::vector<ChunkTransfer>{});
      }
      work[slot].second.push_back(std::move(t));
      continue;
    }
    auto it = std::find_if(work.begin(), work.end(), [&](const auto& w) { return w.first == to; });
    if (it == work.end())
      it = work.emplace(work.end(), std::move(to), std::vector<ChunkTransfer>{});
    it->second.push_back(std::move(t));
  }
  post(std::move(work));
  return request;
}

void CommunicatorCore::post(std::vector<Batch> work) {
  // One handler per io thread: each of its connections takes its chunks, then each starts
  // writing, so that a paced stream's first write already goes at the share of every stream this
  // collective keeps busy (link_share.h).
  std::vector<std::vector<Batch>> perIo(ios_.size());
  for (auto& batch : work) {
    asio::io_context* io = &batch.first->executorContext();
    for (size_t i = 0; i < ios_.size(); ++i)
      if (ios_[i].get() == io) perIo[i].push_back(std::move(batch));
  }
  // Each batch is pending on its connection from here (under submitMu_, where it was routed)
  // until the connection takes it: one retired meanwhile hands it on with what it held.
  for (auto& batches : perIo)
    for (auto& [conn, chunks] : batches) conn->batchPosted();
  for (size_t io = 0; io < ios_.size(); ++io) {
    if (perIo[io].empty()) continue;
    Inbox& inbox = *inboxes_[io];
    {
      std::lock_guard lock(inbox.mu);
      inbox.batches.push_back(std::move(perIo[io]));
    }
    // Each handler takes every batch in the inbox, in order: a later one may run first.
    asio::post(*ios_[io], [&inbox] {
      std::deque<std::vector<Batch>> taken;
      {
        std::lock_guard lock(inbox.mu);
        taken.swap(inbox.batches);
      }
      for (std::vector<Batch>& work : taken) {
        for (auto& [conn, chunks] : work) conn->submit(std::move(chunks));
        for (auto& [conn, chunks] : work) conn->startWrites();
      }
    });
  }
}

void CommunicatorCore::onResultsIn(std::shared_ptr<RequestState> request) {
  const RequestState::Results& r = request->results();
  RetentionStore::Collective collective{.request = request, .chunks = {}};
  collective.chunks.reserve(request->chunks());
  for (uint64_t i = 0; i < request->chunks(); ++i) {
    const uint64_t elems = std::min(r.chunkElems, r.count - i * r.chunkElems);
    const uint64_t chunk = r.firstChunk + i;
    collective.chunks.push_back(
        {.chunk = chunk,
         .lane = static_cast<uint32_t>(laneOf(chunk)),
         .data = r.recv + i * r.chunkElems * r.elemSize,
         .bytes = static_cast<size_t>(elems * r.elemSize),
         .header = chunkHeader(*request, i),
         .compressed = r.compressed});
  }
  RetentionStore::Outcome outcome;
  std::vector<std::shared_ptr<Connection>> lanes;
  {
    // A failover reads the buffers of the collectives not yet kept (communicator_failover.cc).
    std::lock_guard lock(submitMu_);
    request->markKept();
    outcome = retention_.keep(std::move(collective));
    if (outcome == RetentionStore::Outcome::kWaiting)
      for (const auto& [key, lane] : lanes_) lanes.push_back(lane);
  }
  switch (outcome) {
    case RetentionStore::Outcome::kKept:
      return;
    case RetentionStore::Outcome::kWaiting:
      // It waits for commits: this member's own acknowledgements go now, not at the ack delay,
      // on its streams and on its lanes (whose commits free a lost reducer's chunks).
      for (auto* group : {&connections_, &lanes})
        for (auto& c : *group) asio::post(c->executorContext(), [c] { c->acknowledgeNow(); });
      return;
    case RetentionStore::Outcome::kClosed: {
      // The communicator failed meanwhile: fail it with the others.
      std::lock_guard lock(mu_);
      toFail_.push_back(std::move(request));
      if (live_ == 0) finishFailedRequests();
      return;
    }
  }
}

void CommunicatorCore::onCommitted(Connection& connection, uint64_t chunk) {
  // A collective may wait at a rejoin point for these commits (communicator_rejoin.cc).
  struct Wake {
    CommunicatorCore& core;
    ~Wake() {
      if (!core.rejoinGate_.load(std::memory_order_acquire)) return;
      std::lock_guard lock(core.mu_);
      core.cv_.notify_all();
    }
  } wake{*this};
  if (const std::optional<LaneSpec>& lane = connection.lane()) {
    // A survivor commits the lost home's chunks it owns: the line's watermark moves once
    // every chunk below it is committed by its owner.
    const uint32_t home = lane->lane.deadHome, stream = lane->lane.stream;
    uint64_t numbered;
    {
      std::lock_guard lock(submitMu_);
      numbered = nextChunk_;
    }
    Result<std::optional<uint64_t>> moved = ledger_.laneCommitted(
        home, stream, connection.reducerIndex(), lane->dead, chunk, numbered);
    if (!moved) return fail(protocolError(connection.name() + ": " + moved.status().message()));
    const uint64_t step = uint64_t{reducers_} * streams_;
    if (*moved && **moved >= step) retention_.commit(home * streams_ + stream, **moved - step);
    return;
  }
  ledger_.streamCommitted(connection.reducerIndex(), connection.streamIndex(), chunk);
  retention_.commit(
      static_cast<uint32_t>(connection.reducerIndex() * streams_ + connection.streamIndex()), chunk);
}

void CommunicatorCore::fail(const Status& reason, bool tellReducers) {
  bool closing = false;
  std::vector<std::shared_ptr<Connection>> all = connections_;
  std::vector<ChunkTransfer> orphans;  // held for a failover that will not finish now
  {
    std::lock_guard routing(submitMu_);
    std::lock_guard lock(mu_);
    if (failed_) return;
    failed_ = true;
    failure_ = reason;
    failedFlag_.store(true, std::memory_order_release);
    closing = shutDown_;
    // Those waiting for room in the retention store fail with the rest, once all drained.
    for (std::shared_ptr<RequestState>& waiting : retention_.close())
      toFail_.push_back(std::move(waiting));
    for (auto& [index, lane] : lanes_) all.push_back(lane);
    for (Rejoin& rejoin : rejoin_) {
      for (auto& c : rejoin.streams) all.push_back(c);
      rejoin.streams.clear();
      rejoin.phase = Rejoin::Phase::kIdle;
      ++rejoin.attempt;  // the rejoin timer's next call is stale
    }
    redialUp_.store(false, std::memory_order_relaxed);
    for (auto* held : {&handedOver_, &deferred_})
      for (ChunkTransfer& c : *held)
        if (c.request) toFail_.push_back(std::move(c.request));
    handedOver_.clear();
    deferred_.clear();
    adopting_ = false;
    if (live_ == 0) finishFailedRequests();
    cv_.notify_all();
  }
  if (!closing)
    rs::logger().error("group {} rank {}: {}", group_.id.toString().substr(0, 8), group_.rank,
                       reason.toString());
  for (auto& c : all)
    asio::post(c->executorContext(), [c, reason, tellReducers] {
      if (tellReducers) c->abortAndClose(reason);
      else c->close();
    });
}

void CommunicatorCore::failOnTimeout(const RequestState& request) {
  if (request.chunksLeft() == 0) {
    fail(timeoutError(fmt::format(
        "all-reduce seq {} timed out after {} ms with every result in, waiting for room to keep "
        "the uncommitted ones (RS_RETAIN_BYTES, {} bytes; proto/FAILOVER.md): {}",
        request.seq(), request.timeout().count(), options_.effectiveRetainBytes(),
        retentionDebts(request))));
    return;
  }
  std::string owing;
  for (auto [r, n] : request.reducersOwing()) {
    if (!owing.empty()) owing += ", ";
    owing += fmt::format("reducer {} ({}): {} chunks", r, options_.reducers[r].toString(), n);
  }
  fail(timeoutError(fmt::format(
      "all-reduce seq {} timed out after {} ms with {} of {} chunks outstanding; waiting on {}",
      request.seq(), request.timeout().count(), request.chunksLeft(), request.chunks(),
      owing.empty() ? "nothing (finishing)" : owing)));
}

FabricStats CommunicatorCore::fabric() const { return fabric_ ? fabric_->stats() : FabricStats{}; }

Result<BufferRegistration> CommunicatorCore::registerBuffer(const void* data, size_t bytes) {
  // Registered for the hubs' local access only (the source of writes): never written.
  return BufferRegistration{userMemory_->add(const_cast<void*>(data), bytes)};
}

Status CommunicatorCore::deregisterBuffer(const BufferRegistration& registration) {
  if (userMemory_->remove(registration.id)) return Status::ok();
  return invalidArgument(
      fmt::format("deregisterBuffer: no buffer registered as {}", registration.id));
}

RetentionStats CommunicatorCore::retention() const {
  RetentionStats stats = retention_.stats();
  for (const auto& c : connections_) {
    stats.receivedFrames += c->receivedFrames();
    stats.commitFrames += c->commitFrames();
  }
  return stats;
}

std::string CommunicatorCore::retentionDebts(const RequestState& request) const {
  // Per reducer: the chunks it has not committed, kept and of this collective.
  std::vector<std::pair<uint64_t, uint64_t>> perReducer(reducers_);
  for (const RetentionStore::LaneDebt& d : retention_.debts(request.seq())) {
    perReducer[d.lane / streams_].first += d.kept;
    perReducer[d.lane / streams_].second += d.waiting;
  }
  std::string out;
  for (uint32_t r = 0; r < reducers_; ++r) {
    const auto [kept, waiting] = perReducer[r];
    if (kept == 0 && waiting == 0) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("reducer {} ({}) has not committed {} chunks kept and {} of this "
                       "collective",
                       r, options_.reducers[r].toString(), kept, waiting);
  }
  return out.empty() ? "nothing left uncommitted (finishing)" : out;
}

void CommunicatorCore::onDrained(Connection& connection, std::vector<ChunkTransfer> unfinished) {
  std::unique_lock routing(submitMu_);
  {
    std::lock_guard lock(mu_);
    --live_;
    if (failed_ || !connection.retired()) {
      // A failure (or a close for one): the chunks' requests fail once every connection drained.
      for (ChunkTransfer& c : unfinished)
        if (c.request) toFail_.push_back(std::move(c.request));
      if (failed_ && live_ == 0) finishFailedRequests();
      cv_.notify_all();
      return;
    }
    cv_.notify_all();
  }
  // Retired for failover: what it held is resent once every retired connection drained. (A lane
  // that its survivor retired while no adoption runs here, in a rejoin's window, holds its
  // chunks for the next.)
  for (ChunkTransfer& c : unfinished) handedOver_.push_back(std::move(c));
  if (retiring_ > 0 && --retiring_ == 0) {
    finishAdoptionLocked();
    if (onAdoptedForTest_) {
      routing.unlock();
      onAdoptedForTest_();
    }
  }
}

void CommunicatorCore::failRequestsOf(std::vector<ChunkTransfer>& chunks) {
  std::lock_guard lock(mu_);
  for (ChunkTransfer& c : chunks)
    if (c.request) toFail_.push_back(std::move(c.request));
  if (failed_ && live_ == 0) finishFailedRequests();
}

void CommunicatorCore::finishFailedRequests() {
  // Every connection is closed and idle: no I/O can touch these requests' buffers any more.
  for (auto& r : toFail_) r->finish(failure_);
  toFail_.clear();
}

void CommunicatorCore::waitDrained() {
  waitLocked([&] { return live_ == 0; });
}

Status CommunicatorCore::health() const {
  std::lock_guard lock(mu_);
  return failed_ ? failure_ : Status::ok();
}

void CommunicatorCore::shutdown() {
  {
    std::lock_guard lock(mu_);
    if (shutDown_) return;
    shutDown_ = true;
  }
  fail(abortedError("the communicator was closed"), /*tellReducers=*/false);
  if (!threads_.empty() || callerDriven()) waitDrained();
  if (const FabricStats f = fabric(); !f.provider.empty()) {
    rs::logger().info("group {} rank {}: fabric payloads: {} bytes written from registered "
                      "buffers (zero-copy), {} through the send rings",
                      group_.id.toString().substr(0, 8), group_.rank, f.bytesFromRegistered,
                      f.bytesCopied);
  }
  guards_.clear();
  for (auto& io : ios_) io->stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

}  // namespace rs::client
