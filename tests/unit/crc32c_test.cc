// CRC-32C known answers (RFC 3720 B.4 and the common "123456789" check value), through the
// dispatched path (the CPU's instruction where there is one), which must equal the table.
#include "core/wire/crc32c.h"

#include <array>
#include <cstring>
#include <string_view>

#include <catch2/catch.hpp>

using rs::wire::crc32c;

namespace {
uint32_t crcOf(std::string_view s) { return crc32c(s.data(), s.size()); }
}  // namespace

TEST_CASE("crc32c: check value of \"123456789\"") { REQUIRE(crcOf("123456789") == 0xE3069283u); }

TEST_CASE("crc32c: empty input is 0") {
  REQUIRE(crc32c(nullptr, 0) == 0u);
  REQUIRE(crcOf("") == 0u);
}

TEST_CASE("crc32c: RFC 3720 iSCSI vectors") {
  std::array<uint8_t, 32> buf{};
  REQUIRE(crc32c(buf.data(), buf.size()) == 0x8A9136AAu);  // 32 zero bytes
  buf.fill(0xFF);
  REQUIRE(crc32c(buf.data(), buf.size()) == 0x62A8AB43u);  // 32 bytes of 0xFF
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i);
  REQUIRE(crc32c(buf.data(), buf.size()) == 0x46DD794Eu);  // 0x00..0x1F
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(31 - i);
  REQUIRE(crc32c(buf.data(), buf.size()) == 0x113FDB5Cu);  // 0x1F..0x00
}

TEST_CASE("crc32c: short known answers") {
  REQUIRE(crcOf("a") == 0xC1D04330u);
  REQUIRE(crcOf("abc") == 0x364B3FB7u);
  REQUIRE(crcOf("The quick brown fox jumps over the lazy dog") == 0x22620404u);
}

TEST_CASE("crc32c: computed in pieces equals computed at once") {
  std::array<uint8_t, 200> buf{};
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 7 + 3);
  const uint32_t whole = crc32c(buf.data(), buf.size());
  for (size_t cut = 0; cut <= buf.size(); cut += 13) {
    uint32_t first = crc32c(buf.data(), cut);
    REQUIRE(crc32c(buf.data() + cut, buf.size() - cut, first) == whole);
  }
}

TEST_CASE("crc32c: every single-bit change changes the value") {
  std::array<uint8_t, 68> buf{};
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i);
  const uint32_t base = crc32c(buf.data(), buf.size());
  for (size_t bit = 0; bit < buf.size() * 8; ++bit) {
    buf[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    REQUIRE(crc32c(buf.data(), buf.size()) != base);
    buf[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  }
}

TEST_CASE("crc32c: the CPU's instruction path equals the table at every length and alignment") {
  std::array<uint8_t, 300> buf{};
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 131 + 17);
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t size = 0; offset + size <= buf.size(); ++size) {
      const uint8_t* p = buf.data() + offset;
      REQUIRE(crc32c(p, size) == rs::wire::crc32cPortable(p, size));
      REQUIRE(crc32c(p, size, 0x12345678u) == rs::wire::crc32cPortable(p, size, 0x12345678u));
    }
  }
  REQUIRE(rs::wire::crc32cPortable("123456789", 9) == 0xE3069283u);
}
