// Environment knobs (RS_*, NCCL_RS_*, CLUSTER_SPEC, ...): one reader, so that every variable is
// read the same way and a bad value is refused with a message that names the variable and the
// value. For knobs an empty value is the same as an unset one; envRaw keeps the difference for
// the few variables whose presence alone means something.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/common/status.h"

namespace rs {

// The value of `name`, empty or not; nullopt when it is unset.
std::optional<std::string> envRaw(const char* name);

// The value of `name`; nullopt when it is unset or empty.
std::optional<std::string> envString(const char* name);

// A whole number in min..max; nullopt when unset or empty.
// Refused: "RS_STREAMS='x' is not an integer in 1..256".
Result<std::optional<uint64_t>> envUnsigned(const char* name, uint64_t min, uint64_t max);

// A byte size such as 65536, 64KiB or 8MiB (parseByteSize); nullopt when unset or empty.
Result<std::optional<uint64_t>> envByteSize(const char* name);

// A value read by `parse` (a choice such as "threads" or "caller"); nullopt when unset or empty.
// Refused: "NAME: " and parse's own message.
template <typename T>
Result<std::optional<T>> envParsed(const char* name, Result<T> (*parse)(std::string_view)) {
  std::optional<std::string> text = envString(name);
  if (!text) return std::optional<T>();
  Result<T> value = parse(*text);
  if (!value) return invalidArgument(std::string(name) + ": " + value.status().message());
  return std::optional<T>(std::move(*value));
}

// Stores a knob read above into *out when it is set; an unset one leaves *out alone.
template <typename T>
Status assignIfSet(Result<std::optional<T>> knob, T* out) {
  if (!knob) return knob.status();
  if (*knob) *out = std::move(**knob);
  return Status::ok();
}

}  // namespace rs
