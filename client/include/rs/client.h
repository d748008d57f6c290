// The Reduction Server client library: connect to the reducers, join a group, and run
// asynchronous all-reduces whose results land straight in the caller's buffer.
//
//   auto options = rs::client::ClientOptions::fromEnvironment();   // RS_REDUCERS, CLUSTER_SPEC
//   auto comm = rs::client::Communicator::connect(*options, {groupId, worldSize, rank});
//   auto req = (*comm)->allReduceAsync(send, recv, count, rs::DataType::kFloat32,
//                                      rs::ReduceOp::kSum);
//   rs::Status s = (*req)->wait();
//
// Every member of a group must issue the same collectives (count, type, op) in the same order;
// calls on one Communicator are serialised internally, so several threads may submit, but the
// order they win is the order the group sees. A failure (a reducer or member lost, a timeout,
// a mismatch) fails every collective in flight on the communicator with a message that says
// what happened, and the communicator stays failed: make a new one, as with NCCL.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/endpoint.h"
#include "core/common/status.h"
#include "core/reduce/dtype.h"
#include "core/transport/options.h"
#include "core/wire/group_id.h"

namespace rs::client {

struct ClientOptions {
  // Who moves the bytes. kIoThreads: `ioThreads` background threads, so collectives progress
  // while the caller computes. kCaller: the threads that call wait() or test() do the I/O
  // themselves (as MPI does), which saves two thread hand-offs per collective, the larger
  // part of a small all-reduce's latency; a collective then progresses only while some thread
  // waits on or tests a request of the communicator.
  enum class Progress { kIoThreads, kCaller };

