#include "client/reducer_frames.h"

#include <fmt/format.h>

#include "core/transport/stream_error.h"
#include "core/wire/control_frames.h"

namespace rs::client {

Status decodeReducerHeader(const std::string& name, const std::error_code& readError,
                           const transport::FrameReader& reader, uint64_t maxChunkBytes,
                           wire::FrameHeader* out) {
  if (readError)
    return transport::peerClosed(readError)
               ? unavailableError(name + " closed the connection")
               : ioError(name + ": read failed: " + readError.message());
  wire::DecodeLimits limits;
  limits.maxPayloadBytes = static_cast<uint32_t>(maxChunkBytes);
  if (Status s = wire::decodeHeader(reader.header().data(), wire::kHeaderSize, limits, out);
      !s.isOk())
    return protocolError(name + ": " + s.message());
  return Status::ok();
}

Status reducerRefusal(const std::string& name, const wire::FrameHeader& header,
                      const std::string& text, const std::error_code& readError) {
  wire::PeerError peer;
  if (readError || !wire::parseErrorFrame(header, reinterpret_cast<const uint8_t*>(text.data()),
                                          text.size(), &peer)
                        .isOk()) {
    peer.abort = header.type == wire::FrameType::kAbort;
    peer.code = wire::errorCode(header);
    peer.reason = "(no readable reason)";
  }
  return Status(peer.code, fmt::format("{} {}: {}", name,
                                       peer.abort ? "aborted the group" : "refused",
                                       peer.reason));
}

}  // namespace rs::client
