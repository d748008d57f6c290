// Strict number parsing for flags and the prices file: the whole text must be one finite number,
// so "10Gbps", "1e400" and "nan" are errors that name the input, never a silent 0 or infinity.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/common/status.h"

namespace rs::sizer {

// A finite decimal number ("32", "2.5", "1e2"). `what` names the input in the error
// ("--worker-gbps", "prices.csv:3: price").
Result<double> parseNumber(std::string_view text, std::string_view what);

// A whole number in int64 range ("16", "-3").
Result<int64_t> parseInteger(std::string_view text, std::string_view what);

}  // namespace rs::sizer
