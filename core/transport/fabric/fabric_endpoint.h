// One reliable-datagram endpoint (FI_EP_RDM) and its completion queue: RMA writes with immediate
// data into peers' registered memory, small sends and receives for control words, and the
// completions of all of them, errors included, as values.
//
// Threading: one thread drives an endpoint (its domain is FI_THREAD_DOMAIN); on providers with
// manual progress (ofi_rxm) that thread's poll() is what moves data at all, on both sides, so a
// target that waits for a write polls. Every wait has a bound; nothing here aborts on a peer's
// input. Writes ask for delivery-complete: a write's completion means its bytes are visible in
// the target's memory, which is what lets the protocol hand a slot or a result over on it.
#pragma once

#include <rdma/fi_endpoint.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/common/status.h"
#include "core/transport/fabric/fabric_domain.h"
#include "core/transport/fabric/registered_memory.h"

namespace rs::transport::fabric {

enum class FabricOp : uint8_t {
  kWrite,        // our RMA write into a peer's memory
  kSend,         // our control message
  kRecv,         // a posted receive that a peer's message filled
  kRemoteWrite,  // a peer's write into our memory, with its immediate data
};
const char* fabricOpName(FabricOp op);

struct FabricCompletion {
  FabricOp op = FabricOp::kWrite;
  // The caller's token, as posted. For kRemoteWrite: the token of the receive it used up, if any.
  uint64_t token = 0;
  uint32_t immediate = 0;  // kRemoteWrite: the writer's immediate data
  size_t bytes = 0;        // kRecv: bytes received; kWrite, kSend: bytes posted
  // kRemoteWrite: the write used up one posted receive (providers with FI_RX_CQ_DATA, as verbs):
  // the receiver posts another. Never true on tcp.
  bool consumedRecv = false;
  Status status;  // not OK: the operation failed, and the message says which, to whom, and why
};

struct FabricEndpointOptions {
  // A name for logs and errors ("reducer 2 lane 0").
  std::string name = "endpoint";
  // How long a post waits for room in a full send or receive queue (progressing meanwhile).
  // Zero: never waits; a post that finds the queue full fails at once and postFoundQueueFull()
  // says so (an event loop retries it after its next poll instead of blocking its thread; on
  // ofi_rxm the first post to a peer finds it full until the connection is up).
  std::chrono::milliseconds postTimeout{5000};
  // Writes ask for delivery-complete. Off only to show what the provider does without it
  // (tests/fabric); the data path never turns it off.
  bool deliveryComplete = true;
  // The completion queue gets a wait object (FI_WAIT_FD): waitFd() and tryWait() let an event
  // loop sleep on it. Not every provider takes one: open() then fails, and the caller polls.
  bool waitFd = false;
};

class FabricEndpoint {
 public:
  using PeerId = uint32_t;

  static Result<std::unique_ptr<FabricEndpoint>> open(FabricDomain& domain,
                                                      FabricEndpointOptions options = {});
  ~FabricEndpoint();
  FabricEndpoint(const FabricEndpoint&) = delete;
  FabricEndpoint& operator=(const FabricEndpoint&) = delete;

  // This endpoint's address (fi_getname), for the peer's addPeer: the TCP handshake carries it.
  const std::vector<uint8_t>& address() const { return address_; }
  const std::string& provider() const { return domain_.provider(); }

  // A peer by the address it sent (its input: checked) and a name for errors ("tcp://h:p").
  Result<PeerId> addPeer(std::span<const uint8_t> address, std::string name);

  // Writes src[srcOffset, +size) to the peer's dst at dstOffset, with `immediate` for the
  // target's completion. Checked against both buffers' bounds before anything is posted.
  Status postWrite(PeerId peer, const RegisteredMemory& src, size_t srcOffset, size_t size,
                   const RemoteBuffer& dst, uint64_t dstOffset, uint32_t immediate,
                   uint64_t token);
  // Sends mem[offset, +size) as one message (a control word; no larger than the peer's receive).
  Status postSend(PeerId peer, const RegisteredMemory& mem, size_t offset, size_t size,
                  uint64_t token);
  // Posts mem[offset, +size) for one incoming message from any peer.
  Status postRecv(const RegisteredMemory& mem, size_t offset, size_t size, uint64_t token);

  // Moves the provider along and appends the completions that are ready (at most `max`). An
  // error here is the queue's, not one operation's: the endpoint is unusable (abort it).
  Status poll(std::vector<FabricCompletion>& out, size_t max = 64);
  // The next completion, polling for at most `timeout`; kTimeout when none came.
  Result<FabricCompletion> next(std::chrono::milliseconds timeout);

  // The completion queue's wait fd (options.waitFd), -1 without one. Owned by libfabric.
  int waitFd() const { return waitFd_; }
  // fi_trywait on the queue: true when nothing is ready and sleeping on waitFd() until it is
  // readable is safe; false when the queue must be polled first.
  bool tryWait();

  // Whether the last post failed only because the queue was full (postTimeout 0): nothing was
  // posted, the same post may be retried after a poll.
  bool postFoundQueueFull() const { return postFoundQueueFull_; }

  // Operations posted and not completed.
  size_t pending() const { return pending_.size(); }
  bool isOpen() const { return ep_ != nullptr; }

  // Polls until no operation is pending, appending the completions to `out`, for at most
  // `bound`; past it, aborts with kTimeout, so every pending operation has completed, one way
  // or the other, when it returns (a peer that died without the provider noticing costs the
  // bound, never a hang). OK when nothing had to be aborted.
  Status finishPending(std::chrono::milliseconds bound, std::vector<FabricCompletion>& out);

  // Closes the endpoint: what had completed still comes out, and every operation still pending
  // completes in `out` with `why`. Later posts fail. Idempotent.
  void abort(const Status& why, std::vector<FabricCompletion>& out);

 private:
  struct Op;  // one posted operation: the provider's context first, then ours

  FabricEndpoint(FabricDomain& domain, FabricEndpointOptions options);
  Status postMessage(FabricOp kind, PeerId peer, const RegisteredMemory& mem, size_t offset,
                     size_t size, uint64_t token);
  Status post(Op* op, const std::function<ssize_t()>& call, const char* what);
  Status readQueue(size_t max);
  FabricCompletion completionOf(const struct fi_cq_data_entry& entry);
  FabricCompletion errorCompletion(const struct fi_cq_err_entry& err);
  std::string peerName(PeerId peer) const;

  FabricDomain& domain_;
  FabricEndpointOptions options_;
  fid_ep* ep_ = nullptr;
  fid_cq* cq_ = nullptr;
  int waitFd_ = -1;
  bool postFoundQueueFull_ = false;
  std::vector<uint8_t> address_;
  struct Peer {
    fi_addr_t address;
    std::string name;
  };
  std::vector<Peer> peers_;
  std::unordered_set<Op*> pending_;
  std::deque<FabricCompletion> ready_;
  Status broken_;  // once the endpoint failed or was aborted: why
};

}  // namespace rs::transport::fabric
