#include "core/transport/frame_reader.h"

#include <algorithm>
#include <cstring>

#include <asio/post.hpp>

namespace rs::transport {

FrameReader::FrameReader() : buffer_(kBufferBytes) {}

void FrameReader::readHeader(Stream& stream, IoHandler handler) {
  if (takeBufferedHeader()) {
    asio::post(stream.executor(), [h = std::move(handler)] { h({}, wire::kHeaderSize); });
    return;
  }
  fillHeader(stream, std::move(handler));
}

bool FrameReader::takeBufferedHeader() {
  if (payloadTaken_ != 0) lastPayload_ = payloadTaken_;  // a header-only frame tells nothing
  payloadTaken_ = 0;
  if (buffered() < wire::kHeaderSize) return false;
  takeHeader();
  return true;
}

void FrameReader::fillHeader(Stream& stream, IoHandler handler) {
  // Less than a header is buffered: move it to the front, so the read has the whole room.
  if (begin_ != 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, buffered());
    end_ -= begin_;
    begin_ = 0;
  }
  const size_t want =
      lastPayload_ <= kReadAheadBytes ? buffer_.size() : 2 * wire::kHeaderSize;
  stream.asyncReadSome(
      buffer_.data() + end_, want - end_,
      [this, &stream, h = std::move(handler)](const std::error_code& ec, size_t n) mutable {
        end_ += n;
        if (ec) {
          h(ec, 0);
          return;
        }
        if (end_ < wire::kHeaderSize) {
          fillHeader(stream, std::move(h));
          return;
        }
        takeHeader();
        h({}, wire::kHeaderSize);
      },
      wire::kHeaderSize - end_);  // wake for the header; what else has come by then comes too
}

void FrameReader::takeHeader() {
  std::memcpy(header_.data(), buffer_.data() + begin_, wire::kHeaderSize);
  consume(wire::kHeaderSize);
}

size_t FrameReader::take(void* data, size_t size) {
  const size_t n = std::min(size, buffered());
  if (n == 0) return 0;
  std::memcpy(data, buffer_.data() + begin_, n);
  consume(n);
  payloadTaken_ += n;
  return n;
}

void FrameReader::consume(size_t bytes) {
  begin_ += bytes;
  if (begin_ == end_) begin_ = end_ = 0;  // empty: the next read has the whole room
}

void FrameReader::readExactly(Stream& stream, void* data, size_t size, IoHandler handler) {
  const size_t copied = take(data, size);
  if (copied == size) {
    asio::post(stream.executor(), [h = std::move(handler), size] { h({}, size); });
    return;
  }
  payloadTaken_ += size - copied;  // counted now: the read either brings it or fails the frame
  stream.asyncReadExactly(static_cast<std::byte*>(data) + copied, size - copied,
                          [copied, h = std::move(handler)](const std::error_code& ec,
                                                           size_t n) { h(ec, copied + n); });
}

void FrameReader::readWhole(Stream& stream, void* data, size_t size, size_t unit,
                            IoHandler handler) {
  whole_ = {static_cast<std::byte*>(data), size, unit, 0, false, std::move(handler)};
  splitBytes_ = 0;
  continueWhole(stream);
}

void FrameReader::gathered(size_t n) {
  splitBytes_ += n;
  if (splitBytes_ < whole_.unit) return;
  std::memcpy(whole_.data + whole_.done, split_.data(), whole_.unit);
  whole_.done += whole_.unit;
  splitBytes_ = 0;
}

void FrameReader::continueWhole(Stream& stream) {
  WholeRead& w = whole_;
  // What was read ahead: whole units straight in, the front of a unit into split_.
  while (w.done < w.size && buffered() != 0) {
    if (splitBytes_ == 0 && buffered() >= w.unit) {
      w.done += take(w.data + w.done, std::min(buffered(), w.size - w.done) / w.unit * w.unit);
    } else {
      gathered(take(split_.data() + splitBytes_, w.unit - splitBytes_));
    }
  }
  if (w.done == w.size) {
    asio::post(stream.executor(), [this, &stream] { finishWhole(stream, {}); });
    return;
  }
  const size_t left = w.size - w.done;
  const uint64_t queued = stream.bytesQueued();
  if (splitBytes_ == 0 && queued >= w.unit) {
    // At most what is queued, so the read brings all of it and ends on a unit's edge.
    const size_t want = static_cast<size_t>(std::min<uint64_t>(queued, left)) / w.unit * w.unit;
    stream.asyncReadSome(w.data + w.done, want, [this, &stream](const std::error_code& ec,
                                                                size_t n) {
      payloadTaken_ += n;
      // n is whole units: the read asked for no more than was queued. Were it ever not, the
      // stream's bytes would still be counted right (the tail gathered from where it landed).
      const size_t tail = n % whole_.unit;
      whole_.done += n - tail;
      if (tail != 0) {
        std::memcpy(split_.data(), whole_.data + whole_.done, tail);
        splitBytes_ = tail;
      }
      whole_.woke = false;
      if (ec) return finishWhole(stream, ec);
      continueWhole(stream);
    });
    return;
  }
  if (queued == 0 && !w.woke) {
    // Nothing yet: wait, rather than read a unit's worth into split_ at every arrival.
    stream.asyncWaitReadable(
        [this, &stream](const std::error_code& ec) {
          if (ec) return finishWhole(stream, ec);
          whole_.woke = true;
          continueWhole(stream);
        },
        left);
    return;
  }
  // Less than a unit queued (or a wake with nothing queued: the end of the stream, or a
  // failure, which this read then reports): into split_, never into `data`.
  stream.asyncReadSome(split_.data() + splitBytes_, w.unit - splitBytes_,
                       [this, &stream](const std::error_code& ec, size_t n) {
                         payloadTaken_ += n;
                         whole_.woke = false;
                         if (ec) return finishWhole(stream, ec);
                         gathered(n);
                         continueWhole(stream);
                       });
}

void FrameReader::finishWhole(Stream&, const std::error_code& ec) {
  IoHandler handler = std::move(whole_.handler);
  const size_t done = whole_.done;
  whole_ = {};
  splitBytes_ = 0;  // a unit begun and never finished is dropped
  handler(ec, done);
}

void FrameReader::readSome(Stream& stream, void* data, size_t size, IoHandler handler,
                           size_t wakeAt) {
  if (buffered() != 0 && size != 0) {
    const size_t n = take(data, size);
    asio::post(stream.executor(), [h = std::move(handler), n] { h({}, n); });
    return;
  }
  stream.asyncReadSome(
      data, size,
      [this, h = std::move(handler)](const std::error_code& ec, size_t n) {
        payloadTaken_ += n;
        h(ec, n);
      },
      wakeAt);
}

}  // namespace rs::transport
