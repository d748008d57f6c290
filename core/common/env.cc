#include "core/common/env.h"

#include <cstdlib>

#include "core/common/byte_size.h"
#include "core/common/text.h"

namespace rs {

std::optional<std::string> envRaw(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::optional<std::string> envString(const char* name) {
  std::optional<std::string> v = envRaw(name);
  if (v && v->empty()) return std::nullopt;
  return v;
}

Result<std::optional<uint64_t>> envUnsigned(const char* name, uint64_t min, uint64_t max) {
  std::optional<std::string> text = envString(name);
  if (!text) return std::optional<uint64_t>();
  const std::optional<uint64_t> n = parseUnsigned(*text);
  if (!n || *n < min || *n > max)
    return invalidArgument(std::string(name) + "='" + *text + "' is not an integer in " +
                           std::to_string(min) + ".." + std::to_string(max));
  return n;
}

Result<std::optional<uint64_t>> envByteSize(const char* name) {
  return envParsed(name, &parseByteSize);
}

}  // namespace rs
