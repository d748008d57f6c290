// One data stream's RMA channel, both directions, on a FabricHub (one per io thread).
//
// Send side: payloads in order, each cut into pieces of at most the peer's slot size; a piece is
// written, as one delivery-complete RMA write with immediate data `peer channel id << 20 | seq`,
// into the peer's ring slot seq % slots, only while the sender holds that slot's credit. It is
// written straight from the caller's memory where that lies in a buffer the caller registered
// (the hub's user regions, user_regions.h: zero-copy), else copied into this channel's
// registered send ring first. Receive side: the peer's pieces in
// order, one slot at a time, handed out once their immediate data arrived (never on a writer's
// word alone); release() returns the slot as a credit (a control word, control_word.h).
//
// Windows (proto/FABRIC.md, "The result window"): the receiver may open a window onto memory
// the caller registered and hand it to the peer, whose sendInto() then writes a payload's
// pieces there instead of into the ring. Each piece still takes a credit and a sequence number,
// so the receiver counts and releases it as a ring piece (its bytes are in the window, not in
// the span asyncNextPiece hands out). A channel registers the memory of its windows on its own,
// so that closing them (closeWindows, detach, close) revokes this channel's windows alone.
//
// Threading: every call on the hub's io thread; handlers and `done` run there, never inline
// from the call that registers them. Liveness is the owner's: nothing here waits on the peer
// without the owner's bound (the TCP stream's loss bound), and close() never waits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>

#include "core/common/aligned_buffer.h"
#include "core/common/status.h"
#include "core/transport/fabric/channel_grant.h"
#include "core/transport/fabric/control_word.h"
#include "core/transport/fabric/fabric_endpoint.h"
#include "core/transport/fabric/registered_memory.h"
#include "core/transport/fabric/user_regions.h"

namespace rs::transport::fabric {

class FabricHub;

class FabricChannel : public std::enable_shared_from_this<FabricChannel> {
 public:
  using Done = std::function<void(const Status&)>;
  using PieceHandler = std::function<void(const Status&, std::span<const uint8_t>)>;

  ~FabricChannel();
  FabricChannel(const FabricChannel&) = delete;
  FabricChannel& operator=(const FabricChannel&) = delete;

  // What the peer needs to write into this channel (carried by FABRIC_OFFER/ACCEPT).
  ChannelGrant grant() const;
  // The peer's grant, network input: checked whole (provider, address, id, shape, size) before
  // the peer is inserted. Once only.
  Status connect(const ChannelGrant& peer);

  // Sends `bytes` from `src` (valid until done runs) after the payloads before it. done(OK)
  // once every piece was delivered into the peer's ring; done(error) if the channel failed
  // first, but not while a write from the caller's registered memory may still read it,
  // unless that write outlives the hub's releaseSourcesAfter. Zero bytes complete at once.
  void send(const void* src, size_t bytes, Done done) {
    queue(src, bytes, std::nullopt, 0, std::move(done));
  }
  // As send(), but the pieces land in the peer's `window` (its openWindow()) from `offset` on,
  // in the same pieces as send() would cut. The window came from the network: a payload that
  // would not fit in it fails the channel before any of it is posted.
  void sendInto(const void* src, size_t bytes, const RemoteBuffer& window, uint64_t offset,
                Done done);
  // Payload bytes handed to the provider so far (cumulative).
  uint64_t bytesPosted() const { return bytesPosted_; }

  // The next piece: min(slotBytes, expect) bytes (expect: what is left of the current payload,
  // known from the TCP header), once the immediate data of the next sequence number arrived; or
  // the channel's error. One handler at a time.
  void asyncNextPiece(size_t expect, PieceHandler handler);
  // The oldest piece handed out and not released is used up: its slot goes back to the peer.
  Status release();

  // A window onto [data, data + bytes), which must lie inside one buffer the caller registered
  // (the hub's user regions, user_regions.h), for the peer's sendInto(). The region holding it
  // is registered for remote writes by this channel, once, and stays so until closeWindows():
  // the peer may write anywhere in that region meanwhile, which is why only a peer trusted
  // with the caller's results gets a window. INVALID_ARGUMENT if no registered buffer holds the
  // range.
  Result<RemoteBuffer> openWindow(void* data, size_t bytes);
  // Revokes every window of this channel: from now on a peer's write into one meets a stale
  // key and fails at the writer, never lands. detach(), close() and a failure do it too.
  void closeWindows();
  // The caller's regions this channel holds registered for windows.
  size_t windowRegions() const { return windows_.size(); }

  // The owner lets go (PayloadChannel::detach): the unsent rest of every send is copied here,
  // every `done` and the waiting piece handler run with `why` (later, on the io thread; a
  // send's once no write from the caller's memory is in flight, or the hub's
  // releaseSourcesAfter passed), and the sends go on from the copies. The windows are closed:
  // the memory behind them is the caller's again. Nothing else if the channel failed.
  void detach(const Status& why);

  // Fails what is pending with `why` (their handlers run later, on the io thread) and
  // deregisters the receive ring: a late write by the peer meets a stale key and fails at the
  // writer, never lands. The hub keeps the send memory until the pending writes completed.
  // Idempotent.
  void close(const Status& why);
  // OK while usable; the first error otherwise (a protocol error names channel, peer, what
  // arrived and what was expected).
  const Status& failure() const { return failure_; }

