// StreamError (core/transport/stream_error.h): which class each error code a stream may hand
// its owner falls in, by Asio's codes (what the TCP stream produces), by std::errc codes (what
// another transport may produce), and never by the number alone.
#include "core/transport/stream_error.h"

#include <asio/error.hpp>
#include <catch2/catch.hpp>

#include <cerrno>
#include <system_error>
#include <vector>

using rs::transport::classify;
using rs::transport::StreamError;

namespace {

struct StreamErrorCase {
  std::error_code code;
  StreamError expected;
};

void checkStreamErrorCases(const std::vector<StreamErrorCase>& cases) {
  for (const StreamErrorCase& c : cases) {
    INFO(c.code.category().name() << " " << c.code.value() << ": " << c.code.message());
    CHECK(toString(classify(c.code)) == std::string(toString(c.expected)));
    CHECK(rs::transport::peerClosed(c.code) == (c.expected == StreamError::kPeerClosed));
    CHECK(rs::transport::timedOut(c.code) == (c.expected == StreamError::kTimedOut));
    CHECK(rs::transport::cancelled(c.code) == (c.expected == StreamError::kCancelled));
  }
}

}  // namespace

TEST_CASE("stream error: no error is none of the classes") {
  checkStreamErrorCases({{std::error_code(), StreamError::kNone}});
}

TEST_CASE("stream error: Asio's codes, as the TCP stream hands them over") {
  checkStreamErrorCases({
      {asio::error::eof, StreamError::kPeerClosed},
      {asio::error::connection_reset, StreamError::kLost},
      {asio::error::broken_pipe, StreamError::kLost},
      {asio::error::connection_aborted, StreamError::kLost},
      {asio::error::timed_out, StreamError::kTimedOut},
      {asio::error::operation_aborted, StreamError::kCancelled},
      // The rest fail with their own message.
      {asio::error::connection_refused, StreamError::kFailed},
      {asio::error::host_unreachable, StreamError::kFailed},
      {asio::error::network_unreachable, StreamError::kFailed},
      {asio::error::no_descriptors, StreamError::kFailed},
      {asio::error::bad_descriptor, StreamError::kFailed},
      {asio::error::not_connected, StreamError::kFailed},
      {asio::error::shut_down, StreamError::kFailed},
      {asio::error::not_found, StreamError::kFailed},
      {asio::error::host_not_found, StreamError::kFailed},
  });
}

TEST_CASE("stream error: errno values read from the socket itself (sendmsg, SO_ERROR)") {
  checkStreamErrorCases({
      {std::error_code(ECONNRESET, asio::error::get_system_category()), StreamError::kLost},
      {std::error_code(EPIPE, asio::error::get_system_category()), StreamError::kLost},
      {std::error_code(ETIMEDOUT, asio::error::get_system_category()), StreamError::kTimedOut},
      {std::error_code(EHOSTUNREACH, asio::error::get_system_category()), StreamError::kFailed},
  });
}

TEST_CASE("stream error: std::errc codes, as another transport may produce them") {
  checkStreamErrorCases({
      {std::make_error_code(std::errc::connection_reset), StreamError::kLost},
      {std::make_error_code(std::errc::broken_pipe), StreamError::kLost},
      {std::make_error_code(std::errc::connection_aborted), StreamError::kLost},
      {std::make_error_code(std::errc::timed_out), StreamError::kTimedOut},
      {std::make_error_code(std::errc::operation_canceled), StreamError::kCancelled},
      {std::make_error_code(std::errc::not_enough_memory), StreamError::kFailed},
      // errno in the standard library's system category maps onto the same conditions.
      {std::error_code(ECONNRESET, std::system_category()), StreamError::kLost},
      {std::error_code(ETIMEDOUT, std::system_category()), StreamError::kTimedOut},
      {std::error_code(ECANCELED, std::system_category()), StreamError::kCancelled},
  });
}

TEST_CASE("stream error: the category counts, not the number") {
  // Asio's eof is 2 in its own category; 2 as an errno is ENOENT, and ECONNRESET's number in
  // Asio's misc category is not a reset either.
  REQUIRE(static_cast<int>(asio::error::eof) == 2);
  checkStreamErrorCases({
      {std::error_code(2, asio::error::get_system_category()), StreamError::kFailed},
      {std::error_code(ECONNRESET, asio::error::get_misc_category()), StreamError::kFailed},
  });
}
