#include "client/nccl/p2p/p2p_engine.h"

#include <algorithm>

#include "core/common/log.h"

namespace rs::nccl::p2p {

std::shared_ptr<P2pEngine> makeEngine(uint32_t threads) {
  return std::make_shared<P2pEngine>(threads);
}

P2pEngine::P2pEngine(uint32_t threads) {
  const uint32_t n = std::clamp<uint32_t>(threads, 1, 64);
  for (uint32_t i = 0; i < n; ++i) {
    ios_.push_back(std::make_unique<asio::io_context>(1));
    guards_.push_back(asio::make_work_guard(*ios_.back()));
  }
  buildLoggerBeforeThreads();
  for (auto& io : ios_) threads_.emplace_back([io = io.get()] { io->run(); });
}

P2pEngine::~P2pEngine() {
  // Every listener, connector and comm has drained by now (they hold the engine), so stop()
  // discards nothing that still matters.
  guards_.clear();
  for (auto& io : ios_) io->stop();
  for (size_t i = 0; i < threads_.size(); ++i) {
    if (threads_[i].get_id() == std::this_thread::get_id()) {
      // Only a bug gets here (the last owner released on an io thread): joining would hang
      // and freeing the io_context would pull it from under this very thread, so leak both.
      rs::logger().error("p2p engine destroyed on its own io thread; leaking that thread");
      threads_[i].detach();
      (void)ios_[i].release();
      continue;
    }
    threads_[i].join();
  }
}

}  // namespace rs::nccl::p2p
