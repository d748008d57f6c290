// One side of a fabric test: a domain and an endpoint on the provider under test (libfabric's tcp
// provider over loopback unless fabric_choice.h says otherwise), under the same verbs' rules as
// the data path (core/transport/fabric/fabric_info.h).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/transport/fabric/fabric_domain.h"
#include "core/transport/fabric/fabric_endpoint.h"
#include "core/transport/fabric/fabric_info.h"
#include "core/transport/fabric/registered_memory.h"
#include "tests/support/fabric_choice.h"

namespace rs::test {

namespace fab = rs::transport::fabric;

// The endpoint is closed before the domain (members go in reverse). A test declares its
// RegisteredMemory after its sides, so that registrations are closed before their domain.
struct FabricSide {
  std::unique_ptr<fab::FabricDomain> domain;
  std::unique_ptr<fab::FabricEndpoint> endpoint;
};

inline FabricSide openFabricSide(const std::string& name, bool deliveryComplete = true,
                                 const fab::FabricChoice& choice = fabricUnderTest()) {
  Result<fab::FabricInfo> info = fab::FabricInfo::probe(choice);
  REQUIRE(info.status().toString() == "OK");
  Result<std::unique_ptr<fab::FabricDomain>> domain = fab::FabricDomain::open(std::move(*info));
  REQUIRE(domain.status().toString() == "OK");
  fab::FabricEndpointOptions options;
  options.name = name;
  options.deliveryComplete = deliveryComplete;
  Result<std::unique_ptr<fab::FabricEndpoint>> ep = fab::FabricEndpoint::open(**domain, options);
  REQUIRE(ep.status().toString() == "OK");
  return {std::move(*domain), std::move(*ep)};
}

inline fab::RegisteredMemory registerFabricMemory(FabricSide& side, std::vector<uint8_t>& bytes,
                                                  fab::RegisteredMemory::Access access) {
  Result<fab::RegisteredMemory> m =
      fab::RegisteredMemory::add(*side.domain, bytes.data(), bytes.size(), access);
  REQUIRE(m.status().toString() == "OK");
  return std::move(*m);
}

}  // namespace rs::test

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace rs::test {

// Drives a target endpoint on a thread of its own, as a reducer's io thread would: polls it
// (which, on manual-progress providers, is what lands peers' writes at all) and keeps what
// completed. Other work on that endpoint's domain (deregistering) runs on the same thread
// through run(): the domain is FI_THREAD_DOMAIN. Paused, it polls nothing, for the cases that
// show what a writer sees while the target makes no progress.
class FabricPoller {
 public:
  explicit FabricPoller(fab::FabricEndpoint& endpoint)
      : endpoint_(endpoint), thread_([this] { loop(); }) {}
  ~FabricPoller() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  std::vector<fab::FabricCompletion> completions() {
    std::lock_guard lock(mu_);
    return done_;
  }
  // Waits until `condition` holds for the completions so far, for at most `bound` (a state,
  // with a bound far beyond a healthy run).
  bool waitFor(const std::function<bool(const std::vector<fab::FabricCompletion>&)>& condition,
               std::chrono::milliseconds bound = std::chrono::seconds(60)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, bound, [&] { return condition(done_); });
  }
  size_t count(fab::FabricOp op) {
    std::lock_guard lock(mu_);
    size_t n = 0;
    for (const auto& c : done_) n += c.op == op ? 1 : 0;
    return n;
  }
  // Runs `task` on the polling thread, between polls, and returns once it ran.
  void run(std::function<void()> task) {
    std::unique_lock lock(mu_);
    task_ = std::move(task);
    cv_.notify_all();
    cv_.wait(lock, [&] { return !task_; });
  }
  void setPaused(bool paused) {
    std::unique_lock lock(mu_);
    paused_ = paused;
    cv_.notify_all();
    // Returns once the thread is out of its poll, so that "paused" means no progress from here.
    cv_.wait(lock, [&] { return inPoll_ == false; });
  }

 private:
  void loop() {
    std::unique_lock lock(mu_);
    while (!stop_) {
      if (task_) {
        task_();
        task_ = nullptr;
        cv_.notify_all();
        continue;
      }
      if (paused_) {
        cv_.wait(lock, [&] { return stop_ || !paused_ || task_; });
        continue;
      }
      inPoll_ = true;
      lock.unlock();
      std::vector<fab::FabricCompletion> got;
      Status s = endpoint_.poll(got);
      lock.lock();
      inPoll_ = false;
      if (!s.isOk()) {
        fab::FabricCompletion broken;
        broken.status = s;
        got.push_back(std::move(broken));
      }
      if (!got.empty()) {
        for (auto& c : got) done_.push_back(std::move(c));
        cv_.notify_all();
      } else {
        cv_.notify_all();  // setPaused waits for inPoll_ == false
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
      }
    }
  }

  fab::FabricEndpoint& endpoint_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<fab::FabricCompletion> done_;
  std::function<void()> task_;
  bool stop_ = false;
  bool paused_ = false;
  bool inPoll_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace rs::test
