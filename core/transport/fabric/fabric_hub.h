// One fabric endpoint per io thread and the channels (fabric_channel.h) on it: the domain
// (FI_THREAD_DOMAIN: only this thread touches it), the endpoint, the table of open channels by
// 12-bit id, the posted receives, and the progress loop that demultiplexes completions to
// channels: our operations by token (which names the channel), peers' writes by the channel id
// in their immediate data, control words by their channel field.
//
// Progress: the hub polls only while some channel has outstanding work (a pending write or
// send, a waiting receive handler, a sender waiting for credits); idle, it neither polls nor
// waits. Busy, it polls by asio::post while completions come; when a poll finds nothing it
// sleeps on the completion queue's wait fd (FI_WAIT_FD, after fi_trywait) where the provider
// gives one, else on a timer backing off from 50 us to 1 ms. Never a busy spin. Which model
// each provider got: proto/FABRIC.md.
//
// Threading: open() and every other call on the io thread (or before it runs); handlers run
// there. The counters may be read from any thread.
#pragma once

#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/common/aligned_buffer.h"
#include "core/common/status.h"
#include "core/transport/fabric/fabric_channel.h"
#include "core/transport/fabric/fabric_domain.h"
#include "core/transport/fabric/fabric_endpoint.h"
#include "core/transport/fabric/fabric_immediate.h"
#include "core/transport/fabric/fabric_info.h"
#include "core/transport/fabric/registered_memory.h"
#include "core/transport/fabric/user_regions.h"
#include "core/transport/user_memory.h"

namespace rs::transport::fabric {

struct FabricHubOptions {
  std::string name = "hub";  // for logs and errors ("reducer io 2")
  // Try the completion queue's wait fd; off: adaptive polling only (tests compare the two).
  bool waitFd = true;
  // Receives kept posted for control words (credits), beyond those for ring slots.
  uint32_t controlReceives = 64;
  // Post a receive for every ring slot too (verbs' FI_RX_CQ_DATA: a write with immediate data
  // uses one up). Default: where the provider asks for it (its mode has FI_RX_CQ_DATA).
  std::optional<bool> receivesForWrites;
  // How long shutdown() gives pending operations before aborting the endpoint.
  std::chrono::milliseconds shutdownBound{2000};
  // How long a failed or detached channel's sends keep their `done` (and so the caller's
  // registered memory) for writes from it that the peer does not complete (a stopped peer);
  // then the memory goes back to its owner with a warning. None: until the writes complete or
  // the hub shuts down (the reducer: its slot buffers serve other groups next, whose bytes a
  // late write must never carry; what a stuck peer holds is its ring's credits' worth).
  std::optional<std::chrono::milliseconds> releaseSourcesAfter = std::chrono::milliseconds(2000);
};

class FabricHub {
 public:
  enum class Progress { kWaitFd, kPolling };

  static Result<std::unique_ptr<FabricHub>> open(asio::io_context& io, const FabricChoice& choice,
                                                 FabricHubOptions options = {});
  ~FabricHub();  // shutdown("hub closed") if not done
  FabricHub(const FabricHub&) = delete;
  FabricHub& operator=(const FabricHub&) = delete;

  // A channel with a receive ring of `ring` (registered for remote writes), under the lowest id
  // not used most recently (ids rotate, so a closed id is reused as late as possible).
  // RESOURCE_EXHAUSTED with all 4096 ids in use or no room for the receives it needs.
  Result<std::shared_ptr<FabricChannel>> openChannel(RingShape ring, std::string name);

  // The caller's buffers that payloads may leave from without the copy into a channel's send
  // ring (user_regions.h). Before or after channels open; none by default.
  void followUserMemory(std::shared_ptr<const UserMemory> list) { userRegions_->follow(list); }

  // Fails every channel with `why`, finishes or aborts pending operations within
  // shutdownBound, closes the endpoint. Later openChannel fails. Idempotent.
  void shutdown(const Status& why);

  const std::string& provider() const { return endpoint_->provider(); }
  const std::vector<uint8_t>& address() const { return endpoint_->address(); }
  Progress progress() const { return waitFd_ ? Progress::kWaitFd : Progress::kPolling; }
  const std::string& name() const { return options_.name; }
  const Status& failure() const { return failure_; }

