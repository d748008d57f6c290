#include "sizer/prices.h"

#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/common/text.h"
#include "sizer/machine_types.h"
#include "sizer/numbers.h"

namespace rs::sizer {

namespace {
// Dollars per hour beyond any machine's; a pool's cost (at most a billion reducers) stays finite.
constexpr double kMostDollarsPerHour = 100'000;
}  // namespace

double PriceList::priceOf(std::string_view type) const {
  const auto it = dollarsPerHour.find(type);
  return it == dollarsPerHour.end() ? -1.0 : it->second;
}

double PriceList::poolCost(std::string_view type, int64_t reducers) const {
  const double price = priceOf(type);
  if (price <= 0) return -1.0;
  return std::round(price * static_cast<double>(reducers) * 1e6) / 1e6;
}

Result<PriceList> parsePrices(std::string_view text, std::string_view fileName) {
  PriceList out;
  out.source = std::string(fileName);
  std::map<std::string, size_t, std::less<>> firstLine;
  std::vector<std::string> errors;
  size_t lineNo = 0;
  while (!text.empty()) {
    ++lineNo;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;

    const std::string where = fmt::format("{}:{}", fileName, lineNo);
    const size_t comma = line.find(',');
    if (comma == std::string_view::npos || line.find(',', comma + 1) != std::string_view::npos) {
      errors.push_back(
          fmt::format("{}: expected 'type,dollars_per_hour', got '{}'", where, line));
      continue;
    }
    const std::string type(trim(line.substr(0, comma)));
    const std::string_view priceText = trim(line.substr(comma + 1));
    if (type.empty()) {
      errors.push_back(fmt::format("{}: no machine type before the comma", where));
      continue;
    }
    if (findMachineType(type) == nullptr) {
      errors.push_back(fmt::format("{}: unknown machine type '{}' (nearest known: {})", where,
                                   type, fmt::join(nearestMachineTypes(type), ", ")));
      continue;
    }
    auto price = parseNumber(priceText, where + ": price");
    if (!price) {
      errors.push_back(price.status().message());
      continue;
    }
    if (*price <= 0) {
      errors.push_back(fmt::format("{}: price must be more than 0 dollars per hour, got {}",
                                   where, priceText));
      continue;
    }
    if (*price > kMostDollarsPerHour) {
      errors.push_back(fmt::format("{}: price must be at most {:g} dollars per hour, got {}",
                                   where, kMostDollarsPerHour, priceText));
      continue;
    }
    if (auto [it, fresh] = firstLine.emplace(type, lineNo); !fresh) {
      errors.push_back(fmt::format("{}: {} is priced twice (first at line {})", where, type,
                                   it->second));
      continue;
    }
    out.dollarsPerHour.emplace(type, *price);
  }
  if (!errors.empty()) return invalidArgument(fmt::format("{}", fmt::join(errors, "\n")));
  if (out.dollarsPerHour.empty())
    return invalidArgument(fmt::format("{}: no prices in the file", fileName));
  return out;
}

Result<PriceList> loadPrices(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalidArgument(fmt::format("--prices: cannot read '{}'", path));
  std::ostringstream text;
  text << in.rdbuf();
  return parsePrices(text.str(), path);
}

}  // namespace rs::sizer
