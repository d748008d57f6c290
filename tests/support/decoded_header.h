// A frame header's encoded bytes decoded back, as a test's precondition: decoding must succeed.
#pragma once

#include <catch2/catch.hpp>

#include "core/wire/frame.h"

namespace rs::test {

inline wire::FrameHeader decodedHeader(const wire::HeaderBytes& bytes) {
  wire::FrameHeader h;
  const Status s = wire::decodeHeader(bytes.data(), bytes.size(), wire::DecodeLimits{}, &h);
  INFO("status: " << s.toString());
  REQUIRE(s.isOk());
  return h;
}

}  // namespace rs::test