  // Counters, readable from any thread.
  uint64_t polls() const { return polls_.load(std::memory_order_relaxed); }
  // Arrivals for no open channel (a closed one's late write or word), and completions nobody
  // could be told of (a receive's error, a malformed control message): dropped, logged at debug.
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  size_t openChannels() const { return openCount_.load(std::memory_order_relaxed); }
  // Closed channels whose writes are still pending (their send memory kept until they end).
  size_t lingering() const { return lingering_.load(std::memory_order_relaxed); }
  // Whether the loop runs (a poll posted, or a wait on the fd or the timer armed). False: the
  // hub does nothing until a channel gets work, so polls() stays put.
  bool isPolling() const { return polling_.load(std::memory_order_relaxed); }
  size_t receivesPosted() const { return receivesPosted_; }
  // Payload bytes posted straight from the caller's registered memory, and through the
  // channels' send rings (a copy each).
  uint64_t bytesFromUserMemory() const { return fromUser_.load(std::memory_order_relaxed); }
  uint64_t bytesThroughRing() const { return throughRing_.load(std::memory_order_relaxed); }
  // Of those, the bytes written into peers' windows (FabricChannel::sendInto) not their rings.
  uint64_t bytesIntoWindows() const { return intoWindows_.load(std::memory_order_relaxed); }

 private:
  friend class FabricChannel;
  enum class TokenKind : uint64_t { kWrite = 0, kCredit = 1, kReceive = 2 };

  FabricHub(asio::io_context& io, FabricHubOptions options);
  Status postReceive(uint32_t index);
  Status topUpReceives();
  void onChannelClosed(FabricChannel& channel);
  // The channel's post found the endpoint's queue full: retried after the next poll.
  void retryLater(FabricChannel& channel);
  Result<FabricEndpoint::PeerId> peerFor(const std::vector<uint8_t>& address);

  // The progress loop.
  void kick();  // some channel has new work: poll now (waking a wait)
  void pollOnce();
  void park();  // nothing came: sleep on the fd or the timer
  void dispatch(FabricCompletion& c);
  bool wantsProgress() const;
  void failAll(const Status& why);
  void reapLingering();
  void drop(const std::string& what);

  static uint64_t token(TokenKind kind, uint32_t serial, uint32_t index);

  asio::io_context& io_;
  FabricHubOptions options_;
  std::unique_ptr<FabricDomain> domain_;
  std::unique_ptr<FabricEndpoint> endpoint_;
  std::unique_ptr<UserRegions> userRegions_;
  std::unique_ptr<asio::posix::stream_descriptor> waitFd_;
  asio::steady_timer timer_;
  Status failure_;
  bool receivesForWrites_ = false;

  // Channels: the open ones by id, and every one with an operation pending by serial.
  std::vector<std::shared_ptr<FabricChannel>> byId_;
  std::unordered_map<uint32_t, std::shared_ptr<FabricChannel>> bySerial_;
  uint16_t nextId_ = 0;
  uint32_t nextSerial_ = 0;
  uint64_t slotsOpen_ = 0;  // ring slots of the open channels
  std::map<std::vector<uint8_t>, FabricEndpoint::PeerId> peers_;
  std::vector<uint32_t> closedSerials_;  // closed channels still in bySerial_
  std::vector<std::shared_ptr<FabricChannel>> retry_;  // posts that found the queue full

  // Posted receives: 8-byte control words (or a slot's write under FI_RX_CQ_DATA).
  AlignedBuffer receiveBytes_;
  RegisteredMemory receiveMemory_;
  uint32_t receiveCapacity_ = 0;
  std::vector<uint32_t> freeReceives_;  // indices of receive buffers not posted
  size_t receivesPosted_ = 0;

  // The loop's state.
  bool scheduled_ = false;  // a poll is posted, or a wait (fd or timer) is armed
  void setScheduled(bool on) {
    scheduled_ = on;
    polling_.store(on, std::memory_order_relaxed);
  }
  std::atomic<bool> polling_{false};
  bool parked_ = false;     // that wait is the fd's or the timer's
  std::chrono::microseconds backoff_{0};
  std::atomic<uint64_t> polls_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<size_t> openCount_{0};
  std::atomic<size_t> lingering_{0};
  std::atomic<uint64_t> fromUser_{0};
  std::atomic<uint64_t> throughRing_{0};
  std::atomic<uint64_t> intoWindows_{0};
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // handlers outliving the hub
};

}  // namespace rs::transport::fabric
