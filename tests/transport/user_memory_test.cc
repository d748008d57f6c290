// The list of buffers registered for zero-copy sends (core/transport/user_memory.h): ids, the
// generation every change moves, removal of what is listed only, and changes from several
// threads while another reads.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "core/transport/user_memory.h"

using rs::transport::UserMemory;

TEST_CASE("user memory: each add gets its own id, every change moves the generation, and only "
          "a listed id is removed",
          "[transport][zerocopy]") {
  UserMemory list;
  char a[64], b[64];
  const uint64_t g0 = list.generation();
  const uint64_t ia = list.add(a, sizeof a);
  const uint64_t ib = list.add(b, sizeof b);
  const uint64_t ia2 = list.add(a, sizeof a);  // the same buffer again: a second entry
  CHECK(ia != 0);
  CHECK(ia != ib);
  CHECK(ia2 != ia);
  CHECK(list.generation() == g0 + 3);
  CHECK(list.size() == 3);
  CHECK(list.remove(ib));
  CHECK_FALSE(list.remove(ib));
  CHECK_FALSE(list.remove(0));
  CHECK(list.generation() == g0 + 4);  // a refused remove changes nothing
  uint64_t generation = 0;
  const std::vector<UserMemory::Range> ranges = list.snapshot(&generation);
  CHECK(generation == list.generation());
  REQUIRE(ranges.size() == 2);
  CHECK(ranges[0].id == ia);
  CHECK(ranges[0].data == a);
  CHECK(ranges[0].size == sizeof a);
  CHECK(ranges[1].id == ia2);
}

TEST_CASE("user memory: adds and removes from several threads while one reads snapshots",
          "[transport][zerocopy]") {
  UserMemory list;
  constexpr int kThreads = 4, kEach = 500;
  std::vector<char> bytes(kThreads * kEach);
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};  // Catch's assertions stay on the test thread
  std::thread reader([&] {
    while (!stop) {
      uint64_t g = 0;
      for (const auto& r : list.snapshot(&g)) bad += r.size != 1;
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t)
    writers.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const uint64_t id = list.add(&bytes[t * kEach + i], 1);
        if (i % 2 == 0) bad += !list.remove(id);
      }
    });
  for (auto& w : writers) w.join();
  stop = true;
  reader.join();
  CHECK(bad == 0);
  CHECK(list.size() == kThreads * kEach / 2);
  CHECK(list.generation() == kThreads * kEach * 3 / 2);
}
