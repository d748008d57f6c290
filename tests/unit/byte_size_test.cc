#include "core/common/byte_size.h"

#include <catch2/catch.hpp>

using rs::formatByteSize;
using rs::parseByteSize;

TEST_CASE("byte sizes parse with binary and decimal units") {
  CHECK(*parseByteSize("65536") == 65536);
  CHECK(*parseByteSize("64K") == 65536);
  CHECK(*parseByteSize("64KiB") == 65536);
  CHECK(*parseByteSize("4 MiB") == 4u << 20);
  CHECK(*parseByteSize("1g") == 1ull << 30);
  CHECK(*parseByteSize("1GB") == 1000000000ull);
  CHECK(*parseByteSize("2T") == 2ull << 40);
}

TEST_CASE("malformed byte sizes say why") {
  CHECK(parseByteSize("").status().message().find("no number") != std::string::npos);
  CHECK(parseByteSize("MiB").status().message().find("no number") != std::string::npos);
  CHECK(parseByteSize("12XB").status().message().find("unknown unit") != std::string::npos);
  CHECK(parseByteSize("99999999999999999999").status().message().find("range") !=
        std::string::npos);
  CHECK(parseByteSize("17179869184G").status().message().find("too large") != std::string::npos);
}

TEST_CASE("byte sizes format for logs") {
  CHECK(formatByteSize(17) == "17 B");
  CHECK(formatByteSize(1 << 20) == "1 MiB");
  CHECK(formatByteSize(1536) == "1.5 KiB");
}
