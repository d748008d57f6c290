// A stream owner's Liveness (liveness.h) run on a timer on the owner's io thread: the reducer's
// Session and the member's Connection each hold one when their stream has a loss bound. Started
// when something becomes owed after nothing was, it checks every Liveness::checkInterval() until
// a check finds nothing owed either way, and tells its owner when to send a HEARTBEAT and when
// the peer is lost. A stream that is busy or idle costs a few clock reads and, while busy, one
// timer wake-up every twelfth of the bound.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>

#include "core/transport/liveness.h"
#include "core/transport/stream.h"

namespace rs::transport {

class LivenessWatch {
 public:
  // What the watch asks of its owner, on the owner's io thread.
  class Owner {
   public:
    // The stream's counters and what the owner owes and awaits now; nothing owed either way
    // once the owner is closing.
    virtual Liveness::Sample livenessSample() const = 0;
    // Queues a HEARTBEAT and starts writing it; returns the stream's bytesSent() after that.
    virtual uint64_t sendHeartbeat() = 0;
    // The peer was silent for `silence` (at least the bound) while awaited. The watch stops.
    virtual void peerSilent(std::chrono::milliseconds silence) = 0;

   protected:
    ~Owner() = default;
  };
  // Wraps each timer wait's handler: the owner keeps itself alive (and counts the wait as
  // pending, where it counts its operations) until it has run, as FrameWriter::Hold does.
  using Hold = std::function<WaitHandler(WaitHandler)>;

  // `bound` > 0. `owner` outlives every wait (hold() sees to it).
  LivenessWatch(asio::io_context& io, std::chrono::milliseconds bound, Owner& owner, Hold hold);

  std::chrono::milliseconds bound() const { return liveness_.bound(); }
  // Something is owed from now on after nothing was: the quiet before counts for nothing, and
  // the checks run (again).
  void start();
  // As start(), unless something is owed already: then its clock runs on.
  void startIfIdle();
  // The owner closes: no more checks (a wait in flight ends with operation_aborted).
  void cancel();

 private:
  void arm();
  void check();

  Owner& owner_;
  const Hold hold_;
  Liveness liveness_;
  asio::steady_timer timer_;
  bool armed_ = false;
  bool cancelled_ = false;
};

}  // namespace rs::transport
