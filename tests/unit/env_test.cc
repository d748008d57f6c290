#include "core/common/env.h"

#include <catch2/catch.hpp>
#include <string>
#include <string_view>

#include "tests/support/scoped_env.h"

namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::Equals;

constexpr const char* kName = "RS_ENV_TEST_KNOB";

using rs::test::ScopedEnv;  // the test's own variable kName, set or unset for a scope

enum class Mode { kFast, kSlow };

rs::Result<Mode> parseMode(std::string_view text) {
  if (text == "fast") return Mode::kFast;
  if (text == "slow") return Mode::kSlow;
  return rs::invalidArgument("'" + std::string(text) + "' is not 'fast' or 'slow'");
}

}  // namespace

TEST_CASE("envRaw tells set-but-empty from unset, envString does not") {
  {
    ScopedEnv env(kName, nullptr);
    CHECK_FALSE(rs::envRaw(kName).has_value());
    CHECK_FALSE(rs::envString(kName).has_value());
  }
  {
    ScopedEnv env(kName, "");
    REQUIRE(rs::envRaw(kName).has_value());
    CHECK(rs::envRaw(kName)->empty());
    CHECK_FALSE(rs::envString(kName).has_value());
  }
  {
    ScopedEnv env(kName, "eth0,eth1");
    CHECK(rs::envRaw(kName) == "eth0,eth1");
    CHECK(rs::envString(kName) == "eth0,eth1");
  }
}

TEST_CASE("envUnsigned reads a whole number in range, unset or empty is no value") {
  {
    ScopedEnv env(kName, nullptr);
    auto v = rs::envUnsigned(kName, 1, 256);
    REQUIRE(v.isOk());
    CHECK_FALSE(v->has_value());
  }
  {
    ScopedEnv env(kName, "");
    auto v = rs::envUnsigned(kName, 1, 256);
    REQUIRE(v.isOk());
    CHECK_FALSE(v->has_value());
  }
  for (const char* text : {"1", "17", "256"}) {
    ScopedEnv env(kName, text);
    auto v = rs::envUnsigned(kName, 1, 256);
    REQUIRE(v.isOk());
    CHECK(**v == std::stoull(text));
  }
  {
    ScopedEnv env(kName, "18446744073709551615");
    auto v = rs::envUnsigned(kName, 0, UINT64_MAX);
    REQUIRE(v.isOk());
    CHECK(**v == UINT64_MAX);
  }
}

TEST_CASE("envUnsigned refuses a bad value, naming the variable, the value and the range") {
  for (const char* text : {"0", "257", "abc", "12x", "-1", "+5", " 5", "5 ", "1.5",
                           "99999999999999999999999"}) {
    ScopedEnv env(kName, text);
    auto v = rs::envUnsigned(kName, 1, 256);
    REQUIRE_FALSE(v.isOk());
    CHECK(v.status().code() == rs::StatusCode::kInvalidArgument);
    CHECK_THAT(v.status().message(),
               Equals(std::string(kName) + "='" + text + "' is not an integer in 1..256"));
  }
}

TEST_CASE("envByteSize reads sizes with units and names the variable when it cannot") {
  {
    ScopedEnv env(kName, "64KiB");
    auto v = rs::envByteSize(kName);
    REQUIRE(v.isOk());
    CHECK(**v == 65536);
  }
  {
    ScopedEnv env(kName, "8 parsecs");
    auto v = rs::envByteSize(kName);
    REQUIRE_FALSE(v.isOk());
    CHECK_THAT(v.status().message(), Contains(std::string(kName) + ": '8 parsecs'"));
  }
}

TEST_CASE("envParsed reads a choice through its parser and prefixes the variable's name") {
  {
    ScopedEnv env(kName, "slow");
    auto v = rs::envParsed(kName, &parseMode);
    REQUIRE(v.isOk());
    CHECK(**v == Mode::kSlow);
  }
  {
    ScopedEnv env(kName, "");
    auto v = rs::envParsed(kName, &parseMode);
    REQUIRE(v.isOk());
    CHECK_FALSE(v->has_value());
  }
  {
    ScopedEnv env(kName, "warp");
    auto v = rs::envParsed(kName, &parseMode);
    REQUIRE_FALSE(v.isOk());
    CHECK_THAT(v.status().message(),
               Equals(std::string(kName) + ": 'warp' is not 'fast' or 'slow'"));
  }
}

TEST_CASE("assignIfSet stores a set knob and leaves the default for an unset one") {
  uint64_t streams = 4;
  {
    ScopedEnv env(kName, nullptr);
    REQUIRE(rs::assignIfSet(rs::envUnsigned(kName, 1, 256), &streams).isOk());
    CHECK(streams == 4);
  }
  {
    ScopedEnv env(kName, "8");
    REQUIRE(rs::assignIfSet(rs::envUnsigned(kName, 1, 256), &streams).isOk());
    CHECK(streams == 8);
  }
  {
    ScopedEnv env(kName, "0");
    CHECK_FALSE(rs::assignIfSet(rs::envUnsigned(kName, 1, 256), &streams).isOk());
    CHECK(streams == 8);
  }
}
