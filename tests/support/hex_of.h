// Bytes as lowercase hex, two digits a byte, for comparing encodings with the spec's bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace rs::test {

inline std::string hexOf(const uint8_t* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s.push_back(kDigits[p[i] >> 4]);
    s.push_back(kDigits[p[i] & 0xF]);
  }
  return s;
}

template <size_t N>
std::string hexOf(const std::array<uint8_t, N>& bytes) {
  return hexOf(bytes.data(), bytes.size());
}

}  // namespace rs::test
