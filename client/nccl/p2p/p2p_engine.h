// The io threads behind every p2p connection of a process: one io_context per thread (as in
// Asio's io_context_pool), so a socket's handlers never run concurrently with each other.
// A connection spreads its sockets over the threads, which is what lets one NCCL connection
// use more than one core. Listeners, connectors and comms hold the engine (shared_ptr), so the
// threads outlive every socket; nothing running on an io thread holds it, so the engine is
// never destroyed from one of its own threads.
#pragma once

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "rs/nccl/p2p.h"

namespace rs::nccl::p2p {

class P2pEngine {
 public:
  explicit P2pEngine(uint32_t threads);
  ~P2pEngine();
  P2pEngine(const P2pEngine&) = delete;
  P2pEngine& operator=(const P2pEngine&) = delete;

  size_t threadCount() const { return ios_.size(); }
  asio::io_context& io(size_t i) { return *ios_[i % ios_.size()]; }
  // Round-robin start index, so consecutive connections begin on different threads.
  size_t nextIndex() { return next_.fetch_add(1, std::memory_order_relaxed); }

 private:
  std::vector<std::unique_ptr<asio::io_context>> ios_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::vector<std::thread> threads_;
  std::atomic<size_t> next_{0};
};

}  // namespace rs::nccl::p2p
