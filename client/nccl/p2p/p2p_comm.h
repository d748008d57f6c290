// One established p2p connection, either end: its sockets (channels), the requests in flight,
// and failure and drain. SendCore and RecvCore add the two directions' per-socket loops.
//
// Threads. NCCL's proxy threads call isend/irecv/testRequest; each socket's handlers run on
// that socket's io thread, and a connection's sockets sit on different threads. What they
// share (the request ring, the sequence counters, a channel's `waiting` flag, the failure)
// is guarded by mu_; a request's completion is published through its atomic `state`, so
// testRequest's common case is one acquire load. Socket I/O is started outside mu_ (Asio
// tries the syscall at once), and each channel's own fields belong to its io thread.
//
// Ordering. Message m is the m-th request posted; every socket handles its piece of m after
// its piece of m-1, and a request completes when all its pieces did, so requests complete in
// posting order. That is why a ring indexed by seq % kMaxRequestsInFlight is enough: a slot
// is posted again only when a later request was freed, and by then every socket is done with
// the slot's old request.
//
// Failure and close. The first error (or close()) marks the comm closing and posts a close to
// every socket; pending operations end with operation_aborted. Only once every counted
// handler has run (drained) are the still-pending requests marked failed: until then a read
// may still be writing into a caller's buffer.
#pragma once

#include <array>
#include <asio/any_io_executor.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/nccl/p2p/p2p_engine.h"
#include "client/nccl/p2p/p2p_framing.h"
#include "core/transport/pending_ops.h"
#include "core/transport/stream.h"
#include "rs/nccl/p2p.h"

namespace rs::nccl::p2p {

class CommCore;

// How long closing waits for a connection's handlers before giving up (and logging).
inline constexpr std::chrono::seconds kDrainTimeout{5};

// One isend or irecv. Requests live in their comm's pool, so closing a comm frees them.
class P2pRequest {
 public:
  enum class State : uint8_t { kFree, kPending, kDone, kFailed };

  CommCore* comm = nullptr;
  // Written by the poster under the comm's mutex before any io thread sees the request;
  // read-only while it is pending.
  uint64_t seq = 0;
  std::byte* data = nullptr;
  uint64_t size = 0;  // send: the message size; receive: the buffer's capacity
  // Guarded by the comm's mutex.
  uint32_t piecesLeft = 0;
  bool totalKnown = false;
  uint64_t total = 0;  // receive: the size the sender announced
  // Written before `state` becomes kDone (release), read after testRequest's acquire load.
  uint64_t bytes = 0;
  std::atomic<State> state{State::kFree};
};

// One socket of a connection.
struct Channel {
  Channel(std::unique_ptr<transport::Stream> s, uint32_t i)
      : stream(std::move(s)), executor(stream->executor()), index(i) {}

  std::unique_ptr<transport::Stream> stream;
  const asio::any_io_executor executor;
  const uint32_t index;
  bool waiting = false;  // guarded by the comm's mutex: idle until a request is posted

  // The rest belongs to the socket's io thread.
  uint64_t nextSeq = 0;  // the message this socket works on next
  // Sending: one gather write of up to kMaxBatch messages' pieces.
  std::vector<P2pRequest*> batch;
  std::vector<PieceHeaderBytes> outHeaders;
  std::vector<transport::ConstBuffer> gather;
  uint8_t probe = 0;  // a read that only ends when the receiver goes away
  // Receiving: the header of message nextSeq, waiting for its irecv when none is posted yet.
  PieceHeaderBytes inBytes{};
  PieceHeader in;
};

class CommCore : public std::enable_shared_from_this<CommCore> {
 public:
  // `streams` are connected and introduced, with no operation pending; stream i is piece i.
  CommCore(std::vector<std::unique_ptr<transport::Stream>> streams, uint64_t minStripeBytes,
           std::string peerName, bool channelsStartWaiting);
  virtual ~CommCore();
  CommCore(const CommCore&) = delete;
  CommCore& operator=(const CommCore&) = delete;

  // Starts every socket's standing read, on its io thread.
  void start();
  // Fails the comm (quietly, unless it failed already) and waits, at most kDrainTimeout, until
  // no handler can touch its sockets or its requests' buffers.
  void close();

  const std::string& peerName() const { return peerName_; }
  Status failure() const;
  void release(P2pRequest* request);

