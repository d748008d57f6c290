// The shared state of one all-reduce: counts chunks home and lets callers wait or poll. Its
// last chunk home does not finish it: the communicator first keeps what is not committed of its
// results (client/retention_store.h), then finishes it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/common/status.h"
#include "core/reduce/dtype.h"

namespace rs::client {

class CommunicatorCore;

class RequestState {
 public:
  // chunksPerReducer[r]: how many of the chunks reducer r reduces (they sum to `chunks`).
  RequestState(uint64_t seq, uint64_t chunks, std::vector<uint32_t> chunksPerReducer,
               std::chrono::steady_clock::time_point deadline, std::weak_ptr<CommunicatorCore> comm);

  uint64_t seq() const { return seq_; }
  uint64_t chunks() const { return chunks_; }
  uint64_t chunksLeft() const { return remaining_.load(std::memory_order_acquire); }
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }
  std::chrono::milliseconds timeout() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - started_);
  }
  const std::weak_ptr<CommunicatorCore>& comm() const { return comm_; }

  // Where the results are: chunks firstChunk, firstChunk + 1, ... of chunkElems elements each
  // (the last one what is left of `count`), elemSize bytes an element, from `recv` on.
  struct Results {
    uint64_t firstChunk = 0;
    uint64_t chunkElems = 0;
    uint64_t count = 0;
    size_t elemSize = 0;
    const std::byte* recv = nullptr;
    // The chunks' wire type and operation, and whether recv holds fp32 for a bf16 wire type:
    // what a result kept is resent as after a loss (proto/FAILOVER.md).
    DataType wireType = DataType::kFloat32;
    ReduceOp op = ReduceOp::kSum;
    bool compressed = false;
  };
  void setResults(const Results& results) { results_ = results; }
  const Results& results() const { return results_; }
  // Its results were handed to the retention store (under the communicator's submit lock, so
  // that a failover sees either that or a request still in flight, whose buffers it may read).
  void markKept() { kept_ = true; }
  bool kept() const { return kept_; }

  // One chunk's result from `reducer` is in the caller's buffer: true for the last one (every
  // result is in; the caller's buffers are no longer written).
  bool chunkDone(uint32_t reducer);
  // Reducers that still owe chunks, with how many: for timeout messages.
  std::vector<std::pair<uint32_t, uint32_t>> reducersOwing() const;
  // The first call decides the outcome; later calls are ignored.
  void finish(const Status& status);
  bool done(Status* status) const;
  // Waits until finished or `until`; true when finished.
  bool waitUntil(std::chrono::steady_clock::time_point until, Status* status) const;

 private:
  const uint64_t seq_;
  const uint64_t chunks_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  const std::chrono::steady_clock::time_point deadline_;
  const std::weak_ptr<CommunicatorCore> comm_;
  std::atomic<uint64_t> remaining_;
  std::unique_ptr<std::atomic<uint32_t>[]> perReducer_;
  const size_t reducers_;
  Results results_;
  bool kept_ = false;
  std::atomic<bool> done_{false};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  Status status_;
};

}  // namespace rs::client
