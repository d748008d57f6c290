// Small text helpers for parsing flags, environment variables and specs, written once here.
// Joining is fmt::join; prefix and suffix tests are std::string_view's starts_with/ends_with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rs {

// `s` without leading and trailing white space (spaces, tabs, CR, LF).
std::string_view trim(std::string_view s);

// The pieces of `s` between separators, empty pieces included ("a,,b" -> "a", "", "b"; "" -> one
// empty piece), so that a caller can refuse them by position.
std::vector<std::string_view> split(std::string_view s, char separator);

// ASCII lower case; other bytes unchanged.
std::string toLower(std::string_view s);

// A whole decimal number: digits only (no sign, no blanks) and in uint64 range; else nullopt.
std::optional<uint64_t> parseUnsigned(std::string_view s);

// Untrusted text for an error message: in double quotes, '"' and '\' escaped, other bytes
// outside printable ASCII as \xNN, and cut to `maxShown` bytes with "..." after.
std::string quoteText(std::string_view s, size_t maxShown = 80);

// Untrusted running text (a peer's error reason) made safe to log: every byte outside printable
// ASCII as \xNN (control characters, DEL, and each byte of a non-ASCII character), so that it
// can neither drive a terminal nor start a line of its own. Printable ASCII stays as it is, so
// escaping twice changes nothing.
std::string escapeText(std::string_view s);

}  // namespace rs
