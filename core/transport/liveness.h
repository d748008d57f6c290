// Whether a stream's peer still lives, and when to show it that this side does (proto/WIRE.md,
// "Heartbeats and the loss bound"; proto/FAILOVER.md, "Heartbeats"). Socket-free: its owner (the
// reducer's Session, the member's Connection) calls check() from a timer every checkInterval()
// while anything is owed on the stream, with the stream's byte counters and what it knows of
// the conversation, so that a test drives it with a made-up clock.
//
// For a stream whose loss bound is B:
//   - a side that owes its peer something and has sent it nothing for B/3 sends a HEARTBEAT;
//   - a side that waits on its peer and has heard nothing from it, not one byte, for B declares
//     it lost.
// Nothing happens on a stream where nothing is owed either way: an idle job sends nothing, and
// a peer that is idle is never lost. A wait that this side itself holds up (a reducer that
// stopped reading a member, which can then send nothing) is no wait on the peer.
//
// The counters are sampled at each check, every B/12, so a byte is seen up to one interval
// after it moved, and a quiet is judged at the first check past its length: a heartbeat leaves
// at most B/3 + 2 x B/12 = B/2 after the last byte sent (a heartbeat's own bytes are known at
// once), which leaves half the bound to the network and to both ends' schedulers; and a peer
// is declared lost after between B and B + B/6 of silence, never less. (Timers that fire late
// add their lateness to both.)
//
// A check that comes more than an interval late finds this side held up itself (its thread,
// its process, its machine): the peer's bytes that reached the host meanwhile count anyway, and
// the lateness past one interval does not count as the peer's silence, so a stall of the whole
// machine (the peer's heartbeats stopped with it) never loses a peer. A peer really gone is
// still found: after B of silence counted at checks that ran, later by what this side lost to
// its own stalls.
#pragma once

#include <chrono>
#include <cstdint>

namespace rs::transport {

class Liveness {
 public:
  using Clock = std::chrono::steady_clock;

  // What the owner knows at a check.
  struct Sample {
    uint64_t arrived = 0;   // bytes from the peer so far, read or waiting (Stream::bytesArrived)
    uint64_t sent = 0;      // bytes handed to the transport so far (Stream::bytesSent)
    bool owing = false;     // this side owes the peer something (results, contributions)
    bool waiting = false;   // this side waits for the peer's bytes, and does not hold them up
    bool canSend = false;   // a HEARTBEAT can go out now: no frame is being written
  };
  enum class Verdict { kNothing, kSendHeartbeat, kLost };

  // `bound` > 0.
  explicit Liveness(std::chrono::milliseconds bound);

  std::chrono::milliseconds bound() const { return bound_; }
  // How often the owner checks while active(): a twelfth of the bound (at least 1 ms).
  std::chrono::milliseconds checkInterval() const;
  // The quiet after which an owing side sends a HEARTBEAT: a third of the bound.
  std::chrono::milliseconds heartbeatAfter() const;

  // Something is owed from `now` on, either way, after a spell of nothing: the quiet before
  // `now` counts for neither rule. Cheap (no counters: an owner calls it at the start of every
  // collective); the next check takes the counters as they are then, so bytes that moved
  // before it count as moving at that check.
  void begin(Clock::time_point now);
  // What to do at `now`. kSendHeartbeat counts as a send (the next is due a third of the bound
  // later, whether or not this one went out).
  Verdict check(Clock::time_point now, const Sample& sample);
  // The owner handed the HEARTBEAT to its stream, whose byte count is now `sent`: those bytes
  // are that send, not a later one.
  void heartbeatSent(uint64_t sent) { sent_ = sent; }
  // Whether the last check or begin() found anything owed either way: the owner's timer runs
  // while this holds, and begin() starts it again after it stopped.
  bool active() const { return active_; }
  // How long the peer has been silent as of `now`, counting from the last byte seen or the
  // start of the current wait (the figure a kLost verdict reports).
  std::chrono::milliseconds silence(Clock::time_point now) const;

 private:
  const std::chrono::milliseconds bound_;
  uint64_t arrived_ = 0;
  uint64_t sent_ = 0;
  Clock::time_point heardAt_{};  // the last byte seen, or the start of the wait
  Clock::time_point sentAt_{};   // the last byte sent, or the start of what is owed
  Clock::time_point checkedAt_{};  // the last check, or begin()
  bool active_ = false;
};

}  // namespace rs::transport