  std::vector<Endpoint> reducers;           // in the same order on every member
  // TCP streams to each reducer; 0: automatic, streamsFor(R) below.
  uint32_t streamsPerReducer = 0;
  Progress progress = Progress::kIoThreads;
  uint32_t ioThreads = 2;                   // threads driving the streams (kIoThreads)
  uint64_t minChunkBytes = 16 << 10;        // a collective is split no finer than this
  uint64_t maxChunkBytes = 1 << 20;         // and no chunk is larger than this
  std::chrono::milliseconds collectiveTimeout{300000};
  // The bound on connecting to each reducer: reaching it (retried while refused, since reducers
  // may start after the workers) and its handshake, together; a reducer that accepts and then
  // stalls fails connect() with a timeout naming it and the step.
  std::chrono::milliseconds connectTimeout{120000};
  // The loss bound this member asks for (RS_LOSS_DETECT_MS): a reducer that sends not a byte
  // for this long while this member waits on it (a collective with chunks on its stream not
  // complete) is lost, and the collective fails naming it; this member, while it waits, sends
  // a HEARTBEAT after a third of it without sending, so that the reducer finds a stopped
  // member within it too (proto/WIRE.md, "Heartbeats and the loss bound"). 0: the reducer's
  // (--loss-detect-ms, 10 s by default), which also caps it; else at least 100 ms.
  std::chrono::milliseconds lossDetect{0};
  // This host's link rate in Gbit/s (RS_LINK_GBPS): the streams with a transfer under way are
  // paced to an equal share of it (core/transport/link_share.h). 0: not paced.
  double linkGbps = 0;
  // Each reducer's link rate in Gbit/s (RS_REDUCER_LINK_GBPS), of which this member may send a
  // reducer 1/W. Set it where the reducers' machines are slower than this one (GPU workers at
  // 100-200 Gbit/s, CPU reducers at 32): else W workers each sending at their own rate / W
  // overrun the reducer's port. 0: the same as linkGbps. Ignored while linkGbps is 0.
  double reducerLinkGbps = 0;
  transport::Options transport;  // socket tuning of the streams
  // The job secret that proves this worker to the reducers (proto/WIRE.md, "Authentication");
  // empty: none, and only reducers without a secret accept it. Never logged or sent.
  std::string secret;
  // On a standing pool that serves several jobs: this job's name (1..128 of A-Z a-z 0-9 . _ -),
  // with `secret` set to the job's own secret (`reduction-server --derive-job-secret JOB`).
  // Empty: `secret` is the pool's (or the only job's) secret itself.
  std::string jobName;
  // Wire compression, opt in: the type fp32 sum and avg all-reduces travel in. kBfloat16 halves
  // their bytes: each chunk is rounded to bf16 (nearest even) on its way out, the reducer sums
  // in fp32 and rounds once, and the bf16 result is widened back into the caller's fp32
  // buffer, so results carry bf16 precision. Other types and ops go as they are. Every member
  // of a group must use the same setting (the reducer refuses a mix as a type mismatch).
  DataType float32WireType = DataType::kFloat32;
  // Deterministic mode (RS_DETERMINISTIC=1): the reducers sum every chunk in rank order, so
  // results are bit-identical from run to run whatever order contributions arrive in, at the
  // cost of reducer memory (a staging copy of the chunk per member). Every member
  // of a group must set it alike; the reducer refuses one that differs.
  bool deterministic = false;
  // The reducers' accumulator for fp32 sums (RS_FP32_ACCUMULATOR=fp32|fp64). kFp32, the
  // default, rounds at each of the W-1 adds, as a ring does. kFp64 sums in fp64 and rounds once,
  // so every result is the correctly rounded sum in nearly every element, more accurate than
  // a ring at every W, for 13-21% more reducer CPU per byte and an accumulator twice the
  // chunk (bench/RESULTS.md, "fp32 in an fp64 accumulator"). Every member of a group must set
  // it alike; the reducer refuses one that differs. Other types are unaffected.
  Fp32Accumulator fp32Accumulator = Fp32Accumulator::kFp32;
  // The most this member keeps of results it has handed back before their reducers committed
  // them (RS_RETAIN_BYTES; proto/FAILOVER.md, "What each member keeps"); 0: automatic,
  // effectiveRetainBytes(). At the bound a collective waits for commits before it completes.
  uint64_t retainBytes = 0;
  // Taking a lost reducer back (RS_REJOIN_MS; proto/FAILOVER.md, "A reducer comes back"): while
  // exactly one reducer of the list is lost, this member redials its address, the first time
  // rejoin/16 after the loss and then at twice the last wait, at most `rejoin` apart; a reducer
  // restarted there is taken back by every member at an agreed chunk. 0: never redial.
  std::chrono::milliseconds rejoin{30000};
  // The data path's RDMA (RS_FABRIC; proto/FABRIC.md): "off", "auto" (verbs, then efa, where a
  // probe finds a device; never tcp) or a libfabric provider's name ("verbs", "efa", "tcp" for
  // tests). A reducer that offers the same provider gets each stream's REDUCE and RESULT payloads
  // as RMA writes, the stream keeping the rest; anything else, a probe that finds nothing
  // included, is one log line and TCP, never a failure. `fabricNode` (RS_FABRIC_NODE): the
  // local address the provider binds ("127.0.0.1" on loopback); empty: the provider's first.
  std::string fabric = "auto";
  std::string fabricNode;
  // How long a stream's fabric may take to prove itself (RS_FABRIC_PROBE_TIMEOUT_MS: its probe
  // delivered and the reducer's in) before the stream declines it and runs over TCP; within
  // connectTimeout. A fabric the network does not carry (a firewall, an EFA security group
  // without its self rule, a wrong GID) then costs this, not the whole connect timeout.
  std::chrono::milliseconds fabricProbeTimeout{10000};

