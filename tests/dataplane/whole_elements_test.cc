// A member's results in whole elements (proto/FAILOVER.md, "Whole elements only"): a reducer
// that ends its stream in the middle of an element of a RESULT part leaves the member's buffer
// with whole elements of result (the chunk's final prefix, which the member knows) and, in
// place, its own input after them, never an element half of each; out of place the prefix is
// the same. Against a fake reducer on real loopback sockets.
#include <catch2/catch.hpp>

#include <asio/read.hpp>
#include <string>
#include <vector>

#include "tests/support/fake_reducer.h"
#include "tests/support/local_pool.h"

namespace rs::test {
namespace {

using Catch::Matchers::Contains;

constexpr uint32_t kElems = 64;  // one chunk
constexpr uint32_t kFinal = 10;  // whole result elements sent before the stream ends

// Byte i of the member's input, and of the fake's result: never equal, so that each byte of the
// buffer says where it came from.
uint8_t inputByte(size_t i) { return static_cast<uint8_t>(0x10 + i % 100); }
uint8_t resultByte(size_t i) { return static_cast<uint8_t>(0x90 + i % 100); }

}  // namespace

TEST_CASE("a reducer that ends its stream inside an element of a RESULT part leaves the final "
          "prefix in whole elements, and in place the input after it",
          "[whole-elements]") {
  struct Type {
    DataType type;
    size_t size;
  };
  const Type t = GENERATE(Type{DataType::kBfloat16, 2}, Type{DataType::kFloat32, 4},
                          Type{DataType::kFloat64, 8});
  const bool inPlace = GENERATE(true, false);
  const std::string typeName(dataTypeName(t.type));
  CAPTURE(typeName, inPlace);
  // Reads the member's chunk, sends the header of its whole result and kFinal and a half
  // elements of it, and ends the stream (FIN: every byte sent reaches the member first).
  FakeReducer fake([&](FakeReducer::Socket& s) {
    acceptMember(s, 1u << 20);
    const wire::FrameHeader reduce = readHeaderOf(s);
    std::vector<uint8_t> contribution(reduce.payloadLength);
    asio::read(s, asio::buffer(contribution));
    const wire::HeaderBytes header = wire::encodeHeader(wire::resultHeader(
        {.group = reduce.group,
         .rank = reduce.rank,
         .seq = reduce.seq,
         .chunk = reduce.chunk,
         .elemOffset = reduce.elemOffset,
         .elemCount = reduce.elemCount,
         .dtype = reduce.dtype,
         .op = reduce.op}));
    std::vector<uint8_t> part(kFinal * t.size + t.size / 2);
    for (size_t i = 0; i < part.size(); ++i) part[i] = resultByte(i);
    writeBytes(s, header.data(), header.size());
    writeBytes(s, part.data(), part.size());
    s.shutdown(asio::ip::tcp::socket::shutdown_send);
    readUntilClosed(s);
  });
  auto comm = client::Communicator::connect(testClientOptions({fake.endpoint()}, 1),
                                            {GroupId::random(), 1, 0});
  REQUIRE(comm.isOk());
  std::vector<uint8_t> input(kElems * t.size);
  for (size_t i = 0; i < input.size(); ++i) input[i] = inputByte(i);
  std::vector<uint8_t> buffer = input;
  std::vector<uint8_t> recv(input.size(), 0xEE);
  std::vector<uint8_t>& out = inPlace ? buffer : recv;
  const Status s = (*comm)->allReduce(buffer.data(), out.data(), kElems, t.type, ReduceOp::kSum);
  comm->reset();  // every handler has run: the buffers are the test's again

  CHECK_THAT(s.message(), Contains("reducer 0 (" + fake.endpoint().toString() +
                                   ") stream 0: reading the result of chunk 0"));
  CHECK_THAT(s.message(), Contains("(10 of its 64 result elements in)"));
  for (size_t i = 0; i < kFinal * t.size; ++i) {
    INFO("byte " << i);
    REQUIRE(out[i] == resultByte(i));
  }
  if (!inPlace) return;  // past the prefix a receive buffer holds nothing the member needs
  for (size_t i = kFinal * t.size; i < out.size(); ++i) {
    INFO("byte " << i << " (element " << i / t.size << ")");
    REQUIRE(out[i] == inputByte(i));
  }
}

}  // namespace rs::test
