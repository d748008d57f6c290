// The caller's buffers registered for zero-copy sends (the NCCL plugin's regMr,
// Communicator::registerBuffer): a payload sent from inside one leaves from it, with no copy
// into a transport's own send memory. This is only the list, shared by every io thread of a
// communicator; each transport registers the ranges with its own device on its own thread
// (transport/fabric/user_regions.h: a fabric domain is one thread's), at the first send after
// the list changed, and lets go of those removed from it there.
//
// Thread-safe. generation() is one atomic load, so a sender checks for changes per payload.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace rs::transport {

class UserMemory {
 public:
  struct Range {
    uint64_t id = 0;
    void* data = nullptr;
    size_t size = 0;
  };

  // The range's id (never 0). Overlapping ranges are allowed (NCCL registers what it likes).
  uint64_t add(void* data, size_t size);
  // False for an id not in the list. From the return on, no payload starts from the range:
  // a send already under way keeps its registration until it completes.
  bool remove(uint64_t id);

  // Changes with every add and remove.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // The ranges, and the generation they are of.
  std::vector<Range> snapshot(uint64_t* generation) const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::vector<Range> ranges_;
  uint64_t nextId_ = 1;
  std::atomic<uint64_t> generation_{0};
};

}  // namespace rs::transport
