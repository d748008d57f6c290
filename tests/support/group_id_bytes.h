// A group id as the control plane's messages carry it: 16 bytes, hi then lo, each big-endian.
#pragma once

#include <cstddef>
#include <string>

#include "core/wire/group_id.h"

namespace rs::test {

inline std::string idBytes(const GroupId& id) {
  std::string out(16, '\0');
  for (int i = 0; i < 8; ++i) {
    out[static_cast<size_t>(i)] = static_cast<char>(id.hi >> (56 - 8 * i));
    out[static_cast<size_t>(i + 8)] = static_cast<char>(id.lo >> (56 - 8 * i));
  }
  return out;
}

}  // namespace rs::test
