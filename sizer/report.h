// What rs-sizer prints: the sized job as text for people or as JSON for scripts, and the
// machine table (--list-types). Formatting only; every number comes from the model.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sizer/job.h"
#include "sizer/prices.h"
#include "sizer/recommend.h"
#include "sizer/sizing.h"

namespace rs::sizer {

struct Report {
  const Job* job = nullptr;
  Sizing sizing;
  std::vector<Prediction> predictions;                // empty without --gradient-bytes
  const Recommendations* recommendations = nullptr;  // --recommend
  const PriceList* prices = nullptr;                 // --prices
};

std::string formatText(const Report& report);
nlohmann::json toJson(const Report& report);

// The built-in table with each row's source, and what it leaves out.
std::string formatTypeTable();
nlohmann::json typeTableJson();

}  // namespace rs::sizer
