// The frame builders and parsers both ends use: REDUCE/RESULT headers from a chunk's fields,
// HEARTBEAT, ERROR/ABORT frames built from a Status and parsed back, over-long reasons cut as
// the wire spec says, and bad payloads refused with the field named.
#include "core/wire/control_frames.h"

#include <catch2/catch.hpp>

#include "tests/support/decoded_header.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using rs::DataType;
using rs::GroupId;
using rs::ReduceOp;
using rs::Status;
using rs::StatusCode;
using rs::test::decodedHeader;
using namespace rs::wire;

namespace {

const GroupId kGroup{0x1122334455667788ull, 0x99AABBCCDDEEFF00ull};

ChunkFields someChunk() {
  return {.group = kGroup,
          .rank = 3,
          .seq = 41,
          .chunk = 1234567,
          .elemOffset = 1u << 20,
          .elemCount = 1000,
          .dtype = DataType::kBfloat16,
          .op = ReduceOp::kAvg};
}

const uint8_t* textBytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

void requireRefused(const Status& s, const std::string& what) {
  REQUIRE(s.code() == StatusCode::kProtocolError);
  REQUIRE_THAT(s.message(), StartsWith("error message: ") && Contains(what));
}

}  // namespace

TEST_CASE("control frames: a HEARTBEAT names the stream's group and rank and nothing else") {
  const FrameHeader h = decodedHeader(heartbeatFrame(kGroup, 7));
  CHECK(h.type == FrameType::kHeartbeat);
  CHECK(h.group == kGroup);
  CHECK(h.rank == 7);
  CHECK(h.flags == 0);
  CHECK(h.status == 0);
  CHECK(h.seq == 0);
  CHECK(h.chunk == 0);
  CHECK(h.elemCount == 0);
  CHECK(h.payloadLength == 0);
}

TEST_CASE("control frames: REDUCE and RESULT headers carry the chunk and its payload length") {
  for (FrameType type : {FrameType::kReduce, FrameType::kResult}) {
    const FrameHeader built =
        type == FrameType::kReduce ? reduceHeader(someChunk()) : resultHeader(someChunk());
    const FrameHeader h = decodedHeader(encodeHeader(built));
    CHECK(h.type == type);
    CHECK(h.group == kGroup);
    CHECK(h.rank == 3);
    CHECK(h.status == 0);
    CHECK(h.seq == 41);
    CHECK(h.chunk == 1234567);
    CHECK(h.elemOffset == (1u << 20));
    CHECK(h.elemCount == 1000);
    CHECK(h.dtype == DataType::kBfloat16);
    CHECK(h.op == ReduceOp::kAvg);
    CHECK(h.payloadLength == 2000);  // 1000 elements of 2 bytes
  }
  ChunkFields wide = someChunk();
  wide.dtype = DataType::kFloat64;
  CHECK(reduceHeader(wide).payloadLength == 8000);
}

TEST_CASE("control frames: RECEIVED and COMMIT carry their watermark in chunk, and nothing else") {
  for (FrameType type : {FrameType::kReceived, FrameType::kCommit}) {
    const FrameHeader built = type == FrameType::kReceived ? receivedHeader(kGroup, 3, 77)
                                                           : commitHeader(kGroup, 3, 77);
    const FrameHeader h = decodedHeader(encodeHeader(built));
    CHECK(h.type == type);
    CHECK(h.group == kGroup);
    CHECK(h.rank == 3);
    CHECK(h.chunk == 77);
    CHECK(h.seq == 0);
    CHECK(h.elemCount == 0);
    CHECK(h.payloadLength == 0);
  }
}

TEST_CASE("control frames: ERROR and ABORT round trip through the decoder and the parser") {
  const Status reason = rs::resourceExhausted("reducer 3: slot pool exhausted (4096 slots)");
  for (bool abort : {false, true}) {
    const ErrorFrame frame = abort ? abortFrame(kGroup, 7, reason) : errorFrame(kGroup, 7, reason);
    const FrameHeader h = decodedHeader(frame.header);
    CHECK(h.type == (abort ? FrameType::kAbort : FrameType::kError));
    CHECK(h.group == kGroup);
    CHECK(h.rank == 7);
    CHECK(h.status == static_cast<uint32_t>(StatusCode::kResourceExhausted));
    CHECK(h.payloadLength == frame.reason.size());
    CHECK(errorCode(h) == StatusCode::kResourceExhausted);

    PeerError peer;
    REQUIRE(parseErrorFrame(h, textBytes(frame.reason), frame.reason.size(), &peer).isOk());
    CHECK(peer.abort == abort);
    CHECK(peer.code == StatusCode::kResourceExhausted);
    CHECK(peer.reason == reason.message());
  }
}

TEST_CASE("control frames: an empty reason is a valid frame") {
  const ErrorFrame frame = abortFrame(kGroup, 0, rs::abortedError(""));
  const FrameHeader h = decodedHeader(frame.header);
  CHECK(h.payloadLength == 0);
  PeerError peer;
  REQUIRE(parseErrorFrame(h, nullptr, 0, &peer).isOk());
  CHECK(peer.reason.empty());
  CHECK(peer.code == StatusCode::kAborted);
}

