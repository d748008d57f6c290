#include "core/common/text.h"

#include <catch2/catch.hpp>
#include <string>
#include <string_view>
#include <vector>

using SV = std::vector<std::string_view>;

TEST_CASE("trim drops spaces, tabs, CR and LF at both ends only") {
  CHECK(rs::trim("  a b\t\r\n") == "a b");
  CHECK(rs::trim("\tx") == "x");
  CHECK(rs::trim("x") == "x");
  CHECK(rs::trim(" \t\r\n ").empty());
  CHECK(rs::trim("").empty());
}

TEST_CASE("split keeps empty pieces, so a caller can refuse them by position") {
  CHECK(rs::split("a,b,c", ',') == SV{"a", "b", "c"});
  CHECK(rs::split("a,,b", ',') == SV{"a", "", "b"});
  CHECK(rs::split(",a,", ',') == SV{"", "a", ""});
  CHECK(rs::split("", ',') == SV{""});
  CHECK(rs::split("host:1", ',') == SV{"host:1"});
  CHECK(rs::split("a:b", ':') == SV{"a", "b"});
}

TEST_CASE("toLower changes ASCII letters only") {
  CHECK(rs::toLower("KiB") == "kib");
  CHECK(rs::toLower("MiXeD-123_Z") == "mixed-123_z");
  CHECK(rs::toLower("\xC3\x84") == "\xC3\x84");  // UTF-8 stays as it is
}

TEST_CASE("parseUnsigned takes digits only, in uint64 range") {
  CHECK(rs::parseUnsigned("0") == 0u);
  CHECK(rs::parseUnsigned("007") == 7u);
  CHECK(rs::parseUnsigned("18446744073709551615") == UINT64_MAX);
  for (std::string_view bad : {"", "18446744073709551616", "-1", "+1", " 1", "1 ", "1e3",
                               "0x10", "12a"}) {
    CAPTURE(bad);
    CHECK_FALSE(rs::parseUnsigned(bad).has_value());
  }
}

TEST_CASE("quoteText shows untrusted text escaped and cut") {
  CHECK(rs::quoteText("plain") == "\"plain\"");
  CHECK(rs::quoteText("say \"hi\" \\o/") == "\"say \\\"hi\\\" \\\\o/\"");
  CHECK(rs::quoteText(std::string("a\0b\n\x7f", 5)) == "\"a\\x00b\\x0a\\x7f\"");
  CHECK(rs::quoteText(std::string(100, 'x')) == "\"" + std::string(80, 'x') + "...\"");
  CHECK(rs::quoteText("abcdef", 3) == "\"abc...\"");
  CHECK(rs::quoteText("abc", 3) == "\"abc\"");
}

TEST_CASE("escapeText leaves printable ASCII and escapes every other byte") {
  CHECK(rs::escapeText("reducer 2: slot pool exhausted (see \\docs)") ==
        "reducer 2: slot pool exhausted (see \\docs)");
  // A terminal title and screen clear, a C1 control in UTF-8, and a forged second line.
  CHECK(rs::escapeText("\x1b]0;t\x07\x1b[2J\xc2\x9b" "1m\r\n# Out of bounds values : 0 OK") ==
        "\\x1b]0;t\\x07\\x1b[2J\\xc2\\x9b1m\\x0d\\x0a# Out of bounds values : 0 OK");
  CHECK(rs::escapeText(std::string("a\0b\x7f", 4)) == "a\\x00b\\x7f");
  CHECK(rs::escapeText("caf\xC3\xA9") == "caf\\xc3\\xa9");
  CHECK(rs::escapeText("").empty());
  const std::string once = rs::escapeText("\x1b[31mred\n");
  CHECK(rs::escapeText(once) == once);  // idempotent: a reason relayed by a reducer stays readable
}
