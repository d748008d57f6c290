// Counting an owner's pending asynchronous operations, so that it knows when it has drained:
// once its sockets are closed and every handler it started has run, nothing can still write
// into the buffers it was given. The owner (a shared_from_this class) wraps each handler with
// countedHandler; a wrapped handler keeps the owner alive and calls the owner's opDone after
// running. What drained means (fail the queued requests, wake a waiting close) stays the
// owner's, in its opDone.
#pragma once

#include <atomic>
#include <memory>
#include <utility>

namespace rs::transport {

class PendingOps {
 public:
  void add() { count_.fetch_add(1, std::memory_order_relaxed); }
  // One operation has ended; true when it was the last one pending.
  bool done() { return count_.fetch_sub(1, std::memory_order_acq_rel) == 1; }
  int count() const { return count_.load(std::memory_order_acquire); }

 private:
  std::atomic<int> count_{0};
};

// Wraps `handler` so that it counts as one of `ops` until it has run, then calls
// `(owner->*opDone)()` (which calls ops.done()).
template <typename Owner, typename F>
auto countedHandler(std::shared_ptr<Owner> owner, PendingOps& ops, void (Owner::*opDone)(),
                    F&& handler) {
  ops.add();
  return [self = std::move(owner), opDone, h = std::forward<F>(handler)](auto&&... args) mutable {
    h(std::forward<decltype(args)>(args)...);
    ((*self).*opDone)();
  };
}

}  // namespace rs::transport