  // Reducers from RS_REDUCERS, CLUSTER_SPEC or TF_CONFIG; knobs from RS_STREAMS,
  // RS_CLIENT_PROGRESS (threads|caller), RS_CLIENT_IO_THREADS, RS_MIN_CHUNK, RS_MAX_CHUNK,
  // RS_TIMEOUT_MS, RS_CONNECT_TIMEOUT_MS, RS_LOSS_DETECT_MS, RS_LINK_GBPS, RS_REDUCER_LINK_GBPS,
  // RS_WIRE_DTYPE (fp32|bf16), RS_DETERMINISTIC (0|1), RS_FP32_ACCUMULATOR (fp32|fp64),
  // RS_RETAIN_BYTES, RS_REJOIN_MS, RS_FABRIC (off|auto|PROVIDER), RS_FABRIC_NODE; the secret
  // from RS_SECRET_FILE or RS_SECRET, the job name from RS_JOB.
  static Result<ClientOptions> fromEnvironment();
  // The same knobs (all but the reducers) over the values set now, for tools whose own flags
  // then override the environment; unset variables leave a field as it is.
  Status applyEnvironment();
  // "threads" (kIoThreads) or "caller" (kCaller).
  static Result<Progress> parseProgress(std::string_view name);
  // The automatic stream count: 4 per reducer up to 4 reducers, then fewer, so that a worker
  // keeps about 16 streams (1 each from 16 reducers up). Every stream a collective starts
  // hands its host's transmit queue at least a segment or two at once, even paced: at W=R=16
  // over 50 Mbit/s links 4 streams each (64 per worker) overflowed it (1 MiB 0.74x the chunked
  // ring) and 1 each did not (1.52x). A reducer's share of a worker's link needs no more.
  static uint32_t streamsFor(size_t reducers);
  // streamsPerReducer, or the automatic count when it is 0.
  uint32_t effectiveStreams() const {
    return streamsPerReducer != 0 ? streamsPerReducer : streamsFor(reducers.size());
  }
  // retainBytes, or when it is 0 the larger of 64 MiB and 4 x maxChunkBytes x streams x
  // reducers: a collective completes about a round trip before its last chunks are committed,
  // which leaves the last chunk or two of each stream to keep (2 x chunk x K x R), and a
  // caller's chunk is up to twice the wire's (fp32 over a bf16 wire). client/README.md.
  uint64_t effectiveRetainBytes() const;
  // reducerLinkGbps, or linkGbps when it is 0.
  double effectiveReducerLinkGbps() const {
    return reducerLinkGbps != 0 ? reducerLinkGbps : linkGbps;
  }
  // "fp32" (kFloat32: no compression) or "bf16" (kBfloat16).
  static Result<DataType> parseWireType(std::string_view name);
  // "fp32" or "fp64" (RS_FP32_ACCUMULATOR).
  static Result<Fp32Accumulator> parseFp32Accumulator(std::string_view name);
  // RS_FABRIC: "off", "auto" or a provider's name (1..64 of a-z A-Z 0-9 _ - ; .), as given.
  static Result<std::string> parseFabric(std::string_view name);
  // The type an all-reduce of `type` with `op` travels in under these options.
  DataType wireType(DataType type, ReduceOp op) const;
  Status validate() const;
};

struct GroupSpec {
  GroupId id;              // the same on every member; unique per communicator
  uint32_t worldSize = 1;  // members
  uint32_t rank = 0;       // this member, 0..worldSize-1
};

// What a member keeps of results it has handed back while their reducers have not committed
// them (proto/FAILOVER.md): Communicator::retention().
struct RetentionStats {
  uint64_t capacityBytes = 0;  // the bound (ClientOptions::effectiveRetainBytes)
  uint64_t heldBytes = 0;      // kept now
  uint64_t heldChunks = 0;
  uint64_t peakBytes = 0;      // the most kept at once
  uint64_t chunks = 0;         // chunks of the collectives completed through it
  uint64_t keptBytes = 0;      // copied in since the communicator started (uncommitted chunks)
  uint64_t keptChunks = 0;
  uint64_t reusedChunks = 0;   // of those, copied into a buffer a committed result left
  uint64_t freeBytes = 0;      // such buffers waiting for the next copy (held + free <= bound)
  uint64_t waits = 0;          // collectives that waited for commits before completing
  uint64_t waiting = 0;        // collectives waiting now
  // What commits cost on the wire, 72 bytes a frame: RECEIVED frames sent, COMMIT frames
  // received (at most one of each per chunk and stream; fewer where they coalesce).
  uint64_t receivedFrames = 0;
  uint64_t commitFrames = 0;
};

// The reducers this member goes on without, and what came and went (proto/FAILOVER.md):
// Communicator::failover().
struct FailoverStats {
  uint32_t lostNow = 0;          // reducers of the list in the dead set now
  uint64_t generation = 0;       // rejoins taken (the dead set's generation)
  uint64_t rejoins = 0;          // reducers taken back
  uint64_t rejoinsCancelled = 0; // redials that reached a reducer and were cancelled
  // A redial's streams are all in now: the reducer waits for the other members, or this member
  // for JOIN_AT.
  bool redialUp = false;
};

// A buffer registered for zero-copy sends (Communicator::registerBuffer).
struct BufferRegistration {
  uint64_t id = 0;
};

// Where this member's REDUCE payloads went on its fabric streams: Communicator::fabric().
struct FabricStats {
  std::string provider;             // empty: no fabric, every stream on TCP
  uint64_t bytesFromRegistered = 0;  // written straight from registered buffers (zero-copy)
  uint64_t bytesCopied = 0;          // copied into a send ring first
};

class CommunicatorCore;
class RequestState;

// One all-reduce in flight. Cheap to copy around as a shared_ptr; thread-safe.
class AllReduceRequest {
 public:
  explicit AllReduceRequest(std::shared_ptr<RequestState> state);
  ~AllReduceRequest();

