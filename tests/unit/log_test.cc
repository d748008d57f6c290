#include "core/common/log.h"

#include <catch2/catch.hpp>

TEST_CASE("JSON log escaping keeps every line one valid JSON string") {
  CHECK(rs::jsonEscape("plain") == "plain");
  CHECK(rs::jsonEscape("a \"quoted\" \\path\\") == "a \\\"quoted\\\" \\\\path\\\\");
  CHECK(rs::jsonEscape("line\nbreak\ttab\r") == "line\\nbreak\\ttab\\r");
  CHECK(rs::jsonEscape(std::string("nul\0bell\a", 9)) == "nul\\u0000bell\\u0007");
}

TEST_CASE("logging configuration refuses unknown levels and formats with the reason") {
  CHECK(rs::configureLogging("info", "text").isOk());
  CHECK(rs::configureLogging("warn", "json").isOk());
  rs::Status badLevel = rs::configureLogging("loud", "text");
  CHECK(badLevel.message().find("'loud'") != std::string::npos);
  rs::Status badFormat = rs::configureLogging("info", "xml");
  CHECK(badFormat.message().find("'xml'") != std::string::npos);
  CHECK(rs::configureLogging("info", "text").isOk());
}
