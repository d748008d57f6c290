// Asserting that a parse refused its input with a message that names what was wrong.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "core/common/status.h"

namespace rs::test {

template <typename T>
void requireInvalid(const Result<T>& r, const std::string& fragment) {
  INFO("status: " << r.status().toString());
  REQUIRE_FALSE(r.isOk());
  REQUIRE(r.status().code() == StatusCode::kInvalidArgument);
  REQUIRE_THAT(r.status().message(), Catch::Matchers::Contains(fragment));
}

}  // namespace rs::test
