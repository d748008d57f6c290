// What a member keeps of the results it has handed back to its caller while their reducer has
// not yet committed them (proto/FAILOVER.md, "What each member keeps"). A collective completes
// as soon as its last result part is in, and NCCL or PyTorch reuse the buffer at once; but
// until every member holds a chunk's whole result (the reducer's COMMIT), this member may be
// the only one that can give it to a member that lost the end of it with a reducer. So before
// a collective is handed back, the results of its chunks not yet committed are copied here,
// and dropped at their commit. Failover resends from here; until it exists, nothing else reads
// it (stats() and copyOf() are for metrics and tests).
//
// Bounded: a collective whose copy would take the store past its capacity waits, its results
// in its buffer, until commits make room (or its own chunks are committed, which shrinks the
// copy). That is back pressure, never an error; the collective timeout bounds it, since the
// waiting request's deadline still runs. Collectives are kept in the order they arrive here:
// one that waits holds back those behind it, so memory stays bounded and none is passed over.
// Why waiting cannot deadlock: a member acknowledges a result as soon as it is in (RECEIVED),
// whether or not its collective has completed, and before any chunk of a later collective on
// that stream (client/connection.h), so every commit a waiting collective needs comes from
// frames already on their way.
//
// Buffers are reused: a result dropped at its commit leaves its buffer for the next copy of the
// same size (a job all-reduces the same buckets step after step), within the bound (kept + free
// <= capacity), so a steady stream of collectives copies into memory already mapped: a buffer
// from new[] that the allocator had handed back to the system costs a page fault and a zeroed
// page per 4 KiB at its copy (bench/RESULTS.md, "Retention buffers reused"). A buffer failover
// still holds (Kept) is never reused.
//
// A chunk lives on one lane, the (reducer, stream) that carries it; a lane's COMMIT(c) covers
// every chunk up to c on it. Thread-safe: the io thread that completes a collective keeps it,
// the io threads of the lanes commit, anyone reads the stats. A collective's completion runs
// outside the lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "client/request_state.h"
#include "core/wire/frame.h"
#include "rs/client.h"

namespace rs::client {

class RetentionStore {
 public:
  // One chunk's result, where the caller's buffer holds it.
  struct Chunk {
    uint64_t chunk = 0;
    uint32_t lane = 0;
    const std::byte* data = nullptr;
    size_t bytes = 0;
    // What failover resends it as (proto/FAILOVER.md): the chunk's REDUCE header, and whether
    // `data` holds fp32 for a bf16 wire type (RS_WIRE_DTYPE).
    wire::FrameHeader header{};
    bool compressed = false;
  };
  // A result kept, or held in a waiting collective's buffer, as failover takes it: its bytes
  // shared with the store (kept) or copied (waiting), so that they outlive a commit meanwhile.
  struct Kept {
    wire::FrameHeader header;
    std::shared_ptr<std::byte[]> data;
    bool compressed = false;
  };
  // A collective whose results are all in: its request, finished (OK) once its uncommitted
  // results are copied (never with the store's lock held), and its chunks.
  struct Collective {
    std::shared_ptr<RequestState> request;
    std::vector<Chunk> chunks;
  };
  enum class Outcome {
    kKept,     // copied (or nothing to copy), and the request finished
    kWaiting,  // no room yet: copied and finished by a later commit()
    kClosed,   // the store was closed (the communicator failed): nothing done
  };

  RetentionStore(uint64_t capacityBytes, uint32_t lanes);

  Outcome keep(Collective collective);
  // The lane's reducer committed every chunk up to `chunk` on it (the lane's commits rise; the
  // connection checks that): what was kept of them is dropped, and the collectives waiting are
  // kept while there is room, in order.
  void commit(uint32_t lane, uint64_t chunk);
  // Keeps nothing more: returns the requests still waiting (the store will not finish them),
  // and keep() answers kClosed from now on.
  std::vector<std::shared_ptr<RequestState>> close();

  RetentionStats stats() const;
  // The highest chunk committed on `lane`, if any.
  std::optional<uint64_t> committed(uint32_t lane) const;
  // A copy of what is kept of `chunk`, if it is kept.
  std::optional<std::vector<std::byte>> copyOf(uint64_t chunk) const;
  // Failover: the results on `lane` from chunk `from` on that are not committed, in chunk order:
  // those kept, and those of the collectives waiting for room.
  std::vector<Kept> uncommittedFrom(uint32_t lane, uint64_t from) const;
  // For a timeout's message: per lane, the chunks kept and the chunks of collective `seq`
  // (if it waits) not committed yet.
  struct LaneDebt {
    uint32_t lane = 0;
    uint64_t kept = 0;
    uint64_t waiting = 0;
  };
  std::vector<LaneDebt> debts(uint64_t seq) const;

 private:
  struct Held {
    std::shared_ptr<std::byte[]> data;
    size_t bytes = 0;
    wire::FrameHeader header;
    bool compressed = false;
  };
  bool committedLocked(const Chunk& c) const;
  // A buffer of `bytes`: a free one of that size, else a new one, for which free ones give way
  // where kept + free + it would pass the bound.
  std::shared_ptr<std::byte[]> takeBufferLocked(size_t bytes);
  // `held`'s buffer back to the free ones, if nobody else holds it and the bound has room.
  void recycleLocked(Held&& held);
  // Copies `collective`'s uncommitted chunks if they fit; false (and nothing copied) if not.
  bool tryKeepLocked(const Collective& collective);

  const uint64_t capacity_;
  mutable std::mutex mu_;
  std::vector<std::map<uint64_t, Held>> lanes_;  // per lane: chunk -> its kept result
  std::vector<std::optional<uint64_t>> committed_;
  std::deque<Collective> waiting_;
  std::multimap<size_t, std::shared_ptr<std::byte[]>> free_;  // by size; stats_.freeBytes
  bool closed_ = false;
  RetentionStats stats_;
};

}  // namespace rs::client
