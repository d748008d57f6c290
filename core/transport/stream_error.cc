#include "core/transport/stream_error.h"

#include <asio/error.hpp>

namespace rs::transport {
namespace {

// Asio's codes are in its own "asio.system" category, which std::errc conditions do not match,
// so each class is asked both ways: Asio's code (the TCP stream) or the std::errc one (a
// transport that makes its codes with std::make_error_code, or std::system_category's errno).
bool isEither(const std::error_code& error, asio::error::basic_errors asioCode, std::errc generic) {
  return error == asioCode || error == generic;
}

}  // namespace

StreamError classify(const std::error_code& error) {
  if (!error) return StreamError::kNone;
  if (error == asio::error::eof) return StreamError::kPeerClosed;
  if (isEither(error, asio::error::operation_aborted, std::errc::operation_canceled))
    return StreamError::kCancelled;
  if (isEither(error, asio::error::timed_out, std::errc::timed_out)) return StreamError::kTimedOut;
  if (isEither(error, asio::error::connection_reset, std::errc::connection_reset) ||
      isEither(error, asio::error::broken_pipe, std::errc::broken_pipe) ||
      isEither(error, asio::error::connection_aborted, std::errc::connection_aborted))
    return StreamError::kLost;
  return StreamError::kFailed;
}

const char* toString(StreamError error) {
  switch (error) {
    case StreamError::kNone: return "none";
    case StreamError::kPeerClosed: return "peer closed";
    case StreamError::kLost: return "lost";
    case StreamError::kTimedOut: return "timed out";
    case StreamError::kCancelled: return "cancelled";
    case StreamError::kFailed: return "failed";
  }
  return "?";
}

}  // namespace rs::transport
