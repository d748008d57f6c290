// What counts against --memory-limit besides slot memory: the bookkeeping sized by world size,
// charged when a group is created and returned when it ends (memory_budget.h).
#include "server/memory_budget.h"

#include <catch2/catch.hpp>
#include <memory>

#include "server/group_registry.h"
#include "server/slot.h"
#include "server/slot_pool.h"

namespace rs::server {
namespace {

constexpr uint64_t kMiB = 1 << 20;

GroupParams paramsForWorld(uint32_t world, uint16_t streams) {
  GroupParams p;
  p.worldSize = world;
  p.streamCount = streams;
  p.reducerCount = 1;
  return p;
}

}  // namespace

TEST_CASE("memory budget: world-size-heavy groups are refused once their bookkeeping would pass "
          "the limit, and it returns to zero when they end") {
  // 80 MiB over 2 io threads, each keeping a 20 MiB floor for slots: 40 MiB for bookkeeping.
  auto memory = std::make_shared<MemoryBudget>(80 * kMiB, 2, 20 * kMiB);
  GroupRegistry registry(RegistryLimits{}, 2, memory);
  REQUIRE(registry.memory() == memory);
  CHECK(memory->slotPoolBudget() == 40 * kMiB);  // nothing charged: the thread's whole part

  // A group of the largest world with 2 streams per member: about 11 MiB of bookkeeping, so
  // three fit in the 40 MiB and a fourth does not.
  const uint64_t heavy = bookkeepingBytes(65536, 2);
  REQUIRE(3 * heavy <= 40 * kMiB);
  REQUIRE(4 * heavy > 40 * kMiB);
  std::vector<GroupId> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(GroupId::random());
    auto g = registry.joinStream(ids.back(), 0, 0, paramsForWorld(65536, 2));
    REQUIRE(g.status().toString() == "OK");
  }
  CHECK(memory->bookkeeping() == 3 * heavy);
  // The slots get what the bookkeeping leaves, split over the threads.
  CHECK(memory->slotPoolBudget() == (80 * kMiB - 3 * heavy) / 2);

  // A fourth would pass the 40 MiB: refused, naming the limit, and nothing is left behind.
  const GroupId refused = GroupId::random();
  auto g = registry.joinStream(refused, 0, 0, paramsForWorld(65536, 2));
  REQUIRE_FALSE(g.isOk());
  CHECK(g.status().code() == StatusCode::kResourceExhausted);
  CHECK(g.status().message().find("--memory-limit") != std::string::npos);
  CHECK(registry.find(refused) == nullptr);
  CHECK(memory->bookkeeping() == 3 * heavy);
  // gRPC JoinGroup is charged the same way.
  CHECK(registry.declareMember(refused, 0, paramsForWorld(65536, 2)).status().code() ==
        StatusCode::kResourceExhausted);
  // A small group still fits beside them.
  const GroupId small = GroupId::random();
  REQUIRE(registry.declareMember(small, 0, paramsForWorld(4, 2)).isOk());
  CHECK(memory->bookkeeping() == 3 * heavy + bookkeepingBytes(4, 2));

  // The groups end (their last stream closes, or the declared member leaves): all returned.
  for (const GroupId& id : ids) {
    auto group = registry.find(id);
    REQUIRE(group);
    registry.streamClosed(*group, 0, 0);
  }
  auto left = registry.leaveMember(small, 0);
  REQUIRE(left.isOk());
  CHECK(*left == nullptr);
  CHECK(registry.size() == 0);
  CHECK(memory->bookkeeping() == 0);
  CHECK(memory->slotPoolBudget() == 40 * kMiB);
  // And the heavy group fits again.
  REQUIRE(registry.joinStream(refused, 0, 0, paramsForWorld(65536, 2)).isOk());
}

TEST_CASE("memory budget: a slot pool never falls below its floor, and slot state is charged "
          "with the accumulator") {
  auto memory = std::make_shared<MemoryBudget>(8 * kMiB, 2, 2 * kMiB);
  // The bookkeeping may take the limit less each thread's floor, and no more.
  REQUIRE(memory->chargeBookkeeping(4 * kMiB, "a").isOk());
  CHECK(memory->slotPoolBudget() == 2 * kMiB);
  CHECK_FALSE(memory->chargeBookkeeping(1, "b").isOk());
  memory->releaseBookkeeping(4 * kMiB);

  SlotPool pool(memory);
  CHECK(pool.limit() == 4 * kMiB);
  const uint64_t state = Slot::stateBytes(1000);
  CHECK(state >= 1000 * 16);
  auto buffer = pool.tryAcquire(1 * kMiB, state);
  REQUIRE(buffer.has_value());
  CHECK(pool.inUse() == 1 * kMiB);
  CHECK(pool.stateInUse() == state);
  // The rest of the pool less the state: a 3 MiB buffer no longer fits.
  CHECK_FALSE(pool.tryAcquire(3 * kMiB).has_value());
  pool.release(std::move(*buffer), state);
  CHECK(pool.inUse() == 0);
  CHECK(pool.stateInUse() == 0);
}

}  // namespace rs::server
