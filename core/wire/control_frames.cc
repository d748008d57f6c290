#include "core/wire/control_frames.h"

#include <string_view>

#include "core/common/text.h"
#include "core/wire/auth.h"

namespace rs::wire {

Result<HelloFrame> helloFrame(const GroupId& group, uint32_t rank, HelloPayload hello,
                              std::string_view secret, const Nonce& reducerNonce,
                              uint16_t flags) {
  FrameHeader h;
  h.type = FrameType::kHello;
  h.flags = flags;
  h.group = group;
  h.rank = rank;
  h.payloadLength = kHelloPayloadSize;
  hello.clientNonce = {};
  hello.authProof = {};
  if (!secret.empty()) {
    auto nonce = randomNonce();
    if (!nonce) return nonce.status();
    hello.clientNonce = *nonce;
    hello.authProof = helloProof(secret, reducerNonce, h, hello);
  }
  return HelloFrame{encodeHeader(h), encodeHello(hello)};
}
namespace {

FrameHeader dataHeader(FrameType type, const ChunkFields& c) {
  FrameHeader h;
  h.type = type;
  h.group = c.group;
  h.rank = c.rank;
  h.seq = c.seq;
  h.chunk = c.chunk;
  h.elemOffset = c.elemOffset;
  h.elemCount = c.elemCount;
  h.dtype = c.dtype;
  h.op = c.op;
  h.payloadLength = static_cast<uint32_t>(uint64_t{c.elemCount} * dataTypeSize(c.dtype));
  return h;
}


ErrorFrame failureFrame(FrameType type, const GroupId& group, uint32_t rank,
                        const Status& reason) {
  ErrorFrame frame;
  frame.reason = encodeErrorMessage(reason.message());
  FrameHeader h;
  h.type = type;
  h.group = group;
  h.rank = rank;
  h.status = static_cast<uint32_t>(reason.isOk() ? StatusCode::kInternal : reason.code());
  h.payloadLength = static_cast<uint32_t>(frame.reason.size());
  encodeHeader(h, frame.header.data());
  return frame;
}

Status messageError(const std::string& what) { return protocolError("error message: " + what); }

}  // namespace

FrameHeader reduceHeader(const ChunkFields& chunk) {
  return dataHeader(FrameType::kReduce, chunk);
}

FrameHeader resultHeader(const ChunkFields& chunk) {
  return dataHeader(FrameType::kResult, chunk);
}

FrameHeader headerOnly(FrameType type, const GroupId& group, uint32_t rank, uint64_t chunk) {
  FrameHeader h;
  h.type = type;
  h.group = group;
  h.rank = rank;
  h.chunk = chunk;
  return h;
}

HeaderBytes heartbeatFrame(const GroupId& group, uint32_t rank) {
  return encodeHeader(headerOnly(FrameType::kHeartbeat, group, rank, 0));
}

FrameHeader receivedHeader(const GroupId& group, uint32_t rank, uint64_t chunk) {
  return headerOnly(FrameType::kReceived, group, rank, chunk);
}

FrameHeader commitHeader(const GroupId& group, uint32_t rank, uint64_t chunk) {
  return headerOnly(FrameType::kCommit, group, rank, chunk);
}

ErrorFrame errorFrame(const GroupId& group, uint32_t rank, const Status& reason) {
  return failureFrame(FrameType::kError, group, rank, reason);
}

ErrorFrame abortFrame(const GroupId& group, uint32_t rank, const Status& reason) {
  return failureFrame(FrameType::kAbort, group, rank, reason);
}

StatusCode errorCode(const FrameHeader& header) {
  return header.status >= 1 && header.status <= kMaxStatusCode
             ? static_cast<StatusCode>(header.status)
             : StatusCode::kAborted;
}

Status parseErrorFrame(const FrameHeader& header, const uint8_t* payload, size_t size,
                       PeerError* out) {
  if (header.type != FrameType::kError && header.type != FrameType::kAbort) {
    return messageError("frame type " + std::string(frameTypeName(header.type)) +
                        " (expected ERROR or ABORT)");
  }
  if (header.status == 0 || header.status > kMaxStatusCode) {
    return messageError("header status " + std::to_string(header.status) +
                        " (expected a failure code 1.." + std::to_string(kMaxStatusCode) + ")");
  }
  if (size != header.payloadLength) {
    return messageError(std::to_string(size) + " bytes (expected the header's payloadLength " +
                        std::to_string(header.payloadLength) + ")");
  }
  std::string reason;
  RS_RETURN_IF_ERROR(decodeErrorMessage(payload, size, &reason));  // the limit and the text
  out->abort = header.type == FrameType::kAbort;
  out->code = static_cast<StatusCode>(header.status);
  out->reason = escapeText(reason);
  return Status::ok();
}

}  // namespace rs::wire
