// A last word on a stream let go in the middle of a frame (core/transport/farewell.h, with
// FrameWriter::restOfFrame and Stream::handOver): the peer reads the frame that was being
// written whole, then the word, and the connection ends only after the peer ended its side,
// with no reset. Over a real loopback TCP connection; the peer reads with blocking calls on a
// thread of its own, only once the stream was handed over, so that the 64 MiB frame (more
// than the two sockets' buffers hold) is cut in its middle.
#include "core/transport/farewell.h"

#include <catch2/catch.hpp>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "core/transport/frame_writer.h"
#include "core/transport/tcp/tcp_stream.h"
#include "core/wire/control_frames.h"
#include "tests/support/wait_until.h"

namespace rs::transport {
namespace {

constexpr uint32_t kBigPayload = 64u << 20;

wire::HeaderBytes headerOf(uint64_t chunk, uint32_t bytes) {
  wire::ChunkFields fields;
  fields.chunk = chunk;
  fields.elemCount = bytes;
  fields.dtype = DataType::kInt8;
  return wire::encodeHeader(wire::reduceHeader(fields));
}

}  // namespace

TEST_CASE("farewell: a stream handed over inside a frame sends the frame's rest, then the word, "
          "and closes without a reset once the peer ended its side",
          "[transport]") {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  asio::io_context peerIo;
  asio::ip::tcp::socket peer{peerIo};
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  peer.connect(acceptor.local_endpoint());
  asio::ip::tcp::socket accepted(io);
  acceptor.accept(accepted);
  auto stream = std::make_unique<tcp::TcpStream>(std::move(accepted));

  std::atomic<int> pending{0};
  FrameWriter writer(
      [&](IoHandler h) -> IoHandler {
        ++pending;
        return [&pending, h = std::move(h)](const std::error_code& ec, size_t n) {
          h(ec, n);
          --pending;
        };
      },
      [](const std::error_code&, FrameWriter::Written) {});
  auto big = std::make_shared<std::vector<uint8_t>>(kBigPayload, uint8_t{1});
  writer.enqueue({headerOf(1, kBigPayload), {big->data(), big->size()}, big, 0});
  REQUIRE(writer.flush(*stream));
  // Let the kernel take what it will of the frame: the write stays pending, the peer reads
  // nothing yet.
  for (int i = 0; i < 20; ++i) io.poll();
  const uint64_t sent = stream->bytesSent();
  REQUIRE(sent > 0);
  REQUIRE(sent < wire::kHeaderSize + kBigPayload);

  std::string bytes = writer.restOfFrame(*stream);
  CHECK(bytes.size() == wire::kHeaderSize + kBigPayload - sent);
  const std::vector<uint8_t> word(100, uint8_t{7});
  const wire::HeaderBytes wordHeader = headerOf(7, 100);
  bytes.append(reinterpret_cast<const char*>(wordHeader.data()), wordHeader.size());
  bytes.append(reinterpret_cast<const char*>(word.data()), word.size());
  writer.close();
  Result<std::unique_ptr<Stream>> handed = stream->handOver();
  REQUIRE(handed.isOk());
  stream->close();  // the old stream only: the connection goes on
  big.reset();      // the writer's frame still holds it until its handler ran
  Farewell::send(io, std::move(*handed), std::move(bytes), test::kStateDeadline);

  // The peer: the big frame whole and intact, the word, then its side ends; then it waits for
  // the end of the connection.
  struct Got {
    uint64_t chunk;
    uint32_t bytes;
    bool intact;
  };
  std::vector<Got> got;
  std::error_code end;
  std::atomic<bool> peerDone{false};
  std::thread reader([&] {
    std::vector<uint8_t> payload;
    for (int frames = 0; frames < 2; ++frames) {
      wire::HeaderBytes h;
      wire::FrameHeader header;
      std::error_code ec;
      asio::read(peer, asio::buffer(h), ec);
      if (ec || !wire::decodeHeader(h.data(), h.size(), {.maxPayloadBytes = kBigPayload}, &header)
                     .isOk())
        break;
      payload.resize(header.payloadLength);
      asio::read(peer, asio::buffer(payload), ec);
      if (ec) break;
      const auto want = static_cast<uint8_t>(header.chunk);
      got.push_back({header.chunk, header.payloadLength,
                     std::all_of(payload.begin(), payload.end(),
                                 [want](uint8_t b) { return b == want; })});
    }
    peer.shutdown(asio::ip::tcp::socket::shutdown_send);
    uint8_t one = 0;
    peer.read_some(asio::buffer(&one, 1), end);
    peerDone = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + test::kStateDeadline;
  while (!peerDone && std::chrono::steady_clock::now() < deadline)
    io.run_one_for(std::chrono::milliseconds(100));
  reader.join();
  REQUIRE(got.size() == 2);
  CHECK(got[0].chunk == 1);
  CHECK(got[0].bytes == kBigPayload);
  CHECK(got[0].intact);
  CHECK(got[1].chunk == 7);
  CHECK(got[1].bytes == 100);
  CHECK(got[1].intact);
  CHECK(end == asio::error::eof);  // a FIN, not a reset
  CHECK(pending == 0);             // the old stream's write ended through its handler
}

}  // namespace rs::transport