  const std::string& name() const { return name_; }
  uint16_t id() const { return id_; }
  const RingShape& ring() const { return ring_; }
  bool isConnected() const { return connected_; }

 private:
  friend class FabricHub;
  struct Job {  // one send()
    const uint8_t* src;
    size_t bytes;
    // The caller's registration holding [src, src + bytes): pieces go straight from it. None:
    // through the send ring (also for the rest of a detached send).
    std::shared_ptr<const UserRegion> region;
    size_t posted = 0;     // bytes cut into pieces and posted
    size_t inFlight = 0;   // its pieces posted and not completed
    size_t fromUserInFlight = 0;  // of those, the ones read from the caller's memory
    Done done;             // empty once run
    // The outcome `done` gets once fromUserInFlight is 0 (detached or failed meanwhile).
    std::optional<Status> owed;
    std::vector<uint8_t> owned;  // after detach(): the unsent rest, which src then points into
    // Where its pieces land: the peer's window, from windowOffset on; none: the peer's ring.
    std::optional<RemoteBuffer> window;
    uint64_t windowOffset = 0;
  };
  struct Window {  // this channel's own registration of one of the caller's regions
    uint64_t regionId;
    RegisteredMemory memory;
  };

  FabricChannel(FabricHub& hub, uint16_t id, uint32_t serial, RingShape ring, std::string name);
  Status openRing();
  void queue(const void* src, size_t bytes, std::optional<RemoteBuffer> window, uint64_t offset,
             Done done);

  // From the hub's dispatch, on the io thread.
  void onArrival(uint32_t sequence, size_t bytes);
  void onControl(const ControlWord& word);
  void onWriteDone(uint32_t slot, const Status& status);
  void onCreditSent(const Status& status);

  void dropMemory();     // the hub's shutdown: registrations go before the domain
  void pump();           // posts what credits allow
  void finishJobs();     // done(OK) for the sends wholly delivered, in order
  // A piece of `job` completed: runs an owed done once no write reads the caller's memory.
  void settle(Job& job);
  void payOwed(Job& job);  // runs (posts) the done a detached or failed send owes, if any
  // A detached or failed channel's owed dones run at the latest after the hub's
  // releaseSourcesAfter: a peer that completes nothing (stopped) must not hold the caller.
  void armRelease();
  void releaseOwed();
  bool owes() const;  // some send's done waits for its writes from the caller's memory
  void retry();          // after a post found the queue full
  void post(std::function<void()> f);
  void deliver();        // runs the waiting handler if its piece is there
  void sendCredits();    // posts a credit word if one is due and none is in flight
  void fail(Status why);
  Status protocolFailure(const std::string& what);
  std::string who() const;  // "channel 'name' (id 3, peer channel 7)"
  // Whether the hub must poll for this channel (pending operations, a waiting handler, a
  // sender without credits).
  bool wantsProgress() const;
  size_t pendingOps() const { return writesInFlight_ + (creditInFlight_ ? 1 : 0); }

  FabricHub& hub_;
  asio::io_context& io_;
  const uint16_t id_;
  const uint32_t serial_;  // the hub's token for this channel: never reused, unlike the id
  const RingShape ring_;
  const std::string name_;
  Status failure_;
  bool closed_ = false;
  bool retryQueued_ = false;

  // Receive side.
  AlignedBuffer ringBytes_;
  RegisteredMemory ringMemory_;
  std::vector<bool> arrived_;  // by slot: its piece's immediate data came, not handed out yet
  std::vector<size_t> arrivedBytes_;
  uint64_t consumed_ = 0;      // pieces handed out
  uint64_t released_ = 0;      // pieces released (credits returned to the peer, or due)
  PieceHandler handler_;
  size_t expect_ = 0;
  bool deliveryPosted_ = false;
  std::vector<Window> windows_;
  AlignedBuffer controlBytes_;  // the credit word being sent
  RegisteredMemory controlMemory_;
  bool creditInFlight_ = false;
  uint64_t releasedSent_ = 0;   // released_ as of the last credit word posted

  // Send side (after connect).
  bool connected_ = false;
  ChannelGrant peer_;
  FabricEndpoint::PeerId peerId_ = 0;
  AlignedBuffer sendBytes_;
  RegisteredMemory sendMemory_;
  std::vector<bool> slotBusy_;  // by peer slot: its write has not completed yet
  std::vector<Job*> slotJob_;
  std::vector<bool> slotFromUser_;  // by peer slot: its write reads the caller's memory
  std::deque<std::unique_ptr<Job>> jobs_;
  // Sends of a failed channel whose writes from the caller's memory are still in flight: their
  // done runs once those completed (or the hub dropped the endpoint).
  std::vector<std::unique_ptr<Job>> draining_;
  asio::steady_timer releaseTimer_;
  bool releaseArmed_ = false;
  uint64_t written_ = 0;       // pieces posted
  uint64_t peerReleased_ = 0;  // pieces the peer released (from its credit words)
  size_t writesInFlight_ = 0;
  uint64_t bytesPosted_ = 0;
};

}  // namespace rs::transport::fabric
