// A nonce told from others by its first byte, for the replay checks.
#pragma once

#include <cstdint>

#include "core/wire/frame.h"

namespace rs::test {

inline wire::Nonce nonceOf(uint8_t n) {
  wire::Nonce x{};
  x[0] = n;
  return x;
}

}  // namespace rs::test
