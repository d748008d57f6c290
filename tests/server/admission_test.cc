// The reducer's admission rules without sockets: requests for new slots are granted or parked
// by the real Admission over a real SlotPool, and the slots it grants are real Slots. The
// shard's side (its table of open slots, its sessions) is played by TableOwner below, which
// records the order in which parked requests get their slots.
#include "server/admission.h"

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

namespace rs::server {
namespace {

using namespace std::chrono_literals;

constexpr size_t kKiB = 1024;
constexpr size_t kSlot = 64 * kKiB;  // one granule of the pool
const GroupId kA{0, 0xa};
const GroupId kB{0, 0xb};
const GroupId kC{0, 0xc};

wire::FrameHeader fp32ReduceHeader(const GroupId& group, uint64_t chunk, size_t bytes) {
  wire::FrameHeader h;
  h.type = wire::FrameType::kReduce;
  h.group = group;
  h.seq = 1;
  h.chunk = chunk;
  h.elemCount = static_cast<uint32_t>(bytes / sizeof(float));
  h.dtype = DataType::kFloat32;
  h.op = ReduceOp::kSum;
  h.payloadLength = static_cast<uint32_t>(bytes);
  return h;
}

// The shard's side: a table of open slots, members that still wait or have left (a waiter is
// a member's name), and the order in which parked requests were handed their slots.
class TableOwner final : public Admission::Owner {
 public:
  explicit TableOwner(std::shared_ptr<SlotPool> pool) : pool_(std::move(pool)) {}

  bool isOpen(const wire::FrameHeader& h) override { return open_.contains({h.group, h.chunk}); }
  Status refuseNew(const Admission::Request&) override { return refusal; }
  bool waiting(const Admission::Request& r) override {
    return !r.waiter.expired() && !left.contains(nameOf(r));
  }
  std::shared_ptr<Slot> open(const Admission::Request& r, AlignedBuffer buffer) override {
    Slot::Setup setup;
    setup.worldSize = 2;
    setup.timeout = 60s;
    setup.minPartBytes = 32 * kKiB;
    auto slot = std::make_shared<Slot>(pool_, std::move(buffer), r.header, setup);
    open_[{r.header.group, r.header.chunk}] = slot;
    return slot;
  }
  bool resume(const Admission::Request& r, std::shared_ptr<Slot> opened) override {
    if (!opened && failJoinsOf == r.header.group) {
      // The members disagree: the group fails, here at once (the shard's abort is posted).
      admission->abort(r.header.group);
      return false;
    }
    resumed.push_back(opened ? nameOf(r) : nameOf(r) + " joins");
    return true;
  }

  // The chunk's slot completes: it leaves the table, and returns to the pool once whoever
  // still holds it (a queued RESULT part) lets go.
  std::shared_ptr<Slot> complete(const GroupId& group, uint64_t chunk) {
    auto it = open_.find({group, chunk});
    REQUIRE(it != open_.end());
    std::shared_ptr<Slot> slot = std::move(it->second);
    open_.erase(it);
    return slot;
  }

  Admission* admission = nullptr;
  Status refusal;                      // what refuseNew answers
  std::optional<GroupId> failJoinsOf;  // a group whose parked joins fail (members disagree)
  std::set<std::string> left;          // members whose session closed
  std::vector<std::string> resumed;    // parked requests handed their slot, in order

 private:
  static std::string nameOf(const Admission::Request& r) {
    return *std::static_pointer_cast<std::string>(r.waiter.lock());
  }

  std::shared_ptr<SlotPool> pool_;
  std::map<std::pair<GroupId, uint64_t>, std::shared_ptr<Slot>> open_;
};

// One io thread's admission: its pool of `budget` bytes, its counters and the owner's side.
// F, the share's floor, is 2 x maxChunkBytes: 128 KiB of 1 MiB unless a test says otherwise.
struct Reducer {
  explicit Reducer(uint32_t maxSlotsPerGroup, uint64_t budget = 1024 * kKiB,
                   uint64_t maxChunkBytes = 64 * kKiB)
      : pool(std::make_shared<SlotPool>(budget)),
        owner(pool),
        admission(owner, *pool, {maxSlotsPerGroup, maxChunkBytes}, stats) {
    owner.admission = &admission;
  }

  // Member `name` asks for the slot of `group`'s chunk, a slot of `bytes`.
  Admission::Grant ask(const std::string& name, const GroupId& group, uint64_t chunk,
                       size_t bytes = kSlot) {
    auto member = std::make_shared<std::string>(name);
    members[name] = member;
    return admission.request({member, fp32ReduceHeader(group, chunk, bytes), bytes, 0});
  }
  Admission::Verdict verdict(const std::string& name, const GroupId& group, uint64_t chunk,
                             size_t bytes = kSlot) {
    return ask(name, group, chunk, bytes).verdict;
  }