TEST_CASE("control frames: an over-long reason is cut to the limit at a character boundary") {
  std::string reason(kMaxErrorMessageBytes - 1, 'a');
  reason += "\xC3\xA9 and more";  // the two-byte character would end past the limit
  const ErrorFrame frame = errorFrame(kGroup, 1, rs::ioError(reason));
  CHECK(frame.reason == std::string(kMaxErrorMessageBytes - 1, 'a'));
  const FrameHeader h = decodedHeader(frame.header);
  CHECK(h.payloadLength == kMaxErrorMessageBytes - 1);
  PeerError peer;
  REQUIRE(parseErrorFrame(h, textBytes(frame.reason), frame.reason.size(), &peer).isOk());

  const ErrorFrame exact = errorFrame(kGroup, 1, rs::ioError(std::string(5000, 'x')));
  CHECK(exact.reason.size() == kMaxErrorMessageBytes);
  CHECK(decodedHeader(exact.header).payloadLength == kMaxErrorMessageBytes);
}

TEST_CASE("control frames: malformed reason text is repaired, never sent as is") {
  const std::string raw("nul \0 bad \xFF", 11);
  const ErrorFrame frame = abortFrame(kGroup, 2, rs::protocolError(raw));
  CHECK(frame.reason == "nul \xEF\xBF\xBD bad \xEF\xBF\xBD");
  PeerError peer;
  REQUIRE(parseErrorFrame(decodedHeader(frame.header), textBytes(frame.reason), frame.reason.size(),
                          &peer).isOk());
}

TEST_CASE("control frames: a peer's reason comes out with its control characters escaped") {
  // Valid UTF-8 without NULs, so the decoder takes it: escaping is the receiver's to do.
  const std::string hostile = "\x1b[2J\xc2\x9b" "1mdone\r\n# Out of bounds values : 0 OK";
  const ErrorFrame frame = abortFrame(kGroup, 3, rs::abortedError(hostile));
  CHECK(frame.reason == hostile);
  PeerError peer;
  REQUIRE(parseErrorFrame(decodedHeader(frame.header), textBytes(frame.reason), frame.reason.size(),
                          &peer).isOk());
  CHECK(peer.reason == "\\x1b[2J\\xc2\\x9b1mdone\\x0d\\x0a# Out of bounds values : 0 OK");
}

TEST_CASE("control frames: an OK status goes out as INTERNAL so that the frame still decodes") {
  const ErrorFrame frame = errorFrame(kGroup, 2, Status::ok());
  CHECK(decodedHeader(frame.header).status == static_cast<uint32_t>(StatusCode::kInternal));
}

TEST_CASE("control frames: the parser refuses bad payloads and names the field") {
  const ErrorFrame frame = errorFrame(kGroup, 4, rs::timeoutError("chunk 9 timed out"));
  const FrameHeader good = decodedHeader(frame.header);
  const std::string& text = frame.reason;
  PeerError peer;
  peer.reason = "unchanged";

  SECTION("a payload shorter or longer than the header's payloadLength") {
    requireRefused(parseErrorFrame(good, textBytes(text), text.size() - 1, &peer),
                   "16 bytes (expected the header's payloadLength 17)");
    const std::string longer = text + "!";
    requireRefused(parseErrorFrame(good, textBytes(longer), longer.size(), &peer),
                   "18 bytes (expected the header's payloadLength 17)");
  }
  SECTION("a payload over the limit, even when the header agrees") {
    FrameHeader h = good;
    const std::string big(kMaxErrorMessageBytes + 1, 'x');
    h.payloadLength = static_cast<uint32_t>(big.size());
    requireRefused(parseErrorFrame(h, textBytes(big), big.size(), &peer),
                   "1025 bytes (expected at most 1024)");
  }
  SECTION("invalid UTF-8 and NUL bytes") {
    FrameHeader h = good;
    const std::string bad("ok \xC3(", 5);
    h.payloadLength = 5;
    requireRefused(parseErrorFrame(h, textBytes(bad), bad.size(), &peer),
                   "invalid UTF-8 at offset 3");
    const std::string nul("a\0b", 3);
    h.payloadLength = 3;
    requireRefused(parseErrorFrame(h, textBytes(nul), nul.size(), &peer), "NUL byte at offset 1");
  }
  SECTION("a header that is not ERROR or ABORT, or carries no failure code") {
    FrameHeader h = good;
    h.type = FrameType::kResult;
    requireRefused(parseErrorFrame(h, textBytes(text), text.size(), &peer),
                   "frame type RESULT (expected ERROR or ABORT)");
    h = good;
    h.status = 0;
    requireRefused(parseErrorFrame(h, textBytes(text), text.size(), &peer),
                   "header status 0 (expected a failure code 1..9)");
    h.status = 10;
    requireRefused(parseErrorFrame(h, textBytes(text), text.size(), &peer), "header status 10");
    CHECK(errorCode(h) == StatusCode::kAborted);
  }
  CHECK(peer.reason == "unchanged");  // nothing is written on failure
}
