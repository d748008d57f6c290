// A FabricHub on an io thread of its own, as a reducer's or a worker's io thread runs one. The
// test thread never touches the hub or its channels directly: call() runs a function on the io
// thread and hands its result back, so every fabric call happens on the hub's thread
// (FI_THREAD_DOMAIN) and Catch2's assertions stay on the test thread.
#pragma once

#include <catch2/catch.hpp>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "core/transport/fabric/fabric_hub.h"
#include "tests/support/fabric_choice.h"

namespace rs::test {

class FabricHubThread {
 public:
  explicit FabricHubThread(const std::string& name, transport::fabric::FabricHubOptions options = {},
                           const transport::fabric::FabricChoice& choice = fabricUnderTest())
      : guard_(asio::make_work_guard(io_)) {
    options.name = name;
    // Opened before the thread runs the context: nothing else touches it yet.
    auto hub = transport::fabric::FabricHub::open(io_, choice, options);
    REQUIRE(hub.status().toString() == "OK");
    hub_ = std::move(*hub);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~FabricHubThread() {
    call([this] { hub_.reset(); });
    guard_.reset();
    thread_.join();
  }

  // Runs f on the io thread and returns what it returned.
  template <class F>
  auto call(F f) -> decltype(f()) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto result = task.get_future();
    asio::post(io_, [&task] { task(); });
    return result.get();
  }

  transport::fabric::FabricHub& hub() { return *hub_; }
  asio::io_context& io() { return io_; }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::unique_ptr<transport::fabric::FabricHub> hub_;
  std::thread thread_;  // last: runs once the members above exist
};

}  // namespace rs::test

namespace rs::test {

// Two channels, one on each hub, each connected to the other's grant.
struct ConnectedChannels {
  std::shared_ptr<transport::fabric::FabricChannel> a, b;
};

inline std::shared_ptr<transport::fabric::FabricChannel> openTestChannel(
    FabricHubThread& hub, transport::fabric::RingShape ring, const std::string& name) {
  auto ch = hub.call([&] { return hub.hub().openChannel(ring, name); });
  REQUIRE(ch.status().toString() == "OK");
  return *ch;
}

inline ConnectedChannels connectTestChannels(FabricHubThread& hubA, transport::fabric::RingShape ringA,
                                             FabricHubThread& hubB, transport::fabric::RingShape ringB,
                                             const std::string& name = "test") {
  ConnectedChannels c{openTestChannel(hubA, ringA, name + " a"),
                      openTestChannel(hubB, ringB, name + " b")};
  const auto grantA = hubA.call([&] { return c.a->grant(); });
  const auto grantB = hubB.call([&] { return c.b->grant(); });
  REQUIRE(hubA.call([&] { return c.a->connect(grantB); }).toString() == "OK");
  REQUIRE(hubB.call([&] { return c.b->connect(grantA); }).toString() == "OK");
  return c;
}

}  // namespace rs::test