  ShardStats stats;
  std::shared_ptr<SlotPool> pool;
  TableOwner owner;
  Admission admission;
  std::map<std::string, std::shared_ptr<std::string>> members;  // keeps them waiting
};

using V = Admission::Verdict;
using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("a request within its group's quota and share opens its slot at once", "[admission]") {
  Reducer r(4);
  const Admission::Grant grant = r.ask("a0", kA, 0);
  REQUIRE(grant.verdict == V::kOpened);
  REQUIRE(grant.slot);
  CHECK(grant.slot->chunk() == 0);
  CHECK(r.admission.heldSlots(kA).size() == 1);
  CHECK(r.pool->inUse() == kSlot);
  CHECK(r.admission.parked() == 0);
  CHECK(r.stats.parks.load() == 0);
}

TEST_CASE("a request over its group's quota parks, and the group's requests are granted in "
          "order as its slots go",
          "[admission]") {
  Reducer r(2);
  REQUIRE(r.verdict("a0", kA, 0) == V::kOpened);
  REQUIRE(r.verdict("a1", kA, 1) == V::kOpened);
  CHECK(r.verdict("a2", kA, 2) == V::kParked);
  CHECK(r.verdict("a3", kA, 3) == V::kParked);
  CHECK(r.admission.parked() == 2);
  CHECK(r.stats.parks.load() == 2);
  CHECK(r.stats.parkedSessions.load() == 2);
  r.admission.service();
  CHECK(r.owner.resumed.empty());

  // A completed slot whose results are still queued to a member still counts.
  std::shared_ptr<Slot> draining = r.owner.complete(kA, 0);
  r.admission.service();
  CHECK(r.owner.resumed.empty());
  draining.reset();  // its last RESULT part was written
  r.admission.service();
  CHECK(r.owner.resumed == Names{"a2"});
  CHECK(r.stats.parkedSessions.load() == 1);

  r.owner.complete(kA, 1);
  r.admission.service();
  CHECK(r.owner.resumed == Names{"a2", "a3"});
  CHECK(r.admission.parked() == 0);
  CHECK(r.stats.parkedSessions.load() == 0);
  CHECK(r.stats.parks.load() == 2);
}

TEST_CASE("a group parked on its quota does not hold back another group", "[admission]") {
  Reducer r(1);
  REQUIRE(r.verdict("a0", kA, 0) == V::kOpened);
  CHECK(r.verdict("a1", kA, 1) == V::kParked);
  // Arriving behind A's parked request: B has a quota of its own.
  CHECK(r.verdict("b0", kB, 0) == V::kOpened);
  CHECK(r.verdict("b1", kB, 1) == V::kParked);
  // Parked behind A's request: B's slot goes, B's request is granted, A's still waits.
  r.owner.complete(kB, 0);
  r.admission.service();
  CHECK(r.owner.resumed == Names{"b1"});
  CHECK(r.admission.parked() == 1);
  r.owner.complete(kA, 0);
  r.admission.service();
  CHECK(r.owner.resumed == Names{"b1", "a1"});
}

TEST_CASE("memory is granted in order: once a request finds the pool full, a later one of "
          "another group waits behind it even if it would fit",
          "[admission]") {
  // F = 2 x 192 KiB = 384 KiB: every group's share is F here, so only the pool is in the way.
  Reducer r(8, 512 * kKiB, 192 * kKiB);
  for (uint64_t c = 0; c < 3; ++c)
    REQUIRE(r.verdict("a" + std::to_string(c), kA, c, 128 * kKiB) == V::kOpened);
  REQUIRE(r.verdict("b0", kB, 0) == V::kOpened);
  REQUIRE(r.pool->inUse() == 448 * kKiB);
  CHECK(r.verdict("b1", kB, 1, 192 * kKiB) == V::kParked);  // does not fit
  CHECK(r.verdict("c0", kC, 0) == V::kParked);   // fits, but comes later

  // Freed memory that still does not fit b1 does not go to c0 either.
  r.owner.complete(kB, 0);
  r.admission.service();
  CHECK(r.owner.resumed.empty());
  CHECK(r.pool->inUse() == 384 * kKiB);

  r.owner.complete(kA, 0);
  r.admission.service();
  CHECK(r.owner.resumed == Names{"b1", "c0"});
  CHECK(r.pool->inUse() == 512 * kKiB);
}

TEST_CASE("a request for an open slot is granted at once, ahead of every rule", "[admission]") {
  Reducer r(2, 512 * kKiB, 192 * kKiB);  // shares of F = 384 KiB: quota and pool decide
  REQUIRE(r.verdict("a0", kA, 0, 128 * kKiB) == V::kOpened);
  REQUIRE(r.verdict("a1", kA, 1, 128 * kKiB) == V::kOpened);
  CHECK(r.verdict("a2", kA, 2, 128 * kKiB) == V::kParked);  // over A's quota
  REQUIRE(r.verdict("b0", kB, 0, 128 * kKiB) == V::kOpened);
  REQUIRE(r.verdict("b1", kB, 1, 128 * kKiB) == V::kOpened);
  CHECK(r.verdict("c0", kC, 0, 128 * kKiB) == V::kParked);  // the pool is full
  // A is at its quota, has a request waiting, and memory is held up by c0: the second
  // member's request for A's open chunk 0 joins it anyway, and so does one for B's.
  r.owner.refusal = abortedError("refused");  // only new slots are refused
  CHECK(r.verdict("a0'", kA, 0, 128 * kKiB) == V::kJoin);
  CHECK(r.verdict("b1'", kB, 1, 128 * kKiB) == V::kJoin);
  r.owner.refusal = Status::ok();
  CHECK(r.verdict("a2'", kA, 2, 128 * kKiB) == V::kParked);  // chunk 2 is not open yet
  CHECK(r.stats.parks.load() == 3);

  // Served again: a2 opens chunk 2 with the memory a0 returns, c0 finds the pool full again,
  // and a2' joins chunk 2 though A is at its quota again and c0 holds up memory.
  r.owner.complete(kA, 0);
  r.admission.service();
  CHECK(r.owner.resumed == Names{"a2", "a2' joins"});
  CHECK(r.admission.parked() == 1);
}

TEST_CASE("memory share: a lone group keeps all but F, and a newcomer gets F", "[admission]") {
  // F = 128 KiB of a 1 MiB pool; the quota is out of the way.
  Reducer r(256);
  for (uint64_t c = 0; c < 14; ++c)
    REQUIRE(r.verdict("a" + std::to_string(c), kA, c) == V::kOpened);
  CHECK(r.verdict("a14", kA, 14) == V::kParked);  // over its share: 896 KiB
  CHECK(r.pool->inUse() == 896 * kKiB);                      // not the pool: F is left
  CHECK(r.verdict("b0", kB, 0) == V::kOpened);
  CHECK(r.verdict("b1", kB, 1) == V::kOpened);
  CHECK(r.verdict("b2", kB, 2) == V::kParked);  // now the pool is full
  CHECK(r.pool->inUse() == 1024 * kKiB);
}

TEST_CASE("memory share: groups side by side split the pool", "[admission]") {
  Reducer r(256);
  REQUIRE(r.verdict("a0", kA, 0) == V::kOpened);
  REQUIRE(r.verdict("b0", kB, 0) == V::kOpened);
  for (uint64_t c = 1; c < 8; ++c)
    REQUIRE(r.verdict("a" + std::to_string(c), kA, c) == V::kOpened);
  CHECK(r.verdict("a8", kA, 8) == V::kParked);  // A holds half the pool
  CHECK(r.pool->inUse() == 576 * kKiB);
  // A's request over its share blocks only A: B takes the other half.
  for (uint64_t c = 1; c < 8; ++c)
    CHECK(r.verdict("b" + std::to_string(c), kB, c) == V::kOpened);
  CHECK(r.pool->inUse() == 1024 * kKiB);
  // Once A is alone again (B's group forgotten: its slots no longer count), A gets all but F.
  r.admission.forget(kB);
  for (uint64_t c = 0; c < 8; ++c) r.owner.complete(kB, c);
  r.admission.service();
  CHECK(r.owner.resumed == Names{"a8"});
}

TEST_CASE("memory share: a group that only waits for its first slot counts as active",
          "[admission]") {
  Reducer r(256);
  REQUIRE(r.verdict("a0", kA, 0) == V::kOpened);
  // B asks for more than half the pool, its share beside A: it parks holding nothing.
  CHECK(r.verdict("b0", kB, 0, 576 * kKiB) == V::kParked);
  for (uint64_t c = 1; c < 8; ++c)
    REQUIRE(r.verdict("a" + std::to_string(c), kA, c) == V::kOpened);
  CHECK(r.verdict("a8", kA, 8) == V::kParked);  // half the pool, not all but F
  CHECK(r.pool->inUse() == 512 * kKiB);
}

TEST_CASE("memory share: never less than F, however many groups are active", "[admission]") {
  Reducer r(256);
  // Nine groups with a slot each: a tenth one's even split would be 1 MiB / 10 < F.
  for (uint64_t g = 1; g <= 9; ++g)
    REQUIRE(r.verdict("g" + std::to_string(g), GroupId{1, g}, 0) == V::kOpened);
  const GroupId tenth{1, 10};
  CHECK(r.verdict("t0", tenth, 0) == V::kOpened);
  CHECK(r.verdict("t1", tenth, 1) == V::kOpened);  // F = 128 KiB: two slots
  CHECK(r.verdict("t2", tenth, 2) == V::kParked);
  CHECK(r.pool->inUse() == 704 * kKiB);  // the share parked it, not the pool
}

TEST_CASE("forgetting a group drops its parked requests", "[admission]") {
  Reducer r(1);
  REQUIRE(r.verdict("a0", kA, 0) == V::kOpened);
  REQUIRE(r.verdict("a1", kA, 1) == V::kParked);
  REQUIRE(r.verdict("a2", kA, 2) == V::kParked);
  REQUIRE(r.verdict("b0", kB, 0) == V::kOpened);
  REQUIRE(r.verdict("b1", kB, 1) == V::kParked);
  CHECK(r.stats.parkedSessions.load() == 3);

  r.admission.forget(kA);
  CHECK(r.admission.parked() == 1);
  CHECK(r.stats.parkedSessions.load() == 1);
  CHECK(r.admission.heldSlots(kA).empty());
  r.owner.complete(kA, 0);
  r.owner.complete(kB, 0);
  r.admission.service();
  CHECK(r.owner.resumed == Names{"b1"});
}

TEST_CASE("aborting a group drops its requests, and arrivals wait behind the queue until the "
          "next service",
          "[admission]") {
  Reducer r(1);
  REQUIRE(r.verdict("a0", kA, 0) == V::kOpened);
  REQUIRE(r.verdict("a1", kA, 1) == V::kParked);
  REQUIRE(r.verdict("b0", kB, 0) == V::kOpened);
  REQUIRE(r.verdict("b1", kB, 1) == V::kParked);

  r.admission.abort(kA);
  CHECK(r.admission.parked() == 1);
  // The request that found the pool full might have been A's: C's would fit, but waits for
  // the service to decide again in order.
  CHECK(r.verdict("c0", kC, 0) == V::kParked);
  r.admission.service();
  CHECK(r.owner.resumed == Names{"c0"});  // b1 is still over B's quota

  // With nothing left parked, an abort holds nobody up.
  r.owner.complete(kB, 0);
  r.admission.service();
  CHECK(r.owner.resumed == Names{"c0", "b1"});
  r.admission.abort(kB);
  CHECK(r.verdict("d0", GroupId{0, 0xd}, 0) == V::kOpened);
}

TEST_CASE("a parked request whose member has left is skipped", "[admission]") {
  Reducer r(1);
  REQUIRE(r.verdict("a0", kA, 0) == V::kOpened);
  REQUIRE(r.verdict("a1", kA, 1) == V::kParked);
  REQUIRE(r.verdict("a2", kA, 2) == V::kParked);
  REQUIRE(r.verdict("a3", kA, 3) == V::kParked);
  r.owner.left.insert("a1");  // its session closed
  r.members.erase("a2");      // its session is gone
  r.owner.complete(kA, 0);
  r.admission.service();
  CHECK(r.owner.resumed == Names{"a3"});
  CHECK(r.admission.parked() == 0);
  CHECK(r.stats.parkedSessions.load() == 0);
}

TEST_CASE("a request is refused by the owner, or for a slot larger than the whole pool, "
          "without holding up the queue",
          "[admission]") {
  Reducer r(4, 512 * kKiB);
  r.owner.refusal = abortedError("rank 1 has already closed stream 0");
  const Admission::Grant refused = r.ask("a0", kA, 0);
  CHECK(refused.verdict == V::kRefused);
  CHECK(refused.refusal.message() == "rank 1 has already closed stream 0");
  r.owner.refusal = Status::ok();
  CHECK(r.verdict("b0", kB, 0, 576 * kKiB) == V::kTooLarge);
  CHECK(r.admission.parked() == 0);
  CHECK(r.verdict("c0", kC, 0) == V::kOpened);
}

TEST_CASE("a parked join that fails its group starts the service over without it",
          "[admission]") {
  Reducer r(1);
  REQUIRE(r.verdict("a0", kA, 0) == V::kOpened);
  REQUIRE(r.verdict("a1", kA, 1) == V::kParked);
  REQUIRE(r.verdict("a1'", kA, 1) == V::kParked);  // will join a1's slot
  REQUIRE(r.verdict("a2", kA, 2) == V::kParked);
  REQUIRE(r.verdict("b0", kB, 0) == V::kOpened);
  REQUIRE(r.verdict("b1", kB, 1) == V::kParked);
  r.owner.failJoinsOf = kA;
  r.owner.complete(kA, 0);
  r.owner.complete(kB, 0);
  r.admission.service();
  // a1 opened chunk 1; a1' disagreed, which aborted A (a2 went with it); b1 still got its slot.
  CHECK(r.owner.resumed == Names{"a1", "b1"});
  CHECK(r.admission.parked() == 0);
}

}  // namespace rs::server
