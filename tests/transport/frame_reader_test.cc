// FrameReader over every transport (test::TcpPair, test::MemoryPair): frames of every size, cut anywhere by the
// sender, arrive whole and in order through every way of taking a payload; small frames come
// many to a read call and a large frame's payload is never read ahead; a header already read
// ahead completes through a post, never inline; end of stream fails a header read with EOF,
// between frames or inside a header.
//
// The reader's io_context runs on the test thread; the peer writes with blocking calls.
// A Stream decorator counts the reads the reader asks of the stream.
#include "core/transport/frame_reader.h"

#include <catch2/catch.hpp>

#include <asio/error.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <thread>
#include <numeric>
#include <vector>

#include "tests/support/stream_pair.h"
#include "tests/support/wait_until.h"

namespace rs::transport {
namespace {

// Forwards to a real stream and records the size of every read asked of it.
class CountingStream final : public Stream {
 public:
  explicit CountingStream(std::unique_ptr<Stream> inner) : inner_(std::move(inner)) {}
  void asyncReadExactly(void* data, size_t size, IoHandler handler) override {
    reads.push_back(size);
    inner_->asyncReadExactly(data, size, std::move(handler));
  }
  void asyncReadSome(void* data, size_t size, IoHandler handler, size_t wakeAt) override {
    reads.push_back(size);
    inner_->asyncReadSome(data, size, std::move(handler), wakeAt);
  }
  void asyncWriteAll(const ConstBuffer* b, size_t n, IoHandler h) override {
    inner_->asyncWriteAll(b, n, std::move(h));
  }
  bool trySendNow(const void* data, size_t size) override { return inner_->trySendNow(data, size); }
  uint64_t bytesSent() const override { return inner_->bytesSent(); }
  uint64_t bytesArrived() const override { return inner_->bytesArrived(); }
  uint64_t bytesQueued() const override { return inner_->bytesQueued(); }
  void asyncWaitReadable(WaitHandler handler, size_t wakeAt) override {
    waits.push_back(wakeAt);
    inner_->asyncWaitReadable(std::move(handler), wakeAt);
  }
  bool watchPeerGone(WaitHandler handler) override { return inner_->watchPeerGone(std::move(handler)); }
  void stopWatchingPeer() override { inner_->stopWatchingPeer(); }
  Result<std::unique_ptr<Stream>> moveTo(asio::io_context& target) override {
    return inner_->moveTo(target);
  }
  void shutdownSend() override { inner_->shutdownSend(); }
  void close() override { inner_->close(); }
  bool isOpen() const override { return inner_->isOpen(); }
  const Endpoint& peer() const override { return inner_->peer(); }
  const std::string& peerName() const override { return inner_->peerName(); }
  asio::any_io_executor executor() override { return inner_->executor(); }

  std::vector<size_t> reads;  // bytes asked for, call by call
  std::vector<size_t> waits;  // asyncWaitReadable's wakeAt, call by call

 private:
  std::unique_ptr<Stream> inner_;
};

// Frame `chunk`: a header that the test reads itself (the reader treats headers as opaque
// bytes: the chunk and the payload's length, then a fill), and `bytes` payload bytes
// (chunk * 7 + k) mod 251.
struct TestHeader {
  uint64_t chunk;
  uint64_t bytes;
};

std::vector<uint8_t> frameBytes(uint64_t chunk, uint32_t bytes) {
  std::vector<uint8_t> out(wire::kHeaderSize, 0xA5);
  const TestHeader h{chunk, bytes};
  std::memcpy(out.data(), &h, sizeof(h));
  for (uint32_t k = 0; k < bytes; ++k) out.push_back(static_cast<uint8_t>((chunk * 7 + k) % 251));
  return out;
}

bool payloadIntact(uint64_t chunk, const std::vector<uint8_t>& payload) {
  for (size_t k = 0; k < payload.size(); ++k)
    if (payload[k] != static_cast<uint8_t>((chunk * 7 + k) % 251)) return false;
  return true;
}

// The reader's end of a pair, wrapped in a CountingStream; the peer writes.
struct ReaderLoopback {
  explicit ReaderLoopback(std::unique_ptr<test::StreamPair> made)
      : pair(std::move(made)), io(pair->io) {
    auto counting = std::make_unique<CountingStream>(std::move(pair->local));
    stream = counting.get();
    owned = std::move(counting);
  }
  std::unique_ptr<test::StreamPair> pair;
  asio::io_context& io;
  CountingStream* stream = nullptr;  // owned by `owned`
  std::unique_ptr<Stream> owned;

