// Status and Result: errors as values on the data path (nothing is thrown across async boundaries).
#pragma once

#include <cassert>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace rs {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad configuration or caller input
  kProtocolError,       // a peer sent bytes that break the wire format or the group's state
  kIoError,             // a socket or system call failed
  kTimeout,             // a wait on a peer passed its deadline
  kAborted,             // the collective or group was aborted (by a peer failure or a request)
  kResourceExhausted,   // a configured limit (memory, groups, slots) was reached
  kFailedPrecondition,  // the call is not valid in the object's current state
  kUnavailable,         // the peer is down or draining
  kInternal,            // a broken invariant inside this process
};
// The highest code, as the wire carries codes (numbers, checked against it on decode).
inline constexpr uint32_t kMaxStatusCode = static_cast<uint32_t>(StatusCode::kInternal);

const char* statusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }
  bool isOk() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "<CODE>: <message>", or "OK".
  std::string toString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status protocolError(std::string m) { return {StatusCode::kProtocolError, std::move(m)}; }
inline Status ioError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status timeoutError(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
inline Status abortedError(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
inline Status resourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status failedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status unavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status internalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).isOk() && "a Result needs a value or an error");
  }

  bool isOk() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return isOk(); }
  const Status& status() const {
    static const Status kOkStatus;
    return isOk() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace rs

// Propagates a non-OK Status from the current function.
#define RS_RETURN_IF_ERROR(expr)            \
  do {                                      \
    ::rs::Status rs_status_ = (expr);       \
    if (!rs_status_.isOk()) return rs_status_; \
  } while (0)
