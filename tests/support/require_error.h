// Asserting that a call failed with the expected code and a message that names what was wrong.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "core/common/status.h"

namespace rs::test {

inline void requireError(const Status& s, StatusCode code, const std::string& fragment) {
  INFO("status: " << s.toString());
  REQUIRE(s.code() == code);
  REQUIRE_THAT(s.message(), Catch::Matchers::Contains(fragment));
}

template <typename T>
void requireError(const Result<T>& r, StatusCode code, const std::string& fragment) {
  requireError(r.status(), code, fragment);
}

}  // namespace rs::test
