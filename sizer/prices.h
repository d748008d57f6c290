// The --prices file: what each reducer machine type costs per hour where the user runs, so that
// --recommend can rank by money as well as by vCPUs. One "type,dollars_per_hour" per line;
// '#' starts a comment; blank lines are skipped. Every bad line is reported with file:line.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/common/status.h"

namespace rs::sizer {

struct PriceList {
  std::string source;  // the file name, for the report
  std::map<std::string, double, std::less<>> dollarsPerHour;

  // The price of `type`, or a negative number when the list has none.
  double priceOf(std::string_view type) const;
  // What `reducers` of `type` cost per hour, to the micro-dollar (so that 25 x 0.57 reads 14.25,
  // not 14.249999999999998); negative when the list has no price for `type`.
  double poolCost(std::string_view type, int64_t reducers) const;
};

// Parses `text` (the file's contents); `fileName` prefixes each error. Types must be in the
// built-in table (a typo would otherwise silently drop a candidate from the cost ranking).
Result<PriceList> parsePrices(std::string_view text, std::string_view fileName);

// Reads and parses the file at `path`.
Result<PriceList> loadPrices(const std::string& path);

}  // namespace rs::sizer
