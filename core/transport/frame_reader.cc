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
