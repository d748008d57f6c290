// Driving an io_context from the test's own thread until a state is reached (a handler ran, a
// counter moved), within the deadline of wait_until.h that only turns a hang into a failure.
#pragma once

#include <asio/io_context.hpp>
#include <functional>

#include "tests/support/wait_until.h"

namespace rs::test {

inline bool runUntil(asio::io_context& io, const std::function<bool()>& done) {
  const bool ok = waitUntil([&] {
    io.poll();
    return done();
  });
  io.restart();
  return ok;
}

}  // namespace rs::test
