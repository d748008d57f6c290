// libFuzzer target for the data-plane decoders: decodeHeader, decodeChallenge, decodeHello (of
// a stream and of a lane), decodeHelloAck, decodeDeadSet, decodeErrorMessage and parseErrorFrame
// get arbitrary bytes, and every HELLO
// that decodes goes through the authentication check the acceptor runs (helloProof). Beyond "no crash, no sanitizer
// report" it checks properties the server relies on:
//   - a header that decodes re-encodes to the identical 72 bytes (nothing is dropped or
//     normalised), and satisfies the invariants callers allocate by (lengths, ranges);
//   - a rejected header is a ProtocolError with a message;
//   - a HELLO's proof depends on everything it says but its own proof field, and a proof made
//     under another secret or for another challenge never passes the constant-time check;
//   - the key the reducer checks a HELLO under (helloKey) exists for every job name the decoder
//     lets through, is the pool's secret only for no job, and differs between jobs;
//   - the same for the payloads (challenge, hello, hello-ack and a dead set re-encode
//     identically; a decoded error message passes through encodeErrorMessage unchanged);
//   - the rejoin frames (JOIN_OFFER, JOIN, JOIN_AT) are headers alone, and no HELLO carries both
//     the lane and the rejoin flag;
//   - a FINAL's prefix is whole elements within its chunk, and the REDUCE behind it
//     (remainderHeader) decodes and tiles the rest of the chunk exactly;
//   - encodeErrorMessage of any bytes is something decodeErrorMessage accepts, and an ERROR or
//     ABORT frame built from them (errorFrame, abortFrame) decodes and parses back;
//   - parseErrorFrame accepts the payload after an ERROR/ABORT header exactly when it is as
//     long as the header says and a valid message; what it parsed is the message escaped
//     (printable ASCII), and a printable one rebuilds to the same frame.
// Random bytes almost never carry a valid CRC-32C, so each input is also decoded with its
// checksum repaired: that lets the fuzzer reach the per-type rules behind the checksum.
//
// Seeds (tests/fuzz/corpus/frame_decoder_fuzz/) are one valid frame of each type, header and
// payload, with fixed field values. They are written by this binary:
//   RS_FUZZ_WRITE_SEEDS=tests/fuzz/corpus/frame_decoder_fuzz build/fuzz/tests/fuzz/frame_decoder_fuzz
// which writes the files and exits; rerun it after a format change and commit the result.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/common/text.h"
#include "core/wire/auth.h"
#include "core/wire/control_frames.h"
#include "core/wire/crc32c.h"
#include "core/wire/fabric_frames.h"
#include "core/wire/failover_frames.h"
#include "core/wire/frame.h"
#include "core/wire/rejoin_frames.h"

using namespace rs::wire;

