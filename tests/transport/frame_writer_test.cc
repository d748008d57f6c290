// FrameWriter over every transport (test::TcpPair, test::MemoryPair): frames arrive whole and in order, more than
// kMaxFramesPerWrite frames go out in several gather writes, a frame queued first goes in the
// next write, a payload's owner lives until the
// write that carries it has ended, dropped frames are released at once and never sent, and a
// failed or closed stream ends the write in flight through its handler (drain stays exact); a
// stream handed over inside a frame carries, on a Farewell, the frame's rest and a last word,
// and ends without a reset once the peer ended its side.
//
// The writer's io_context runs on the test thread; the peer reads with blocking calls on a
// thread of its own. A 64 MiB payload cannot fit in what a transport holds between the two
// ends (at most 4 MiB to send and 32 MiB to receive over TCP here, 256 KiB in memory), so its
// write stays pending until the peer reads.
#include "core/transport/frame_writer.h"

#include <catch2/catch.hpp>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <algorithm>
#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "core/transport/farewell.h"
#include "core/transport/pending_ops.h"
#include "core/wire/control_frames.h"
#include "tests/support/stream_pair.h"
#include "tests/support/wait_until.h"

namespace rs::transport {
namespace {

using Frame = FrameWriter::Frame;
constexpr uint32_t kBigPayload = 64u << 20;  // the peer's decoder is told to accept it

// A frame whose header names `chunk` and whose `bytes` payload bytes all equal chunk mod 256.
Frame makeFrame(uint64_t chunk, uint32_t bytes, std::weak_ptr<void>* owner = nullptr) {
  auto payload = std::make_shared<std::vector<uint8_t>>(bytes, static_cast<uint8_t>(chunk));
  if (owner) *owner = payload;
  wire::ChunkFields fields;
  fields.chunk = chunk;
  fields.elemCount = bytes;
  fields.dtype = DataType::kInt8;
  const wire::FrameHeader h = wire::reduceHeader(fields);
  return {wire::encodeHeader(h), {payload->data(), payload->size()}, payload,
          static_cast<uint32_t>(chunk)};
}

struct Received {
  uint64_t chunk = 0;
  uint32_t bytes = 0;
  bool intact = false;  // the payload is all chunk mod 256
};

// One connection: the writer's stream on `io`, the peer's end driven by blocking calls.
struct WriterLoopback {
  explicit WriterLoopback(std::unique_ptr<test::StreamPair> made)
      : pair(std::move(made)), io(pair->io), stream(pair->local.get()) {}
  std::unique_ptr<test::StreamPair> pair;
  asio::io_context& io;
  Stream* stream;  // the pair's local end
  std::vector<Received> received;
  std::thread reader;
  std::atomic<bool> readDone{false};  // the reader thread has stopped reading

  ~WriterLoopback() { joinReader(); }

  // Runs the writer's handlers on this thread until `done` holds (the deadline only turns a
  // hang into a failure).
  bool runUntil(const std::function<bool()>& done) {
    const auto end = std::chrono::steady_clock::now() + test::kStateDeadline;
    while (!done() && std::chrono::steady_clock::now() < end)
      io.run_one_for(std::chrono::milliseconds(100));
    return done();
  }

