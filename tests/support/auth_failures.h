// How many handshakes a reducer of a LocalPool refused for a failed proof (a wrong or missing
// secret), from its data plane's counters.
#pragma once

#include <cstdint>

#include "server/failure_reason.h"
#include "tests/support/local_pool.h"

namespace rs::test {

inline uint64_t authFailures(LocalPool& pool, int reducer = 0) {
  return pool.reducer(reducer).dataPlane().stats().handshakeFailuresBy[static_cast<size_t>(
      server::HandshakeFailure::kAuth)];
}

}  // namespace rs::test