namespace {

void require(bool condition, const char* property) {
  if (!condition) {
    std::fprintf(stderr, "frame_decoder_fuzz: property violated: %s\n", property);
    std::abort();
  }
}

void checkRejected(const rs::Status& s, const char* prefix) {
  require(s.code() == rs::StatusCode::kProtocolError, "a rejection is a ProtocolError");
  require(s.message().rfind(prefix, 0) == 0, "a rejection message names what was decoded");
}

// What a receiver may rely on once decodeHeader() returned OK.
void checkInvariants(const FrameHeader& h, const DecodeLimits& limits) {
  require((h.flags & ~kKnownFlags) == 0, "no unknown flags");
  require((h.flags & kHelloOnlyFlags) == 0 || h.type == FrameType::kHello,
          "HELLO's flags only on HELLO");
  require((h.flags & kFlagFabric) == 0 || h.type == FrameType::kHello ||
              h.type == FrameType::kReduce || h.type == FrameType::kResult,
          "the fabric flag only on HELLO, REDUCE and RESULT");
  require((h.flags & kFlagLane) == 0 || (h.flags & kFlagRejoin) == 0,
          "a HELLO opens a lane or rejoins, never both");
  switch (h.type) {
    case FrameType::kReduce:
    case FrameType::kResult:
    case FrameType::kFinal:
    case FrameType::kCommitted: {
      require(rs::isValidDataType(static_cast<uint8_t>(h.dtype)), "dtype in range");
      require(rs::isValidReduceOp(static_cast<uint8_t>(h.op)), "op in range");
      require(h.elemCount >= 1, "data frames carry elements");
      const uint64_t chunkBytes = uint64_t{h.elemCount} * rs::dataTypeSize(h.dtype);
      if (h.type == FrameType::kFinal) {
        require(h.payloadLength >= rs::dataTypeSize(h.dtype) && h.payloadLength <= chunkBytes &&
                    h.payloadLength % rs::dataTypeSize(h.dtype) == 0,
                "a FINAL carries 1 to elemCount whole elements");
        const uint32_t prefix = finalPrefix(h);
        if (prefix < h.elemCount) {
          const FrameHeader rest = remainderHeader(h);
          FrameHeader back;
          require(decodeHeader(encodeHeader(rest).data(), kHeaderSize, limits, &back).isOk(),
                  "the REDUCE behind a FINAL decodes");
          require(back.elemOffset == h.elemOffset + prefix &&
                      back.elemCount == h.elemCount - prefix && back.chunk == h.chunk &&
                      back.seq == h.seq && back.type == FrameType::kReduce,
                  "the REDUCE behind a FINAL is the rest of its chunk");
        }
      } else if (h.type == FrameType::kCommitted) {
        require(h.payloadLength == 0, "COMMITTED is a header alone");
      } else {
        require(chunkBytes == h.payloadLength, "payloadLength = elemCount x dtype size");
      }
      require(chunkBytes <= limits.maxPayloadBytes, "chunk within the limit");
      require(h.elemOffset + h.elemCount >= h.elemOffset, "element range does not wrap");
      require(h.status == 0, "data frames carry no status");
      break;
    }
    case FrameType::kHello:
      require(h.payloadLength == kHelloPayloadSize, "hello payload size");
      break;
    case FrameType::kHelloAck:
      require(h.payloadLength == kHelloAckPayloadSize, "hello-ack payload size");
      break;
    case FrameType::kChallenge:
      require(h.payloadLength == kChallengePayloadSize, "challenge payload size");
      break;
    case FrameType::kHeartbeat:
      require(h.payloadLength == 0 && h.status == 0 && h.seq == 0 && h.chunk == 0 &&
                  h.elemOffset == 0 && h.elemCount == 0,
              "a heartbeat is a header naming a group and rank alone");
      break;
    case FrameType::kError:
    case FrameType::kAbort:
      require(h.status >= 1 && h.status <= static_cast<uint32_t>(rs::StatusCode::kInternal),
              "error frames carry a failure code");
      require(h.payloadLength <= kMaxErrorMessageBytes, "error message within the limit");
      break;
    case FrameType::kReceived:
    case FrameType::kCommit:
    case FrameType::kJoin:
    case FrameType::kJoinAt:
      require(h.payloadLength == 0 && h.seq == 0 && h.elemOffset == 0 && h.elemCount == 0 &&
                  h.status == 0,
              "RECEIVED, COMMIT, JOIN and JOIN_AT are a header alone, their number in chunk");
      break;
    case FrameType::kJoinOffer:
      require(h.payloadLength == 0 && h.seq == 0 && h.chunk == 0 && h.elemOffset == 0 &&
                  h.elemCount == 0 && h.status == 0,
              "a JOIN_OFFER is a header naming a group and rank alone");
      break;
    case FrameType::kFailover:
    case FrameType::kLost:
      require(h.payloadLength >= kDeadSetEntryBytes &&
                  h.payloadLength <= kMaxDeadReducers * kDeadSetEntryBytes &&
                  h.payloadLength % kDeadSetEntryBytes == 0 &&
                  h.elemOffset == 0 && h.elemCount == 0 && h.status == 0 &&
                  (h.type == FrameType::kFailover || h.chunk == 0),
              "FAILOVER and LOST carry a dead set and its generation (FAILOVER a watermark "
              "too)");
      break;
    case FrameType::kFabricOffer:
    case FrameType::kFabricAccept:
    case FrameType::kFabricDecline: {
      const bool grant = h.type != FrameType::kFabricDecline;
      require(h.payloadLength >= (grant ? kFabricGrantFixedBytes + 2 : 1) &&
                  h.payloadLength <= (grant ? kMaxFabricGrantBytes : kMaxErrorMessageBytes) &&
                  h.seq == 0 && h.chunk == 0 && h.elemOffset == 0 && h.elemCount == 0 &&
                  h.status == 0,
              "the fabric's set-up frames carry a grant or a reason, and the stream's names");
      break;
    }
    default:
      require(false, "decoded type in range");
  }
}

// Decodes one header; on success the bytes must come back unchanged from encodeHeader().
bool decodeAndCheck(const uint8_t* bytes, size_t size, const DecodeLimits& limits,
                    FrameHeader* out) {
  rs::Status s = decodeHeader(bytes, size, limits, out);
  if (!s.isOk()) {
    checkRejected(s, "frame header: ");
    return false;
  }
  require(size == kHeaderSize, "only 72 bytes decode");
  checkInvariants(*out, limits);
  HeaderBytes again = encodeHeader(*out);
  require(std::memcmp(again.data(), bytes, kHeaderSize) == 0, "decode then encode is identity");
  return true;
}

// The acceptor's check of a HELLO (header and payload both decoded) as the reducer runs it:
// the key is the pool's secret, or the key derived for the job the HELLO names.
void fuzzHelloProof(const FrameHeader& h, const HelloPayload& hello) {
  const std::string_view pool = "fuzz-secret-0123456789abcdef";
  auto key = helloKey(pool, hello.jobName);
  require(key.isOk(), "every job name the decoder accepts has a key");
  require((*key == pool) == hello.jobName.empty(), "only a job-less HELLO uses the pool's secret");
  const std::string_view secret = *key;
  if (!hello.jobName.empty()) {
    const std::string_view other = hello.jobName == "j" ? "k" : "j";
    require(*helloKey(pool, other) != *key, "each job has its own key");
  }
  Nonce nonce{};
  for (size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<uint8_t>(i * 7 + h.rank);
  const AuthProof expected = helloProof(secret, nonce, h, hello);
  require(proofsEqual(expected, hello.authProof) ==
              (std::memcmp(expected.data(), hello.authProof.data(), expected.size()) == 0),
          "the constant-time check agrees with memcmp");
  HelloPayload signed_ = hello;
  signed_.authProof = expected;
  require(proofsEqual(helloProof(secret, nonce, h, signed_), expected),
          "the proof does not depend on the proof field");
  require(!proofsEqual(helloProof("another-secret-0123456789", nonce, h, hello), expected),
          "another secret gives another proof");
  Nonce otherNonce = nonce;
  otherNonce[0] ^= 1;
  require(!proofsEqual(helloProof(secret, otherNonce, h, hello), expected),
          "another challenge gives another proof (no replay)");
}

void fuzzPayloads(const uint8_t* data, size_t size) {
  ChallengePayload challenge;
  rs::Status s = decodeChallenge(data, size, &challenge);
  if (s.isOk()) {
    auto again = encodeChallenge(challenge);
    require(size == again.size() && std::memcmp(again.data(), data, size) == 0,
            "challenge decode then encode is identity");
  } else {
    checkRejected(s, "challenge payload: ");
  }

  for (HelloKind kind : {HelloKind::kStream, HelloKind::kLane}) {
    HelloPayload hello;
    s = decodeHello(data, size, &hello, kind);
    if (s.isOk()) {
      auto again = encodeHello(hello);
      require(size == again.size() && std::memcmp(again.data(), data, size) == 0,
              "hello decode then encode is identity");
      require((hello.streamIndex < hello.streamCount) == (kind == HelloKind::kStream) &&
                  hello.reducerIndex < hello.reducerCount,
              "a stream's index below its count, a lane's at or above it");
    } else {
      checkRejected(s, "hello payload: ");
    }
  }

  std::vector<uint32_t> dead;
  s = decodeDeadSet(data, size, &dead);
  if (s.isOk()) {
    auto again = encodeDeadSet(dead);
    require(again.isOk() && again->size() == size &&
                std::memcmp(again->data(), data, size) == 0,
            "dead set decode then encode is identity");
  } else {
    checkRejected(s, "dead set: ");
  }

  HelloAckPayload ack;
  s = decodeHelloAck(data, size, &ack);
  if (s.isOk()) {
    auto again = encodeHelloAck(ack);
    require(size == again.size() && std::memcmp(again.data(), data, size) == 0,
            "hello-ack decode then encode is identity");
  } else {
    checkRejected(s, "hello-ack payload: ");
  }

  FabricGrant grant;
  s = decodeFabricGrant(data, size, &grant);
  if (s.isOk()) {
    auto again = encodeFabricGrant(grant);
    require(again.isOk() && again->size() == size &&
                std::memcmp(again->data(), data, size) == 0,
            "fabric grant decode then encode is identity");
    require(isValidFabricProvider(grant.provider) && grant.channelId <= kMaxFabricChannelId &&
                grant.ringSize == uint64_t{grant.slots} * grant.slotBytes,
            "a decoded grant is within its ranges");
    auto offer = fabricOfferFrame({1, 2}, 3, grant);
    FrameHeader h;
    require(offer.isOk() &&
                decodeHeader(offer->header.data(), offer->header.size(), {}, &h).isOk() &&
                h.payloadLength == size,
            "a decoded grant always makes an OFFER that decodes");
  } else {
    checkRejected(s, "fabric grant: ");
  }

  std::string declined;
  s = parseFabricDecline(data, size, &declined);
  if (s.isOk()) {
    require(rs::escapeText(declined) == declined, "a decline's reason is printable ASCII");
  } else {
    checkRejected(s, "fabric decline: ");
  }

  // A probe is one exact piece: only its own bytes pass, for either end.
  for (ProbeFrom from : {ProbeFrom::kMember, ProbeFrom::kReducer}) {
    s = checkFabricProbe(data, size, {1, 2}, 3, from);
    if (s.isOk()) {
      const FabricProbe want = fabricProbe({1, 2}, 3, from);
      require(size == want.size() && std::memcmp(want.data(), data, size) == 0,
              "only the probe itself passes its check");
    } else {
      checkRejected(s, "fabric probe: ");
    }
  }

  std::string message;
  s = decodeErrorMessage(data, size, &message);
  if (s.isOk()) {
    require(message.size() == size, "error message keeps every byte");
    require(encodeErrorMessage(message) == message, "a valid message encodes unchanged");
  } else {
    checkRejected(s, "error message: ");
  }

  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string encoded = encodeErrorMessage(text);
  require(encoded.size() <= kMaxErrorMessageBytes, "encoded message within the limit");
  s = decodeErrorMessage(reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size(),
                         &message);
  require(s.isOk(), "encodeErrorMessage output always decodes");

  // A frame built from any reason and any code (OK included) decodes and parses back.
  const auto code = static_cast<rs::StatusCode>(size % 10);
  const bool abort = size % 2 == 1;
  const rs::GroupId group{size, ~uint64_t{size}};
  const auto rank = static_cast<uint32_t>(size);
  const rs::Status reason(code, std::string(text));
  const ErrorFrame frame =
      abort ? abortFrame(group, rank, reason) : errorFrame(group, rank, reason);
  require(frame.reason == encoded, "a built frame carries the encoded reason");
  FrameHeader h;
  require(decodeHeader(frame.header.data(), frame.header.size(), {}, &h).isOk(),
          "a built ERROR/ABORT header always decodes");
  PeerError peer;
  require(parseErrorFrame(h, reinterpret_cast<const uint8_t*>(frame.reason.data()),
                          frame.reason.size(), &peer)
              .isOk(),
          "a built ERROR/ABORT frame always parses");
  // The reason comes back escaped (a peer's text never reaches a log raw), and only so.
  require(peer.abort == abort && peer.reason == rs::escapeText(encoded) && h.group == group,
          "a built frame parses back to what it was built from");
  require(rs::escapeText(peer.reason) == peer.reason, "a parsed reason is printable ASCII");
  require(peer.code == (code == rs::StatusCode::kOk ? rs::StatusCode::kInternal : code),
          "a built frame keeps its failure code");
}

// The payload after a header that decoded: an ERROR or ABORT payload parses exactly when the
// message decodes at the header's length, and rebuilds to the same bytes.
void fuzzErrorFrame(const FrameHeader& h, const uint8_t* payload, size_t size) {
  PeerError peer;
  rs::Status s = parseErrorFrame(h, payload, size, &peer);
  const bool isError = h.type == FrameType::kError || h.type == FrameType::kAbort;
  std::string message;
  const bool valid = isError && size == h.payloadLength &&
                     decodeErrorMessage(payload, size, &message).isOk();
  require(s.isOk() == valid, "parseErrorFrame accepts exactly a valid payload of the right size");
  if (!s.isOk()) {
    checkRejected(s, "error message: ");
    return;
  }
  require(peer.reason == rs::escapeText(message), "a parsed reason is the message, escaped");
  if (peer.reason != message) return;  // escaped text is longer: no longer the same frame
  const rs::Status reason(peer.code, peer.reason);
  const ErrorFrame again = peer.abort ? abortFrame(h.group, h.rank, reason)
                                      : errorFrame(h.group, h.rank, reason);
  FrameHeader rebuilt = h;
  rebuilt.seq = 0;  // the builders leave seq and chunk zero
  rebuilt.chunk = 0;
  require(again.header == encodeHeader(rebuilt) && again.reason == message,
          "a parsed ERROR/ABORT frame of printable text rebuilds to the same frame");
}

// Seeds: one frame of each type with the payload the type expects.
void writeSeed(const std::string& dir, const char* name, const FrameHeader& h,
               const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> frame(kHeaderSize);
  encodeHeader(h, frame.data());
  frame.insert(frame.end(), payload.begin(), payload.end());
  std::ofstream f(dir + "/" + name, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(frame.data()), static_cast<std::streamsize>(frame.size()));
  if (!f) {
    std::fprintf(stderr, "frame_decoder_fuzz: cannot write %s/%s\n", dir.c_str(), name);
    std::exit(1);
  }
}

FrameHeader decodedSeed(const HeaderBytes& bytes) {
  FrameHeader h;
  require(decodeHeader(bytes.data(), bytes.size(), {}, &h).isOk(), "a seed's header decodes");
  return h;
}

void writeSeeds(const std::string& dir) {
  const rs::GroupId group{0x0123456789ABCDEFull, 0x0FEDCBA987654321ull};

  HelloPayload hello;
  hello.worldSize = 4;
  hello.streamIndex = 1;
  hello.streamCount = 4;
  hello.reducerIndex = 0;
  hello.reducerCount = 2;
  hello.timeoutMs = 60000;
  hello.lossDetectMs = 5000;
  FrameHeader h;
  h.type = FrameType::kHello;
  h.group = group;
  h.rank = 2;
  h.payloadLength = kHelloPayloadSize;
  auto helloBytes = encodeHello(hello);
  writeSeed(dir, "hello", h, {helloBytes.begin(), helloBytes.end()});
  h.flags = kFlagDeterministic;
  writeSeed(dir, "hello_deterministic", h, {helloBytes.begin(), helloBytes.end()});
  h.flags = kFlagFp64Accumulator;
  writeSeed(dir, "hello_fp64_accumulator", h, {helloBytes.begin(), helloBytes.end()});
  h.flags = 0;

  ChallengePayload challenge;
  challenge.mode = AuthMode::kJobSecret;
  for (size_t i = 0; i < challenge.nonce.size(); ++i) challenge.nonce[i] = static_cast<uint8_t>(i);
  h.type = FrameType::kChallenge;
  h.group = {};
  h.rank = 0;
  h.payloadLength = kChallengePayloadSize;
  auto challengeBytes = encodeChallenge(challenge);
  writeSeed(dir, "challenge", h, {challengeBytes.begin(), challengeBytes.end()});
  h.group = group;
  h.rank = 2;

  hello.clientNonce = challenge.nonce;
  hello.authProof = helloProof("seed-secret-0123456789", challenge.nonce, h, hello);
  h.type = FrameType::kHello;
  h.payloadLength = kHelloPayloadSize;
  helloBytes = encodeHello(hello);
  writeSeed(dir, "hello_authenticated", h, {helloBytes.begin(), helloBytes.end()});

  // A worker of one job on a standing pool: the job's name, proven with the job's key.
  hello.jobName = "team-a.train-7";
  hello.authProof = helloProof(*helloKey("seed-secret-0123456789", hello.jobName),
                               challenge.nonce, h, hello);
  helloBytes = encodeHello(hello);
  writeSeed(dir, "hello_job", h, {helloBytes.begin(), helloBytes.end()});
  hello.jobName.clear();

  h.type = FrameType::kHelloAck;
  h.payloadLength = kHelloAckPayloadSize;
  auto ackBytes = encodeHelloAck({64u << 20, 4, 0x000100, 10000});
  writeSeed(dir, "hello_ack", h, {ackBytes.begin(), ackBytes.end()});

  h.type = FrameType::kHeartbeat;
  h.payloadLength = 0;
  writeSeed(dir, "heartbeat", h, {});

  h.type = FrameType::kReduce;
  h.seq = 7;
  h.chunk = 29;
  h.elemOffset = 512;
  h.elemCount = 8;
  h.dtype = rs::DataType::kFloat32;
  h.op = rs::ReduceOp::kSum;
  h.payloadLength = 32;
  std::vector<uint8_t> floats(32);
  for (size_t i = 0; i < floats.size(); i += 4) floats[i + 3] = 0x3F;  // small positive floats
  writeSeed(dir, "reduce_fp32", h, floats);

  h.type = FrameType::kResult;
  h.dtype = rs::DataType::kBfloat16;
  h.op = rs::ReduceOp::kAvg;
  h.elemCount = 16;
  writeSeed(dir, "result_bf16", h, floats);

  const std::string reason = encodeErrorMessage("chunk 29: payload length mismatch");
  const std::vector<uint8_t> reasonBytes(reason.begin(), reason.end());
  h.type = FrameType::kError;
  h.status = static_cast<uint32_t>(rs::StatusCode::kProtocolError);
  h.elemOffset = 0;
  h.elemCount = 0;
  h.dtype = rs::DataType::kInt8;
  h.op = rs::ReduceOp::kSum;
  h.payloadLength = static_cast<uint32_t>(reasonBytes.size());
  writeSeed(dir, "error", h, reasonBytes);

  const std::string abortReason = encodeErrorMessage("rank 3 disconnected: group aborted \xE2\x9C\x97");
  h.type = FrameType::kAbort;
  h.status = static_cast<uint32_t>(rs::StatusCode::kAborted);
  h.payloadLength = static_cast<uint32_t>(abortReason.size());
  writeSeed(dir, "abort", h, {abortReason.begin(), abortReason.end()});

  h.type = FrameType::kReceived;
  h.status = 0;
  h.seq = 0;
  h.payloadLength = 0;
  writeSeed(dir, "received", h, {});
  h.type = FrameType::kCommit;
  writeSeed(dir, "commit", h, {});

  const std::vector<uint32_t> dead = {1, 3};
  auto failover = failoverFrame(group, 2, 29, dead);
  writeSeed(dir, "failover", decodedSeed(failover->header), failover->payload);
  auto lost = lostFrame(group, 2, dead);
  writeSeed(dir, "lost", decodedSeed(lost->header), lost->payload);
  auto lostAfterRejoin = lostFrame(group, 2, dead, /*generation=*/1);
  writeSeed(dir, "lost_generation", decodedSeed(lostAfterRejoin->header),
            lostAfterRejoin->payload);

  // A restarted reducer taken back (proto/FAILOVER.md, "A reducer comes back").
  writeSeed(dir, "join_offer", joinOfferHeader(group, 2), {});
  writeSeed(dir, "join", joinHeader(group, 2, 1200), {});
  writeSeed(dir, "join_at", joinAtHeader(group, 2, 1224), {});

  // A lane's HELLO: stream index 5 of 4 streams (lane (1, 1) under D = {1, 3}).
  hello.streamIndex = 5;
  hello.authProof = {};
  hello.clientNonce = {};
  h = FrameHeader{};
  h.type = FrameType::kHello;
  h.flags = kFlagLane;
  h.group = group;
  h.rank = 2;
  h.payloadLength = kHelloPayloadSize;
  helloBytes = encodeHello(hello);
  writeSeed(dir, "hello_lane", h, {helloBytes.begin(), helloBytes.end()});

  // A redial of a lost reducer: stream 1 of 4, with the rejoin flag.
  hello.streamIndex = 1;
  h.flags = kFlagRejoin;
  helloBytes = encodeHello(hello);
  writeSeed(dir, "hello_rejoin", h, {helloBytes.begin(), helloBytes.end()});

  // Chunk 29's final prefix, 3 of its 8 fp32 elements.
  const FrameHeader final = finalHeader({.group = group,
                                         .rank = 2,
                                         .seq = 7,
                                         .chunk = 29,
                                         .elemOffset = 512,
                                         .elemCount = 8,
                                         .dtype = rs::DataType::kFloat32,
                                         .op = rs::ReduceOp::kSum},
                                        3);
  writeSeed(dir, "final_fp32", final, {floats.begin(), floats.begin() + 12});
  FrameHeader committed = final;
  committed.type = FrameType::kCommitted;
  committed.payloadLength = 0;
  writeSeed(dir, "committed", committed, {});

  // The fabric (proto/FABRIC.md): a HELLO asking for it, its OFFER, ACCEPT and a DECLINE, and
  // a REDUCE whose payload travels on the fabric.
  h = FrameHeader{};
  h.type = FrameType::kHello;
  h.flags = kFlagFabric;
  h.group = group;
  h.rank = 2;
  h.payloadLength = kHelloPayloadSize;
  writeSeed(dir, "hello_fabric", h, {helloBytes.begin(), helloBytes.end()});
  FabricGrant grant;
  grant.provider = "tcp;ofi_rxm";
  grant.address = {0x02, 0x00, 0x9c, 0x40, 0x7f, 0x00, 0x00, 0x01};
  grant.channelId = 17;
  grant.slots = 8;
  grant.slotBytes = 256 << 10;
  grant.ringAddress = 0x7f0012340000;
  grant.ringKey = 0x1234;
  grant.ringSize = uint64_t{grant.slots} * grant.slotBytes;
  auto offer = fabricOfferFrame(group, 2, grant);
  writeSeed(dir, "fabric_offer", decodedSeed(offer->header), offer->payload);
  auto accept = fabricAcceptFrame(group, 2, grant);
  writeSeed(dir, "fabric_accept", decodedSeed(accept->header), accept->payload);
  const FabricFrame decline = fabricDeclineFrame(group, 2, "no fabric on this reducer");
  writeSeed(dir, "fabric_decline", decodedSeed(decline.header), decline.payload);
  FrameHeader viaFabric = final;
  viaFabric.type = FrameType::kReduce;
  viaFabric.flags = kFlagFabric;
  viaFabric.payloadLength = 32;
  writeSeed(dir, "reduce_fabric", viaFabric, {});
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("RS_FUZZ_WRITE_SEEDS")) {
    writeSeeds(dir);
    std::fprintf(stderr, "frame_decoder_fuzz: wrote seeds to %s\n", dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const DecodeLimits defaults;
  // A limit taken from the input, so both sides of the payload-limit check are reached.
  DecodeLimits small{size > kHeaderSize ? uint32_t{data[kHeaderSize]} << 4 : 4096u};

  FrameHeader header;
  decodeAndCheck(data, size, defaults, &header);  // the whole input: only 72 bytes may pass

  if (size >= kHeaderSize) {
    HeaderBytes sealed;
    std::memcpy(sealed.data(), data, kHeaderSize);
    const uint32_t crc = crc32c(sealed.data(), kHeaderSize - 4);
    for (int i = 0; i < 4; ++i) sealed[kHeaderSize - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
    const bool same = std::memcmp(sealed.data(), data, kHeaderSize) == 0;
    if (!same) {
      FrameHeader unsealed;
      require(!decodeHeader(data, kHeaderSize, defaults, &unsealed).isOk(),
              "a wrong checksum is never accepted");
    }
    if (decodeAndCheck(sealed.data(), kHeaderSize, defaults, &header)) {
      // The rest of the input as its payload, and that cut to the length the header names.
      fuzzErrorFrame(header, data + kHeaderSize, size - kHeaderSize);
      fuzzErrorFrame(header, data + kHeaderSize, std::min<size_t>(size - kHeaderSize,
                                                                  header.payloadLength));
      HelloPayload hello;
      if (header.type == FrameType::kHello &&
          decodeHello(data + kHeaderSize, size - kHeaderSize, &hello, helloKind(header))
              .isOk())
        fuzzHelloProof(header, hello);
    }
    FrameHeader limited;
    decodeAndCheck(sealed.data(), kHeaderSize, small, &limited);
    fuzzPayloads(data + kHeaderSize, size - kHeaderSize);  // the payload after a header
  }
  fuzzPayloads(data, size);
  return 0;
}
