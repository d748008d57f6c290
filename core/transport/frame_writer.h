// One stream's outgoing frames: a FIFO written as gather writes of up to kMaxFramesPerWrite
// frames (header, then payload), with at most one write in flight. The reducer's sessions
// send RESULT parts through it, the client's connections REDUCE frames.
//
// Nothing is copied: a frame's payload stays where its sender put it (a slot's result, the
// caller's buffer), and the frame holds `owner` until the write that carries it has ended or
// the frame was dropped, so the bytes outlive the write. Everything runs on the stream's io
// thread. The writer starts a write only when asked (flush), so that the owner decides when
// frames may go out (the client holds its REDUCE frames back until the handshake is done).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "core/transport/stream.h"
#include "core/wire/frame.h"

namespace rs::transport {

class FrameWriter {
 public:
  // Two gather buffers a frame; more frames a write saves little and delays the first.
  static constexpr size_t kMaxFramesPerWrite = 16;

  struct Frame {
    wire::HeaderBytes header{};
    ConstBuffer payload{nullptr, 0};  // may be empty
    // Keeps the payload valid until written. May be empty where something else guarantees
    // that (the client's caller keeps its buffer until the connection has drained).
    std::shared_ptr<void> owner;
    uint32_t tag = 0;  // the sender's note, handed back with the frame; the writer ignores it
  };
  // The frames one write carried, in order, their owners still held.
  using Written = std::span<const Frame>;
  // Wraps each write's completion before it goes to the stream: the owner keeps itself alive
  // (and counts the write as pending, where it counts its operations) until it has run.
  using Hold = std::function<IoHandler(IoHandler)>;
  // A write ended. On error the frames may be partly written and the writer starts no more
  // writes; queued frames stay until dropQueued() or close(). Runs for every write, also after
  // the stream was closed (with an error). Owners are released after it returns.
  using OnWritten = std::function<void(const std::error_code& error, Written frames)>;

  // `hold` may be empty (no wrapping). The writer must outlive any write in flight.
  FrameWriter(Hold hold, OnWritten onWritten);
  FrameWriter(const FrameWriter&) = delete;
  FrameWriter& operator=(const FrameWriter&) = delete;

  // Queues a frame (after close(), drops it). Writes nothing by itself.
  void enqueue(Frame frame);
  // Queues a frame ahead of every queued one, so that it goes in the next write: a small
  // control frame that must not wait behind the data queued before it (the reducer's COMMIT).
  // Only for a sender that does not count where its queued frames start in the stream.
  void enqueueFirst(Frame frame);
  // Starts one gather write of the oldest queued frames, unless a write is in flight, nothing
  // is queued, a write failed or the writer was closed. True when it started one.
  bool flush(Stream& stream);
  // Drops the frames not yet handed to the stream (an abort); a write in flight goes on.
  void dropQueued();
  // Drops the queued frames and writes nothing more. The write in flight, if any, still ends
  // through OnWritten (with an error once the owner closed the stream).
  void close();

  bool writing() const { return writing_; }
  size_t queued() const { return queue_.size(); }
  // The bytes of the frame that the write in flight on `stream` is in the middle of, from the
  // first not yet handed to the stream to the frame's end (empty between frames): a copy, for
  // a last word that must follow whole frames after the owner let go of its buffers
  // (farewell.h).
  std::string restOfFrame(const Stream& stream) const;
  bool failed() const { return failed_; }

 private:
  void onWriteDone(const std::error_code& error);

  Hold hold_;
  OnWritten onWritten_;
  std::deque<Frame> queue_;
  std::vector<Frame> inFlight_;  // the write in flight; capacity kMaxFramesPerWrite, never moves
  std::vector<Frame> done_;      // the write that just ended, while OnWritten runs
  std::array<ConstBuffer, 2 * kMaxFramesPerWrite> gather_{};
  uint64_t writeStartedAt_ = 0;  // the stream's bytesSent() when the write in flight started
  bool writing_ = false;
  bool failed_ = false;
  bool closed_ = false;
};

// A frame that owns its small payload (HELLO, HELLO_ACK, ERROR, ABORT): one allocation.
FrameWriter::Frame ownedFrame(const wire::HeaderBytes& header, std::string payload,
                              uint32_t tag = 0);

}  // namespace rs::transport