  // The peer reads frames on its own thread until end of stream or `max` frames. Catch2's
  // assertions are not thread-safe, so it only records; the test checks after joinReader().
  void startReading(size_t max) {
    reader = std::thread([this, max] {
      struct Done {
        std::atomic<bool>& flag;
        ~Done() { flag = true; }
      } done{readDone};
      std::vector<uint8_t> payload;
      while (received.size() < max) {
        wire::HeaderBytes bytes;
        wire::FrameHeader h;
        std::error_code ec;
        ec = pair->peerReadExactly(bytes.data(), bytes.size());
        if (ec || !wire::decodeHeader(bytes.data(), bytes.size(), {.maxPayloadBytes = kBigPayload},
                                      &h)
                       .isOk())
          return;
        payload.resize(h.payloadLength);
        ec = pair->peerReadExactly(payload.data(), payload.size());
        if (ec) return;
        const auto want = static_cast<uint8_t>(h.chunk);
        received.push_back({h.chunk, h.payloadLength,
                            std::all_of(payload.begin(), payload.end(),
                                        [want](uint8_t b) { return b == want; })});
      }
    });
  }
  void joinReader() {
    if (reader.joinable()) reader.join();
  }
};

// How Connection counts: every write is one pending operation until its handler has run.
FrameWriter::Hold countedBy(PendingOps& ops) {
  return [&ops](IoHandler h) -> IoHandler {
    ops.add();
    return [&ops, h = std::move(h)](const std::error_code& ec, size_t n) {
      h(ec, n);
      ops.done();
    };
  };
}

// What OnWritten saw, write by write.
struct Completions {
  std::vector<size_t> batches;  // frames per write
  std::vector<std::error_code> errors;
  size_t frames = 0;
};

}  // namespace

TEMPLATE_TEST_CASE("frame writer: frames arrive whole and in order, at most 16 per gather write",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  WriterLoopback p(std::make_unique<TestType>());
  Completions seen;
  int holds = 0;
  FrameWriter writer(
      [&](IoHandler h) {
        ++holds;
        return h;
      },
      [&](const std::error_code& ec, FrameWriter::Written frames) {
        seen.batches.push_back(frames.size());
        seen.errors.push_back(ec);
        seen.frames += frames.size();
        if (!ec) writer.flush(*p.stream);
      });

  constexpr uint64_t kFrames = 40;
  for (uint64_t i = 0; i < kFrames; ++i) writer.enqueue(makeFrame(i, 1000 + 37 * i));
  CHECK(writer.queued() == kFrames);
  CHECK_FALSE(writer.writing());  // enqueue writes nothing by itself
  p.startReading(kFrames);
  REQUIRE(writer.flush(*p.stream));
  CHECK(writer.writing());
  CHECK(writer.queued() == kFrames - FrameWriter::kMaxFramesPerWrite);
  REQUIRE(p.runUntil([&] { return seen.frames == kFrames; }));
  p.joinReader();

  CHECK(seen.batches == std::vector<size_t>{16, 16, 8});
  CHECK(holds == 3);  // once per write
  for (const auto& ec : seen.errors) CHECK(!ec);
  REQUIRE(p.received.size() == kFrames);
  for (uint64_t i = 0; i < kFrames; ++i) {
    CHECK(p.received[i].chunk == i);
    CHECK(p.received[i].bytes == 1000 + 37 * i);
    CHECK(p.received[i].intact);
  }
  CHECK_FALSE(writer.failed());
  CHECK(writer.queued() == 0);
}

TEMPLATE_TEST_CASE("frame writer: a payload's owner is released only after its write completed",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  WriterLoopback p(std::make_unique<TestType>());
  Completions seen;
  std::weak_ptr<void> big, small;
  bool ownersHeldInCallback = false;
  FrameWriter writer(nullptr, [&](const std::error_code& ec, FrameWriter::Written frames) {
    seen.batches.push_back(frames.size());
    seen.errors.push_back(ec);
    seen.frames += frames.size();
    if (frames.size() == 1 && frames[0].tag == 1)
      ownersHeldInCallback = frames[0].owner != nullptr && !big.expired();
    if (!ec) writer.flush(*p.stream);
  });

  writer.enqueue(makeFrame(1, kBigPayload, &big));  // the test keeps no reference of its own
  REQUIRE(writer.flush(*p.stream));
  writer.enqueue(makeFrame(2, 100, &small));
  // The write is stuck until the peer reads: nothing completed, the owners live, and a second
  // write is not started while the first is in flight.
  while (p.io.poll() > 0) {
  }
  CHECK(seen.frames == 0);
  CHECK(writer.writing());
  CHECK_FALSE(big.expired());
  CHECK_FALSE(small.expired());
  CHECK_FALSE(writer.flush(*p.stream));
  CHECK(writer.queued() == 1);

  p.startReading(2);
  REQUIRE(p.runUntil([&] { return seen.frames == 2; }));
  p.joinReader();
  CHECK(ownersHeldInCallback);
  CHECK(seen.batches == std::vector<size_t>{1, 1});
  CHECK(big.expired());
  CHECK(small.expired());
  REQUIRE(p.received.size() == 2);
  CHECK((p.received[0].chunk == 1 && p.received[0].bytes == kBigPayload && p.received[0].intact));
  CHECK((p.received[1].chunk == 2 && p.received[1].intact));
}

TEMPLATE_TEST_CASE("frame writer: a frame queued first goes in the next write, ahead of the "
                   "queued ones",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  WriterLoopback p(std::make_unique<TestType>());
  Completions seen;
  FrameWriter writer(nullptr, [&](const std::error_code& ec, FrameWriter::Written frames) {
    seen.batches.push_back(frames.size());
    seen.frames += frames.size();
    if (!ec) writer.flush(*p.stream);
  });
  // A write in flight (stuck until the peer reads), 20 frames behind it, then one queued first.
  writer.enqueue(makeFrame(1, kBigPayload));
  REQUIRE(writer.flush(*p.stream));
  for (uint64_t i = 2; i < 22; ++i) writer.enqueue(makeFrame(i, 100));
  writer.enqueueFirst(makeFrame(99, 10));
  CHECK(writer.queued() == 21);
  p.startReading(22);
  REQUIRE(p.runUntil([&] { return seen.frames == 22; }));
  p.joinReader();
  CHECK(seen.batches == std::vector<size_t>{1, 16, 5});
  REQUIRE(p.received.size() == 22);
  CHECK(p.received[0].chunk == 1);
  CHECK(p.received[1].chunk == 99);  // the write after the one in flight starts with it
  for (uint64_t i = 2; i < 22; ++i) CHECK(p.received[i].chunk == i);
}

TEMPLATE_TEST_CASE("frame writer: dropped frames are released at once and never sent",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  WriterLoopback p(std::make_unique<TestType>());
  Completions seen;
  FrameWriter writer(nullptr, [&](const std::error_code& ec, FrameWriter::Written frames) {
    seen.errors.push_back(ec);
    seen.frames += frames.size();
    if (!ec) writer.flush(*p.stream);
  });
  std::weak_ptr<void> inFlight, queued1, queued2, after;
  writer.enqueue(makeFrame(1, kBigPayload, &inFlight));
  REQUIRE(writer.flush(*p.stream));
  writer.enqueue(makeFrame(2, 100, &queued1));
  writer.enqueue(makeFrame(3, 100, &queued2));

  writer.dropQueued();
  CHECK(writer.queued() == 0);
  CHECK(queued1.expired());
  CHECK(queued2.expired());
  CHECK_FALSE(inFlight.expired());  // the write in flight goes on
  writer.enqueue(makeFrame(4, 100, &after));  // dropping is not closing: later frames go out

  p.startReading(3);
  REQUIRE(p.runUntil([&] { return seen.frames == 2; }));
  p.stream->shutdownSend();  // the peer reads end-of-stream after what was written
  p.joinReader();
  REQUIRE(p.received.size() == 2);
  CHECK((p.received[0].chunk == 1 && p.received[0].bytes == kBigPayload && p.received[0].intact));
  CHECK((p.received[1].chunk == 4 && p.received[1].intact));
  CHECK(inFlight.expired());
  CHECK(after.expired());
}

TEMPLATE_TEST_CASE("frame writer: a failed write reports its frames, releases them and stops the "
                   "writer",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  WriterLoopback p(std::make_unique<TestType>());
  Completions seen;
  bool ownerHeldInCallback = false;
  std::weak_ptr<void> big, queued;
  FrameWriter writer(nullptr, [&](const std::error_code& ec, FrameWriter::Written frames) {
    seen.batches.push_back(frames.size());
    seen.errors.push_back(ec);
    ownerHeldInCallback = !big.expired();
  });
  writer.enqueue(makeFrame(1, kBigPayload, &big));
  REQUIRE(writer.flush(*p.stream));
  writer.enqueue(makeFrame(2, 100, &queued));
  while (p.io.poll() > 0) {
  }
  // The peer goes away with unread bytes: it answers with a reset.
  p.pair->peerClose();
  REQUIRE(p.runUntil([&] { return !seen.errors.empty(); }));

  // A broken pipe or a reset, whichever the kernel reports first.
  CHECK(static_cast<bool>(seen.errors[0]));
  CHECK(seen.batches == std::vector<size_t>{1});
  CHECK(ownerHeldInCallback);
  CHECK(big.expired());
  CHECK(writer.failed());
  CHECK_FALSE(writer.writing());
  // No write after a failure; the queued frame waits until the owner drops or closes.
  CHECK_FALSE(writer.flush(*p.stream));
  CHECK(writer.queued() == 1);
  CHECK_FALSE(queued.expired());
  writer.close();
  CHECK(queued.expired());
  CHECK(seen.errors.size() == 1);
}

TEMPLATE_TEST_CASE("frame writer: closing ends the write in flight through its handler, drain "
                   "stays exact",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  WriterLoopback p(std::make_unique<TestType>());
  PendingOps ops;
  Completions seen;
  std::weak_ptr<void> big, queued, late;
  FrameWriter writer(
      countedBy(ops),
      [&](const std::error_code& ec, FrameWriter::Written frames) {
        seen.batches.push_back(frames.size());
        seen.errors.push_back(ec);
        if (!ec) writer.flush(*p.stream);
      });
  writer.enqueue(makeFrame(1, kBigPayload, &big));
  REQUIRE(writer.flush(*p.stream));
  writer.enqueue(makeFrame(2, 100, &queued));
  CHECK(ops.count() == 1);

  writer.close();
  p.stream->close();
  CHECK(queued.expired());  // dropped at close
  CHECK_FALSE(big.expired());  // the stream may still read from it until the handler ran
  writer.enqueue(makeFrame(3, 100, &late));
  CHECK(late.expired());  // nothing is taken after close
  CHECK(writer.queued() == 0);

  REQUIRE(p.runUntil([&] { return ops.count() == 0; }));
  REQUIRE(seen.errors.size() == 1);
  // operation_aborted, or bad_descriptor when the stream's composed write was between two
  // system calls: an error either way.
  CHECK(static_cast<bool>(seen.errors[0]));
  CHECK(seen.batches == std::vector<size_t>{1});
  CHECK(big.expired());
  CHECK_FALSE(writer.flush(*p.stream));
}

TEMPLATE_TEST_CASE("frame writer: a stream handed over inside a frame carries the frame's rest "
                   "and a last word on a Farewell, which ends without a reset once the peer "
                   "ended its side",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  WriterLoopback p(std::make_unique<TestType>());
  PendingOps ops;
  FrameWriter writer(
      countedBy(ops),
      [](const std::error_code&, FrameWriter::Written) {});
  writer.enqueue(makeFrame(1, kBigPayload));
  REQUIRE(writer.flush(*p.stream));
  // The kernel took what its buffers hold of the 64 MiB frame; the peer reads nothing yet.
  const uint64_t sent = p.stream->bytesSent();
  REQUIRE(sent > 0);
  REQUIRE(sent < wire::kHeaderSize + kBigPayload);
  std::string bytes = writer.restOfFrame(*p.stream);
  CHECK(bytes.size() == wire::kHeaderSize + kBigPayload - sent);
  const Frame word = makeFrame(7, 100);
  bytes.append(reinterpret_cast<const char*>(word.header.data()), word.header.size());
  bytes.append(static_cast<const char*>(word.payload.data), word.payload.size);
  writer.close();
  Result<std::unique_ptr<Stream>> handed = p.stream->handOver();
  REQUIRE(handed.isOk());
  p.stream->close();  // the old stream only: the connection goes on
  Farewell::send(p.io, std::move(*handed), std::move(bytes), test::kStateDeadline);

  p.startReading(2);
  REQUIRE(p.runUntil([&] { return p.readDone.load(); }));
  p.joinReader();
  // The peer ends its side; the farewell, which read everything, closes with a FIN.
  p.pair->peerShutdownSend();
  std::error_code end;
  std::atomic<bool> ended{false};
  std::thread waiter([&] {
    uint8_t one = 0;
    p.pair->peerReadSome(&one, 1, end);
    ended = true;
  });
  const bool closed = p.runUntil([&] { return ended.load(); });
  if (!closed) p.pair->peerClose();
  waiter.join();
  REQUIRE(closed);
  REQUIRE(p.received.size() == 2);
  CHECK(p.received[0].chunk == 1);
  CHECK(p.received[0].bytes == kBigPayload);
  CHECK(p.received[0].intact);
  CHECK(p.received[1].chunk == 7);
  CHECK(p.received[1].bytes == 100);
  CHECK(p.received[1].intact);
  CHECK(end == asio::error::eof);  // not a reset
  CHECK(ops.count() == 0);         // the old stream's write ended through its handler
}

}  // namespace rs::transport