 protected:
  // Takes a free request as message nextSeq_ and wakes the channels waiting for one.
  // nullptr (OK) when kMaxRequestsInFlight are in flight; the failure once the comm failed.
  Result<P2pRequest*> post(std::byte* data, uint64_t size);
  // First caller wins: closes every socket; pending requests fail once drained.
  void fail(Status status);
  // Under mu_: one of the request's pieces is done; the last one completes it.
  void pieceDoneLocked(P2pRequest* request, uint64_t bytes);
  // "tcp://10.0.0.2:41000 (4 sockets), socket 2"
  std::string where(const Channel& channel) const;
  Status socketError(const Channel& channel, const std::string& doing,
                     const std::error_code& error) const;

  // Wraps a handler so that it counts as pending until it has run.
  template <typename F>
  auto counted(F&& handler) {
    return transport::countedHandler(shared_from_this(), pendingOps_, &CommCore::opDone,
                                     std::forward<F>(handler));
  }

  // On the channel's io thread.
  virtual void startChannel(Channel& channel) = 0;
  virtual void resume(Channel& channel) = 0;

  const uint32_t count_;
  const uint64_t minStripe_;
  const std::string peerName_;
  std::vector<std::unique_ptr<Channel>> channels_;

  mutable std::mutex mu_;
  bool closing_ = false;
  Status failure_;
  uint64_t nextSeq_ = 0;  // messages posted so far
  std::array<P2pRequest*, kMaxRequestsInFlight> active_{};  // by seq % kMaxRequestsInFlight

 private:
  void opDone();
  bool drainedLocked();

  std::array<P2pRequest, kMaxRequestsInFlight> pool_;
  std::vector<P2pRequest*> free_;
  transport::PendingOps pendingOps_;
  bool drained_ = false;
  std::condition_variable drainedCv_;
};

class SendCore final : public CommCore {
 public:
  SendCore(std::vector<std::unique_ptr<transport::Stream>> streams, uint64_t minStripeBytes,
           std::string peerName)
      : CommCore(std::move(streams), minStripeBytes, std::move(peerName), true) {}
  Result<P2pRequest*> isend(const void* data, size_t size);

 private:
  void startChannel(Channel& channel) override;
  void resume(Channel& channel) override { pump(channel); }
  void pump(Channel& channel);
  void onWritten(Channel& channel, const std::error_code& error);
};

class RecvCore final : public CommCore {
 public:
  RecvCore(std::vector<std::unique_ptr<transport::Stream>> streams, uint64_t minStripeBytes,
           std::string peerName)
      : CommCore(std::move(streams), minStripeBytes, std::move(peerName), false) {}
  Result<P2pRequest*> irecv(void* data, size_t capacity);

 private:
  void startChannel(Channel& channel) override { readHeader(channel); }
  void resume(Channel& channel) override { match(channel); }
  void readHeader(Channel& channel);
  void onHeader(Channel& channel, const std::error_code& error);
  void match(Channel& channel);
  void pieceDone(Channel& channel, P2pRequest* request);
};

// The engine is declared first so that it is released last: the core's close() needs its
// io threads.
class P2pSendComm::Impl {
 public:
  Impl(std::shared_ptr<P2pEngine> engine, std::shared_ptr<SendCore> core)
      : engine_(std::move(engine)), core_(std::move(core)) {}
  ~Impl() { core_->close(); }
  SendCore& core() { return *core_; }

 private:
  std::shared_ptr<P2pEngine> engine_;
  std::shared_ptr<SendCore> core_;
};

class P2pRecvComm::Impl {
 public:
  Impl(std::shared_ptr<P2pEngine> engine, std::shared_ptr<RecvCore> core)
      : engine_(std::move(engine)), core_(std::move(core)) {}
  ~Impl() { core_->close(); }
  RecvCore& core() { return *core_; }

 private:
  std::shared_ptr<P2pEngine> engine_;
  std::shared_ptr<RecvCore> core_;
};

// For the connector and the listener: a started comm over `streams`.
std::unique_ptr<P2pSendComm> makeSendComm(std::shared_ptr<P2pEngine> engine,
                                          std::vector<std::unique_ptr<transport::Stream>> streams,
                                          uint64_t minStripeBytes, std::string peerName);
std::unique_ptr<P2pRecvComm> makeRecvComm(std::shared_ptr<P2pEngine> engine,
                                          std::vector<std::unique_ptr<transport::Stream>> streams,
                                          uint64_t minStripeBytes, std::string peerName);
// A random non-zero 64-bit id (listener and connection ids).
uint64_t randomId();

}  // namespace rs::nccl::p2p
