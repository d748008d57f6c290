#include "core/transport/frame_writer.h"

#include <utility>

namespace rs::transport {

FrameWriter::FrameWriter(Hold hold, OnWritten onWritten)
    : hold_(std::move(hold)), onWritten_(std::move(onWritten)) {
  // Reserved once: the gather buffers point into inFlight_'s frames while a write is pending.
  inFlight_.reserve(kMaxFramesPerWrite);
  done_.reserve(kMaxFramesPerWrite);
}

void FrameWriter::enqueue(Frame frame) {
  if (closed_) return;  // its owner goes with it
  queue_.push_back(std::move(frame));
}

void FrameWriter::enqueueFirst(Frame frame) {
  if (closed_) return;
  queue_.push_front(std::move(frame));
}

bool FrameWriter::flush(Stream& stream) {
  if (writing_ || failed_ || closed_ || queue_.empty()) return false;
  size_t buffers = 0;
  while (!queue_.empty() && inFlight_.size() < kMaxFramesPerWrite) {
    const Frame& f = inFlight_.emplace_back(std::move(queue_.front()));
    queue_.pop_front();
    gather_[buffers++] = {f.header.data(), f.header.size()};
    if (f.payload.size != 0) gather_[buffers++] = f.payload;
  }
  writing_ = true;
  writeStartedAt_ = stream.bytesSent();
  // The handler captures only `this`, so std::function keeps it without allocating.
  IoHandler done = [this](const std::error_code& ec, size_t) { onWriteDone(ec); };
  stream.asyncWriteAll(gather_.data(), buffers, hold_ ? hold_(std::move(done)) : std::move(done));
  return true;
}

void FrameWriter::onWriteDone(const std::error_code& error) {
  writing_ = false;
  if (error) failed_ = true;
  // OnWritten may start the next write, which fills inFlight_ again: hand it the frames from
  // done_ instead, and release their owners after it returned.
  inFlight_.swap(done_);
  onWritten_(error, Written(done_.data(), done_.size()));
  done_.clear();
}

void FrameWriter::dropQueued() { queue_.clear(); }

std::string FrameWriter::restOfFrame(const Stream& stream) const {
  if (!writing_) return {};
  uint64_t done = stream.bytesSent() - writeStartedAt_;
  for (const Frame& f : inFlight_) {
    const uint64_t size = f.header.size() + f.payload.size;
    if (done >= size) {
      done -= size;
      continue;
    }
    if (done == 0) return {};  // between two frames of the write
    std::string rest;
    if (done < f.header.size())
      rest.assign(reinterpret_cast<const char*>(f.header.data()) + done, f.header.size() - done);
    const uint64_t from = done > f.header.size() ? done - f.header.size() : 0;
    rest.append(static_cast<const char*>(f.payload.data) + from, f.payload.size - from);
    return rest;
  }
  return {};  // all of it handed over
}

void FrameWriter::close() {
  closed_ = true;
  queue_.clear();
}

FrameWriter::Frame ownedFrame(const wire::HeaderBytes& header, std::string payload,
                              uint32_t tag) {
  auto owned = std::make_shared<std::string>(std::move(payload));
  FrameWriter::Frame frame{header, {owned->data(), owned->size()}, nullptr, tag};
  frame.owner = std::move(owned);
  return frame;
}

}  // namespace rs::transport
