#include "core/wire/group_id.h"

#include <exception>
#include <optional>
#include <random>
#include <string_view>

#include "core/common/text.h"

namespace rs {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void appendHex(uint64_t v, std::string* out) {
  for (int shift = 60; shift >= 0; shift -= 4) out->push_back(kHexDigits[(v >> shift) & 0xF]);
}

// How much of an untrusted id an error message shows: more than an id's 32 digits, not a page.
constexpr size_t kMaxShown = 48;

}  // namespace

std::string GroupId::toString() const {
  std::string out;
  out.reserve(32);
  appendHex(hi, &out);
  appendHex(lo, &out);
  return out;
}

Result<GroupId> GroupId::parse(std::string_view hex) {
  if (hex.size() != 32) {
    return invalidArgument("group id: expected 32 hex digits, got " + std::to_string(hex.size()) +
                           " characters " + quoteText(hex, kMaxShown));
  }
  GroupId id;
  for (size_t i = 0; i < hex.size(); ++i) {
    int v = hexValue(hex[i]);
    if (v < 0) {
      return invalidArgument("group id: character " + std::to_string(i) + " of " +
                             quoteText(hex, kMaxShown) + " is not a hex digit");
    }
    uint64_t& half = i < 16 ? id.hi : id.lo;
    half = (half << 4) | static_cast<uint64_t>(v);
  }
  return id;
}

GroupId GroupId::random() {
  // Unpredictable ids, so two jobs sharing a reducer never collide by accident. libstdc++'s
  // "getentropy" token reads getrandom(2); where a library lacks it, its default source will do.
  std::optional<std::random_device> device;
  try {
    device.emplace("getentropy");
  } catch (const std::exception&) {
    device.emplace();
  }
  std::random_device& rd = *device;
  GroupId id;
  do {
    auto word = [&rd] { return static_cast<uint64_t>(rd()) << 32 | static_cast<uint64_t>(rd()); };
    id.hi = word();
    id.lo = word();
  } while (id.isZero());  // the all-zero id means "unset"
  return id;
}

}  // namespace rs
