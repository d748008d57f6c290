#include "core/common/byte_size.h"

#include <cctype>
#include <charconv>
#include <cstdio>

#include "core/common/text.h"

namespace rs {

Result<uint64_t> parseByteSize(std::string_view text) {
  auto bad = [&](const char* why) {
    return invalidArgument("'" + std::string(text) + "' is not a byte size (" + why +
                           "; e.g. 65536, 64KiB, 4MiB, 1GB)");
  };
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) return bad("no number");
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (ec != std::errc() || ptr != text.data() + digits) return bad("number out of range");
  std::string suffix;
  for (char c : text.substr(digits))
    if (c != ' ') suffix += c;
  suffix = toLower(suffix);
  uint64_t scale = 1;
  if (suffix.empty() || suffix == "b") scale = 1;
  else if (suffix == "k" || suffix == "kib") scale = 1ull << 10;
  else if (suffix == "m" || suffix == "mib") scale = 1ull << 20;
  else if (suffix == "g" || suffix == "gib") scale = 1ull << 30;
  else if (suffix == "t" || suffix == "tib") scale = 1ull << 40;
  else if (suffix == "kb") scale = 1000ull;
  else if (suffix == "mb") scale = 1000ull * 1000;
  else if (suffix == "gb") scale = 1000ull * 1000 * 1000;
  else if (suffix == "tb") scale = 1000ull * 1000 * 1000 * 1000;
  else return bad("unknown unit");
  if (value > UINT64_MAX / scale) return bad("too large");
  return value * scale;
}

std::string formatByteSize(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  if (unit == 0 || v == static_cast<double>(static_cast<uint64_t>(v)))
    std::snprintf(buf, sizeof buf, "%.0f %s", v, kUnits[unit]);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  return buf;
}

}  // namespace rs
