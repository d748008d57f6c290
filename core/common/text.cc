#include "core/common/text.h"

#include <charconv>

namespace rs {

std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpaces = " \t\r\n";
  const size_t first = s.find_first_not_of(kSpaces);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpaces) - first + 1);
}

std::vector<std::string_view> split(std::string_view s, char separator) {
  std::vector<std::string_view> out;
  while (true) {
    const size_t at = s.find(separator);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

std::string toLower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::optional<uint64_t> parseUnsigned(std::string_view s) {
  // from_chars stops at the first non-digit: the whole text must be consumed.
  if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

namespace {

bool isPrintableAscii(unsigned char c) { return c >= 0x20 && c < 0x7F; }

void appendHexEscape(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out.push_back(kHex[c >> 4]);
  out.push_back(kHex[c & 0xF]);
}

}  // namespace

std::string quoteText(std::string_view s, size_t maxShown) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < maxShown; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (isPrintableAscii(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      appendHexEscape(out, c);
    }
  }
  if (s.size() > maxShown) out += "...";
  return out + "\"";
}

std::string escapeText(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (isPrintableAscii(c)) out.push_back(ch);
    else appendHexEscape(out, c);
  }
  return out;
}

}  // namespace rs
