#include "client/request_state.h"

namespace rs::client {

RequestState::RequestState(uint64_t seq, uint64_t chunks, std::vector<uint32_t> chunksPerReducer,
                           std::chrono::steady_clock::time_point deadline,
                           std::weak_ptr<CommunicatorCore> comm)
    : seq_(seq),
      chunks_(chunks),
      deadline_(deadline),
      comm_(std::move(comm)),
      remaining_(chunks),
      perReducer_(new std::atomic<uint32_t>[chunksPerReducer.size()]),
      reducers_(chunksPerReducer.size()) {
  for (size_t r = 0; r < reducers_; ++r) perReducer_[r].store(chunksPerReducer[r]);
  if (chunks == 0) finish(Status::ok());
}

bool RequestState::chunkDone(uint32_t reducer) {
  perReducer_[reducer].fetch_sub(1, std::memory_order_relaxed);
  // acq_rel: whoever takes the last sees every other chunk's result in the buffer.
  return remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1;
}

std::vector<std::pair<uint32_t, uint32_t>> RequestState::reducersOwing() const {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (size_t r = 0; r < reducers_; ++r)
    if (uint32_t n = perReducer_[r].load(std::memory_order_relaxed); n > 0)
      out.emplace_back(static_cast<uint32_t>(r), n);
  return out;
}

void RequestState::finish(const Status& status) {
  // Notify under the lock: a waiter that sees done_ may drop the last reference at once.
  std::lock_guard lock(mu_);
  if (done_.load(std::memory_order_relaxed)) return;
  status_ = status;
  done_.store(true, std::memory_order_release);
  cv_.notify_all();
}

bool RequestState::done(Status* status) const {
  if (!done_.load(std::memory_order_acquire)) return false;
  if (status) {
    std::lock_guard lock(mu_);
    *status = status_;
  }
  return true;
}

bool RequestState::waitUntil(std::chrono::steady_clock::time_point until, Status* status) const {
  std::unique_lock lock(mu_);
  if (!cv_.wait_until(lock, until, [&] { return done_.load(std::memory_order_acquire); }))
    return false;
  if (status) *status = status_;
  return true;
}

}  // namespace rs::client
