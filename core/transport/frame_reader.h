// One stream's incoming frames: a header, then its payload, read through a small buffer, so
// that a small frame costs one read call instead of a header read and a payload read.
//
// A header read also asks for up to kReadAheadBytes more. A small frame then arrives whole in
// that one call, and the call comes back short of what it asked for, which tells Asio that the
// socket is empty: the next read waits in epoll instead of first trying a receive that finds
// nothing. Bytes read ahead are copied once more on their way to where they belong, so a
// header read asks for them only while frames are small (the last frame's payload at most
// kReadAheadBytes); a stream of large frames reads each header with at most one header's worth
// more, so that a header-only frame (RECEIVED, COMMIT) and the header behind it come in one
// call, and each payload straight into its destination (but those few bytes). A header-only
// frame says nothing of the sizes around it: the last frame with a payload stays the guide.
//
// The reducer's sessions and the client's connections read through one each. Everything runs
// on the stream's io thread; the owner keeps the reader (and the stream) alive until its
// handlers have run, as it does for the stream's.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "core/transport/stream.h"
#include "core/wire/frame.h"

namespace rs::transport {

class FrameReader {
 public:
  // About a syscall's worth of copying (a few microseconds); covers the chunks of small
  // all-reduces, which the client cuts no finer than 16 KiB.
  static constexpr size_t kReadAheadBytes = 16 << 10;
  // A header-only frame, a header, and a small frame's payload.
  static constexpr size_t kBufferBytes = 2 * wire::kHeaderSize + kReadAheadBytes;

  FrameReader();
  FrameReader(const FrameReader&) = delete;
  FrameReader& operator=(const FrameReader&) = delete;

  // Calls `handler` once the next frame's header is in header(). A header that was already
  // read ahead completes through a post, never inline, so that buffered frames cannot recurse.
  // End of stream before a whole header fails it with the stream's kPeerClosed error.
  void readHeader(Stream& stream, IoHandler handler);
  // When a whole header was read ahead: takes it now, as readHeader would, and returns true,
  // for an owner that goes on at once after a header-only frame (the post saved is a round of
  // its io loop); false, and nothing taken, otherwise.
  bool takeBufferedHeader();
  // The last header read; valid from readHeader's completion until the next readHeader.
  const wire::HeaderBytes& header() const { return header_; }

  // Payload bytes already read ahead, and a synchronous take of up to `size` of them (the
  // owner's inline path, where running its handler now is safe). Returns the bytes copied.
  size_t buffered() const { return end_ - begin_; }
  size_t take(void* data, size_t size);

  // Reads exactly `size` payload bytes into `data`: what was read ahead is copied, the rest
  // read from the stream straight into `data`. Never completes inline.
  void readExactly(Stream& stream, void* data, size_t size, IoHandler handler);
  // Reads exactly `size` payload bytes into `data` as readExactly does, but only in whole units
  // of `unit` bytes (1..kMaxUnitBytes; `size` a multiple of it): no unit of `data` is ever
  // part written, also when the stream ends or fails inside one. A unit that arrives in pieces
  // is gathered here and copied in once whole; each stream read into `data` asks for no more
  // than the whole units queued (Stream::bytesQueued), so it cannot stop inside one. On an
  // error the handler's count is the whole units written, and the bytes of a unit begun are
  // dropped. For a result read over the caller's input (in place: proto/FAILOVER.md, "Whole
  // elements only"), where half an element would be neither result nor input. Never completes
  // inline.
  static constexpr size_t kMaxUnitBytes = 8;
  void readWhole(Stream& stream, void* data, size_t size, size_t unit, IoHandler handler);
  // Reads at least one and at most `size` payload bytes into `data`: what was read ahead if
  // anything was (through a post), else a stream read straight into `data` with `wakeAt` as in
  // Stream::asyncReadSome.
  void readSome(Stream& stream, void* data, size_t size, IoHandler handler, size_t wakeAt = 1);

  // Drops what was read ahead (input being drained and thrown away).
  void discard() { begin_ = end_ = 0; }

 private:
  void fillHeader(Stream& stream, IoHandler handler);
  void takeHeader();
  void consume(size_t bytes);  // the front `bytes` of what is buffered have been taken
  // readWhole's steps: on from where it is, until it needs the stream or is done.
  void continueWhole(Stream& stream);
  void finishWhole(Stream& stream, const std::error_code& ec);
  // `n` more bytes of the unit being gathered are in split_.
  void gathered(size_t n);

  std::vector<std::byte> buffer_;  // [begin_, end_) read and not yet taken
  size_t begin_ = 0;
  size_t end_ = 0;
  wire::HeaderBytes header_{};
  size_t payloadTaken_ = 0;  // payload bytes handed out since the last header
  size_t lastPayload_ = 0;   // the previous frame's (0 before the first: handshakes are small)

  // The readWhole in progress: where it writes, how far (whole units), and the unit it has
  // only part of (split_, splitBytes_ of it).
  struct WholeRead {
    std::byte* data = nullptr;
    size_t size = 0;
    size_t unit = 1;
    size_t done = 0;
    bool woke = false;  // the stream said a read would not wait: read, do not wait again
    IoHandler handler;
  };
  WholeRead whole_;
  std::array<std::byte, kMaxUnitBytes> split_{};
  size_t splitBytes_ = 0;
};

}  // namespace rs::transport
