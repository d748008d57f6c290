// What a member makes of the frames a reducer sends on a data stream, in the handshake
// (client/handshake.h) and after it (client/connection.h) alike: a header that cannot be read
// or decoded, and an ERROR or ABORT frame, each end the stream with a status that names it
// ("reducer 2 (10.0.0.7:2222) stream 1").
#pragma once

#include <cstdint>
#include <string>
#include <system_error>

#include "core/common/status.h"
#include "core/transport/frame_reader.h"
#include "core/wire/frame.h"

namespace rs::client {

// The header `reader` has just read on stream `name` (`readError`: how that read ended), decoded
// into *out with payloads up to `maxChunkBytes`; else why the stream ends (the reducer closed
// it, the read failed, the header is malformed).
Status decodeReducerHeader(const std::string& name, const std::error_code& readError,
                           const transport::FrameReader& reader, uint64_t maxChunkBytes,
                           wire::FrameHeader* out);

// The failure an ERROR or ABORT frame (`header`, then its payload `text`, read as `readError`
// says) ends stream `name` with: the reducer's code and its reason, escaped, or "(no readable
// reason)".
Status reducerRefusal(const std::string& name, const wire::FrameHeader& header,
                      const std::string& text, const std::error_code& readError);

}  // namespace rs::client
