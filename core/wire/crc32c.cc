#include "core/wire/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace rs::wire {
namespace {

constexpr uint32_t kPolyReflected = 0x82F63B78u;

// One table entry per byte value, built at compile time so there is no init-order question.
constexpr std::array<uint32_t, 256> makeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? (c >> 1) ^ kPolyReflected : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kTable = makeTable();

// Both kernels take and return the register value (the CRC without its final XOR).
uint32_t updateTable(const uint8_t* p, size_t size, uint32_t c) {
  for (size_t i = 0; i < size; ++i) c = kTable[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
// The crc32 instruction computes exactly this CRC (Castagnoli, reflected), 8 bytes at a time.
__attribute__((target("sse4.2"))) uint32_t updateSse42(const uint8_t* p, size_t size,
                                                       uint32_t c) {
  uint64_t c64 = c;
  for (; size >= 8; size -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof(word));
    c64 = _mm_crc32_u64(c64, word);
  }
  auto c32 = static_cast<uint32_t>(c64);
  for (; size > 0; --size, ++p) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}

bool haveSse42() {
  static const bool have = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") != 0;
  }();
  return have;
}
#endif

}  // namespace

uint32_t crc32c(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  if (haveSse42()) return ~updateSse42(p, size, ~crc);
#endif
  return ~updateTable(p, size, ~crc);  // ~crc undoes the previous final XOR, so pieces chain
}

uint32_t crc32cPortable(const void* data, size_t size, uint32_t crc) {
  return ~updateTable(static_cast<const uint8_t*>(data), size, ~crc);
}

}  // namespace rs::wire
