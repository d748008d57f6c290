// DelayedCalls on an io_context of the test's own: every target added is called once, in the
// order added, unless it is gone by then; cancel() calls nothing more.
#include "core/transport/delayed_calls.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "tests/support/wait_until.h"

namespace rs::transport {
namespace {

struct Target {
  std::vector<int>* calls = nullptr;
  int id = 0;
  void call() { calls->push_back(id); }
};

// Runs `io` until `done` holds (the deadline only turns a hang into a failure). It stops when
// out of work, so each run restarts it first.
bool runHandlersUntil(asio::io_context& io, const std::function<bool()>& done) {
  io.restart();
  const auto end = std::chrono::steady_clock::now() + test::kStateDeadline;
  while (!done() && std::chrono::steady_clock::now() < end)
    io.run_one_for(std::chrono::milliseconds(100));
  return done();
}

}  // namespace

TEST_CASE("delayed calls: each target once, in order, none that is gone", "[transport]") {
  asio::io_context io;
  DelayedCalls<Target> delayed(io, std::chrono::milliseconds(2), &Target::call);
  std::vector<int> calls;
  auto a = std::make_shared<Target>(Target{&calls, 1});
  auto gone = std::make_shared<Target>(Target{&calls, 2});
  auto c = std::make_shared<Target>(Target{&calls, 3});
  delayed.add(a);
  delayed.add(gone);
  delayed.add(c);
  gone.reset();
  REQUIRE(runHandlersUntil(io, [&] { return calls.size() == 2; }));
  CHECK(calls == std::vector<int>{1, 3});
  // A target added again after its call is called again.
  delayed.add(a);
  REQUIRE(runHandlersUntil(io, [&] { return calls.size() == 3; }));
  CHECK(calls.back() == 1);
  io.restart();
  io.run();  // until out of work: no call is left
  CHECK(calls.size() == 3);
}

TEST_CASE("delayed calls: cancel calls nothing more", "[transport]") {
  asio::io_context io;
  DelayedCalls<Target> delayed(io, std::chrono::milliseconds(1), &Target::call);
  std::vector<int> calls;
  auto a = std::make_shared<Target>(Target{&calls, 1});
  delayed.add(a);
  delayed.cancel();
  // The cancelled wait completes at once; nothing is called.
  REQUIRE(runHandlersUntil(io, [&] { return io.poll() == 0 && io.stopped(); }));
  CHECK(calls.empty());
}

}  // namespace rs::transport
