#include "sizer/numbers.h"

#include <charconv>
#include <cmath>
#include <fmt/format.h>

#include "core/common/text.h"

namespace rs::sizer {

Result<double> parseNumber(std::string_view text, std::string_view what) {
  const std::string_view t = trim(text);
  double value = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !std::isfinite(value))
    return invalidArgument(fmt::format("{}: '{}' is not a number", what, text));
  return value;
}

Result<int64_t> parseInteger(std::string_view text, std::string_view what) {
  const std::string_view t = trim(text);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size())
    return invalidArgument(fmt::format("{}: '{}' is not a whole number", what, text));
  return value;
}

}  // namespace rs::sizer