  // From any thread; a failed write shows as frames that never come.
  void send(const std::vector<uint8_t>& bytes) { (void)pair->peerWrite(bytes); }
  // Waits until the reader's stream holds `bytes` unread (a state: every byte has arrived).
  bool arrived(size_t bytes) {
    return test::waitUntil([&] { return stream->bytesQueued() >= bytes; });
  }
  bool runUntil(const std::function<bool()>& done) {
    const auto end = std::chrono::steady_clock::now() + test::kStateDeadline;
    while (!done() && std::chrono::steady_clock::now() < end)
      io.run_one_for(std::chrono::milliseconds(100));
    return done();
  }
};

enum class Take { kExactly, kSome, kTakeThenExactly, kWhole };

// The largest element size (8, 4, 2 or 1 bytes) that divides `bytes`: readWhole's unit.
size_t unitOf(size_t bytes) {
  for (size_t unit : {size_t{8}, size_t{4}, size_t{2}})
    if (bytes % unit == 0) return unit;
  return 1;
}

// Reads `count` frames, taking each payload the given way, and checks each one.
struct FrameLoop {
  FrameLoop(ReaderLoopback& loopback, FrameReader& frameReader, Take take, size_t frames)
      : p(loopback), reader(frameReader), how(take), count(frames) {}

  ReaderLoopback& p;
  FrameReader& reader;
  Take how;
  size_t count;
  std::vector<uint64_t> chunks;
  std::vector<uint32_t> sizes;
  bool allIntact = true;
  std::error_code error;
  std::vector<uint8_t> payload;
  TestHeader h{};
  size_t got = 0;