  // Never blocks (with Progress::kCaller it first does the I/O that is ready). True once
  // finished, with the outcome in *status (if given). A collective past its timeout fails the
  // communicator from here too.
  bool test(Status* status = nullptr);
  // Blocks until finished; a collective past its timeout fails the communicator.
  Status wait();
  uint64_t seq() const;

 private:
  std::shared_ptr<RequestState> state_;
};

class Communicator {
 public:
  // Connects every stream to every reducer and joins the group; each stream's dial and
  // handshake end within options.connectTimeout (reducers may appear late, but must answer).
  static Result<std::unique_ptr<Communicator>> connect(const ClientOptions& options,
                                                       const GroupSpec& group);
  ~Communicator();  // closes the streams; waits for the I/O touching user buffers to stop
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // Starts recv[i] = op over members of send[i]. `send` may equal `recv`. Both buffers must
  // stay valid until the request finished, whatever its outcome. `timeout` 0 means
  // options().collectiveTimeout.
  Result<std::shared_ptr<AllReduceRequest>> allReduceAsync(
      const void* send, void* recv, size_t count, DataType type, ReduceOp op,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  // Blocking form.
  Status allReduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op);

  // Registers [data, data + bytes) for zero-copy sends, as ncclCommRegister does: on a fabric
  // (RDMA) stream, a chunk whose input lies inside a registered buffer is written to its
  // reducer straight from it instead of through a copy. Each io thread registers it with its
  // device (pinning its pages) at its first send after this call; worth it for buffers used
  // again and again (NCCL's, a framework's gradient buckets). Without a fabric it changes
  // nothing. The memory must stay mapped until deregisterBuffer returned; buffers may overlap.
  Result<BufferRegistration> registerBuffer(const void* data, size_t bytes);
  // From its return on, no chunk starts from the buffer (one under way keeps it until its
  // writes completed). INVALID_ARGUMENT for a registration this communicator does not hold.
  Status deregisterBuffer(const BufferRegistration& registration);
  FabricStats fabric() const;

  // Fails everything in flight with `reason` and closes the streams.
  void abort(const Status& reason);
  // OK while healthy; otherwise the error that failed the communicator.
  Status health() const;
  // What this member keeps of uncommitted results, now and so far.
  RetentionStats retention() const;
  // The reducers lost now, and the rejoins so far.
  FailoverStats failover() const;

  const GroupSpec& group() const;
  const ClientOptions& options() const;

 private:
  explicit Communicator(std::shared_ptr<CommunicatorCore> core);
  std::shared_ptr<CommunicatorCore> core_;
};

}  // namespace rs::client