  void next() {
    if (chunks.size() == count) return;
    reader.readHeader(*p.stream, [this](const std::error_code& ec, size_t) {
      if (ec) {
        error = ec;
        return;
      }
      std::memcpy(&h, reader.header().data(), sizeof(h));
      payload.assign(h.bytes, 0);
      got = 0;
      readPayload();
    });
  }
  void readPayload() {
    if (got == payload.size()) return finish();
    auto done = [this](const std::error_code& ec, size_t n) {
      if (ec) {
        error = ec;
        return;
      }
      got += n;
      readPayload();
    };
    switch (how) {
      case Take::kExactly:
        return reader.readExactly(*p.stream, payload.data(), payload.size(), done);
      case Take::kSome:
        return reader.readSome(*p.stream, payload.data() + got, payload.size() - got, done);
      case Take::kTakeThenExactly:
        got += reader.take(payload.data(), payload.size());
        if (got == payload.size()) return finish();
        return reader.readExactly(*p.stream, payload.data() + got, payload.size() - got, done);
      case Take::kWhole:
        return reader.readWhole(*p.stream, payload.data(), payload.size(),
                                unitOf(payload.size()), done);
    }
  }
  void finish() {
    chunks.push_back(h.chunk);
    sizes.push_back(static_cast<uint32_t>(h.bytes));
    allIntact = allIntact && payloadIntact(h.chunk, payload);
    next();
  }
};

const std::vector<uint32_t> kSizes = {0,     1,     71,         72,         8192,     16384,
                                      16385, 16311, 100 << 10, 1 << 20,    3,        16384 - 72,
                                      5000,  0,     2 << 20,   1,          33 << 10, 12};

}  // namespace

TEMPLATE_TEST_CASE("frame reader: frames of every size, cut anywhere, arrive whole and in order",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  const Take how = GENERATE(Take::kExactly, Take::kSome, Take::kTakeThenExactly, Take::kWhole);
  const size_t cut = GENERATE(size_t{0}, size_t{37}, size_t{4096});  // 0: each frame one write
  ReaderLoopback p(std::make_unique<TestType>());
  FrameReader reader;
  FrameLoop loop(p, reader, how, kSizes.size());
  std::thread writer([&] {
    std::vector<uint8_t> all;
    for (size_t i = 0; i < kSizes.size(); ++i) {
      const auto frame = frameBytes(i, kSizes[i]);
      if (cut == 0) {
        p.send(frame);
        continue;
      }
      all.insert(all.end(), frame.begin(), frame.end());
    }
    for (size_t at = 0; at < all.size(); at += cut) {  // headers split across writes too
      const size_t n = std::min(cut, all.size() - at);
      p.send({all.begin() + static_cast<ptrdiff_t>(at),
              all.begin() + static_cast<ptrdiff_t>(at + n)});
    }
  });
  loop.next();
  const bool done = p.runUntil([&] { return loop.chunks.size() == kSizes.size() || loop.error; });
  writer.join();
  REQUIRE(done);
  CHECK(!loop.error);
  std::vector<uint64_t> order(kSizes.size());
  std::iota(order.begin(), order.end(), 0);
  CHECK(loop.chunks == order);
  CHECK(loop.sizes == kSizes);
  CHECK(loop.allIntact);
}

TEMPLATE_TEST_CASE("frame reader: small frames come many to a read, a large payload is not read "
                   "ahead",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  ReaderLoopback p(std::make_unique<TestType>());
  FrameReader reader;
  constexpr size_t kSmall = 64;
  std::vector<uint8_t> all;
  for (size_t i = 0; i < kSmall; ++i) {
    const auto f = frameBytes(i, 1000);
    all.insert(all.end(), f.begin(), f.end());
  }
  const auto large = frameBytes(kSmall, 1 << 20);
  const auto after = frameBytes(kSmall + 1, 100);
  p.send(all);
  REQUIRE(p.arrived(all.size()));

  FrameLoop loop(p, reader, Take::kTakeThenExactly, kSmall);
  loop.next();
  REQUIRE(p.runUntil([&] { return loop.chunks.size() == kSmall || loop.error; }));
  CHECK(loop.allIntact);
  // Every byte was there, so each header read filled the buffer (two headers and
  // kReadAheadBytes) and at most one payload read finished the frame the buffer cut: about 16
  // frames for two calls, where a header read and a payload read each took 128.
  const size_t perRead = FrameReader::kBufferBytes;
  CHECK(p.stream->reads.size() <= 2 * ((all.size() + perRead - 1) / perRead));

  // After a large payload, the next header is read with at most one header's worth more: the
  // rest of its payload goes straight to where it belongs.
  std::thread writer([&] {
    p.send(large);
    p.send(after);
  });
  loop.count = kSmall + 2;
  loop.next();
  REQUIRE(p.runUntil([&] { return loop.chunks.size() == kSmall + 2 || loop.error; }));
  writer.join();
  CHECK(loop.allIntact);
  CHECK(loop.sizes.back() == 100);
  const auto& reads = p.stream->reads;  // ..., its header (and a little), the rest of its payload
  REQUIRE(reads.size() >= 2);
  CHECK(reads[reads.size() - 2] == 2 * wire::kHeaderSize);
  CHECK((reads.back() == 100 || reads.back() == 100 - wire::kHeaderSize));
}

TEMPLATE_TEST_CASE("frame reader: after a large payload, a header-only frame comes with the next "
                   "header in one read and turns no read-ahead on",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  ReaderLoopback p(std::make_unique<TestType>());
  FrameReader reader;
  constexpr uint32_t kLarge = 32 << 10;  // above kReadAheadBytes; all of it fits in the socket
  std::vector<uint8_t> all = frameBytes(0, kLarge);
  for (const auto& f : {frameBytes(1, 0), frameBytes(2, kLarge)}) all.insert(all.end(), f.begin(), f.end());
  p.send(all);
  REQUIRE(p.arrived(all.size()));
  FrameLoop loop(p, reader, Take::kTakeThenExactly, 3);
  loop.next();
  REQUIRE(p.runUntil([&] { return loop.chunks.size() == 3 || loop.error; }));
  CHECK(loop.allIntact);
  CHECK(loop.sizes == std::vector<uint32_t>{kLarge, 0, kLarge});
  // Frame 0 with read-ahead (nothing came before it), the rest of its payload; then one read of
  // two headers brings the header-only frame and frame 2's header, and frame 2's payload comes
  // straight: the header-only frame did not make the reader read ahead into it.
  const size_t rest0 = kLarge - (FrameReader::kBufferBytes - wire::kHeaderSize);
  CHECK(p.stream->reads ==
        std::vector<size_t>{FrameReader::kBufferBytes, rest0, 2 * wire::kHeaderSize, kLarge});
}

TEMPLATE_TEST_CASE("frame reader: a header read ahead completes through a post",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  ReaderLoopback p(std::make_unique<TestType>());
  FrameReader reader;
  auto two = frameBytes(1, 10);
  const auto second = frameBytes(2, 10);
  two.insert(two.end(), second.begin(), second.end());
  p.send(two);
  REQUIRE(p.arrived(two.size()));

  int headers = 0;
  reader.readHeader(*p.stream, [&](const std::error_code& ec, size_t) { headers += !ec; });
  REQUIRE(p.runUntil([&] { return headers == 1; }));
  std::vector<uint8_t> payload(10);
  CHECK(reader.take(payload.data(), payload.size()) == 10);  // came with its header
  const size_t readsBefore = p.stream->reads.size();
  reader.readHeader(*p.stream, [&](const std::error_code& ec, size_t) { headers += !ec; });
  CHECK(headers == 1);  // not inline
  REQUIRE(p.runUntil([&] { return headers == 2; }));
  CHECK(p.stream->reads.size() == readsBefore);  // and without reading
  TestHeader h{};
  std::memcpy(&h, reader.header().data(), sizeof(h));
  CHECK(h.chunk == 2);
}

TEMPLATE_TEST_CASE("frame reader: end of stream fails a header read, between frames or inside "
                   "one",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  const bool insideHeader = GENERATE(false, true);
  ReaderLoopback p(std::make_unique<TestType>());
  FrameReader reader;
  auto bytes = frameBytes(1, 5);
  if (insideHeader) bytes.resize(bytes.size() + 30, 0);  // 30 bytes of a second header
  p.send(bytes);
  p.pair->peerShutdownSend();

  FrameLoop loop(p, reader, Take::kExactly, 2);
  loop.next();
  REQUIRE(p.runUntil([&] { return static_cast<bool>(loop.error); }));
  CHECK(loop.chunks == std::vector<uint64_t>{1});
  CHECK(loop.error == asio::error::eof);
}

namespace {

// `count` bytes 0x11, 0x12, ... (never 0xEE, the untouched fill).
std::vector<uint8_t> sequence(size_t count, size_t from = 0) {
  std::vector<uint8_t> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = static_cast<uint8_t>(0x11 + (from + i) % 200);
  return out;
}

// A readWhole of all of `data` in units of `unit`, and how it ended.
struct WholeRead {
  WholeRead(FrameReader& reader, Stream& stream, std::vector<uint8_t>& data, size_t unit) {
    reader.readWhole(stream, data.data(), data.size(), unit,
                     [this](const std::error_code& ec, size_t n) {
                       error = ec;
                       got = n;
                       finished = true;
                     });
  }
  std::error_code error;
  size_t got = 0;
  bool finished = false;
};

bool untouched(const std::vector<uint8_t>& data, size_t from) {
  for (size_t i = from; i < data.size(); ++i)
    if (data[i] != 0xEE) return false;
  return true;
}

}  // namespace

TEMPLATE_TEST_CASE("frame reader: readWhole writes whole units only: a unit that comes in pieces "
                   "lands once it is whole, and every read into the buffer is whole units",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  const size_t unit = GENERATE(size_t{2}, size_t{4}, size_t{8});
  CAPTURE(unit);
  ReaderLoopback p(std::make_unique<TestType>());
  FrameReader reader;
  const size_t size = 64 * unit;
  const std::vector<uint8_t> sent = sequence(size);
  std::vector<uint8_t> data(size, 0xEE);
  WholeRead read(reader, *p.stream, data, unit);
  // Five units and a part of the sixth: the part waits in the reader, not in `data`.
  const size_t first = 5 * unit + unit - 1;
  p.send({sent.begin(), sent.begin() + static_cast<ptrdiff_t>(first)});
  REQUIRE(p.arrived(first));
  REQUIRE(p.runUntil([&] {
    return p.stream->bytesArrived() == first && p.stream->bytesQueued() == 0;
  }));
  CHECK(std::equal(sent.begin(), sent.begin() + static_cast<ptrdiff_t>(5 * unit), data.begin()));
  CHECK(untouched(data, 5 * unit));
  CHECK_FALSE(read.finished);
  // Its last byte and the rest: all of it, in order.
  p.send({sent.begin() + static_cast<ptrdiff_t>(first), sent.end()});
  REQUIRE(p.runUntil([&] { return read.finished; }));
  CHECK(!read.error);
  CHECK(read.got == size);
  CHECK(data == sent);
  for (size_t asked : p.stream->reads) CHECK((asked < unit || asked % unit == 0));
}

TEMPLATE_TEST_CASE("frame reader: readWhole at the end of the stream inside a unit: the unit is "
                   "dropped and the count is the whole units written",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  const size_t unit = GENERATE(size_t{2}, size_t{4}, size_t{8});
  // Where the payload's first bytes are: read ahead with the header, or only in the socket.
  const bool afterHeader = GENERATE(false, true);
  CAPTURE(unit, afterHeader);
  ReaderLoopback p(std::make_unique<TestType>());
  FrameReader reader;
  const size_t size = 64 * unit;
  const size_t sentBytes = 10 * unit + unit / 2;
  std::vector<uint8_t> bytes = sequence(sentBytes);
  if (afterHeader) {
    std::vector<uint8_t> frame = frameBytes(1, 0);  // a header; its length is the test's
    frame.insert(frame.end(), bytes.begin(), bytes.end());
    bytes = frame;
  }
  p.send(bytes);
  p.pair->peerShutdownSend();
  REQUIRE(p.arrived(bytes.size()));
  if (afterHeader) {
    bool header = false;
    reader.readHeader(*p.stream, [&](const std::error_code& ec, size_t) { header = !ec; });
    REQUIRE(p.runUntil([&] { return header; }));
    REQUIRE(reader.buffered() == sentBytes);  // the whole payload came with it
  }
  std::vector<uint8_t> data(size, 0xEE);
  WholeRead read(reader, *p.stream, data, unit);
  REQUIRE(p.runUntil([&] { return read.finished; }));
  CHECK(read.error == asio::error::eof);
  CHECK(read.got == 10 * unit);
  const std::vector<uint8_t> expected = sequence(10 * unit);
  CHECK(std::equal(expected.begin(), expected.end(), data.begin()));
  CHECK(untouched(data, 10 * unit));
}

}  // namespace rs::transport
