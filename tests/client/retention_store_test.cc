// The member's retention store without sockets: what it keeps of a collective (the chunks not
// committed yet, copied, so the caller may reuse its buffer at once), what it drops at each
// lane's commit, and back pressure at its bound: a collective that does not fit waits,
// unfinished, until commits make room, those behind it wait in order, and closing hands the
// waiting requests back unfinished.
#include "client/retention_store.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include <catch2/catch.hpp>

namespace rs::client {
namespace {

using Outcome = RetentionStore::Outcome;

// A collective's results in a buffer of its own: chunk i (number first + i) of `bytes` bytes,
// every byte i + 1 + first, on lane lanes[i].
struct Results {
  std::shared_ptr<RequestState> request;
  std::vector<std::byte> buffer;
  std::vector<RetentionStore::Chunk> chunks;

  Results(uint64_t seq, uint64_t first, size_t bytes, std::vector<uint32_t> lanes)
      : request(std::make_shared<RequestState>(
            seq, lanes.size(), std::vector<uint32_t>{static_cast<uint32_t>(lanes.size())},
            std::chrono::steady_clock::now() + std::chrono::hours(1),
            std::weak_ptr<CommunicatorCore>{})),
        buffer(bytes * lanes.size()) {
    for (size_t i = 0; i < lanes.size(); ++i) {
      std::memset(buffer.data() + i * bytes, static_cast<int>(first + i + 1), bytes);
      chunks.push_back({first + i, lanes[i], buffer.data() + i * bytes, bytes});
    }
  }
  RetentionStore::Collective collective() const { return {request, chunks}; }
  bool finished() const { return request->done(nullptr); }
  std::vector<std::byte> original(size_t i) const {
    return {chunks[i].data, chunks[i].data + chunks[i].bytes};
  }
};

// The copies `store` keeps of `lane`'s chunks from `from` on, shared as failover takes them
// (uncommittedFrom): `count` of them.
std::vector<RetentionStore::Kept> keptFrom(const RetentionStore& store, uint32_t lane,
                                           uint64_t from, size_t count) {
  std::vector<RetentionStore::Kept> kept = store.uncommittedFrom(lane, from);
  REQUIRE(kept.size() == count);
  return kept;
}

}  // namespace

TEST_CASE("retention store: keeps a copy of each uncommitted chunk, finishes the collective, and "
          "drops each chunk at its lane's commit") {
  RetentionStore store(1 << 20, 2);
  store.commit(0, 0);  // chunk 0 (lane 0) is committed before its collective completes
  Results r(7, 0, 100, {0, 1, 0, 1});
  REQUIRE(store.keep(r.collective()) == Outcome::kKept);
  CHECK(r.finished());
  RetentionStats s = store.stats();
  CHECK(s.heldChunks == 3);
  CHECK(s.heldBytes == 300);
  CHECK(s.keptBytes == 300);
  CHECK(s.chunks == 4);
  CHECK(s.waits == 0);
  CHECK_FALSE(store.copyOf(0));
  // The copies are the results, and stay so when the caller reuses its buffer (in place).
  std::vector<std::vector<std::byte>> results;
  for (size_t i = 0; i < 4; ++i) results.push_back(r.original(i));
  std::fill(r.buffer.begin(), r.buffer.end(), std::byte{0xEE});
  for (uint64_t chunk = 1; chunk < 4; ++chunk) CHECK(store.copyOf(chunk) == results[chunk]);

  store.commit(1, 1);  // lane 1 up to chunk 1
  CHECK_FALSE(store.copyOf(1));
  CHECK(store.copyOf(3) == results[3]);
  CHECK(store.stats().heldBytes == 200);
  store.commit(0, 2);
  store.commit(1, 3);
  s = store.stats();
  CHECK(s.heldBytes == 0);
  CHECK(s.heldChunks == 0);
  CHECK(s.peakBytes == 300);
  CHECK(store.committed(0) == 2u);
  CHECK(store.committed(1) == 3u);
}

TEST_CASE("retention store: at its bound a collective waits, unfinished, until commits make "
          "room, and those behind it wait in order") {
  RetentionStore store(250, 1);
  Results a(0, 0, 100, {0, 0});
  REQUIRE(store.keep(a.collective()) == Outcome::kKept);
  Results b(1, 2, 100, {0});  // 300 > 250
  REQUIRE(store.keep(b.collective()) == Outcome::kWaiting);
  Results c(2, 3, 10, {0});  // would fit, but waits behind b
  REQUIRE(store.keep(c.collective()) == Outcome::kWaiting);
  CHECK_FALSE(b.finished());
  CHECK_FALSE(c.finished());
  CHECK(store.stats().waiting == 2);

  store.commit(0, 0);  // frees 100: b fits (200), c then too (210)
  CHECK(b.finished());
  CHECK(c.finished());
  const RetentionStats s = store.stats();
  CHECK(s.waits == 2);
  CHECK(s.waiting == 0);
  CHECK(s.heldBytes == 210);
  CHECK(store.copyOf(2) == b.original(0));
  CHECK(store.copyOf(3) == c.original(0));
}

TEST_CASE("retention store: a waiting collective whose own chunks are committed needs less, so "
          "one larger than the whole store completes once enough of it is committed") {
  RetentionStore store(100, 2);
  Results big(0, 0, 80, {0, 1, 0});  // 240 bytes, the store holds 100
  REQUIRE(store.keep(big.collective()) == Outcome::kWaiting);
  store.commit(0, 0);  // 160 left to keep
  CHECK_FALSE(big.finished());
  store.commit(1, 1);  // 80 left: fits
  CHECK(big.finished());
  CHECK(store.stats().heldBytes == 80);
  CHECK(store.copyOf(2) == big.original(2));
  // A collective committed in full before it completes keeps nothing, even in a full store.
  RetentionStore none(0, 1);
  none.commit(0, 5);
  Results committed(1, 4, 50, {0, 0});
  CHECK(none.keep(committed.collective()) == Outcome::kKept);
  CHECK(committed.finished());
  CHECK(none.stats().keptBytes == 0);
}

TEST_CASE("retention store: closing hands back the waiting requests unfinished and keeps "
          "nothing more") {
  RetentionStore store(100, 1);
  Results a(0, 0, 100, {0});
  REQUIRE(store.keep(a.collective()) == Outcome::kKept);
  Results b(1, 1, 100, {0});
  REQUIRE(store.keep(b.collective()) == Outcome::kWaiting);
  const std::vector<std::shared_ptr<RequestState>> waiting = store.close();
  REQUIRE(waiting.size() == 1);
  CHECK(waiting[0] == b.request);
  CHECK_FALSE(b.finished());
  CHECK(store.stats().waiting == 0);
  Results c(2, 2, 1, {0});
  CHECK(store.keep(c.collective()) == Outcome::kClosed);
  CHECK_FALSE(c.finished());
  store.commit(0, 0);  // commits still drop what is kept, and finish nothing
  CHECK_FALSE(b.finished());
  CHECK(store.stats().heldBytes == 0);
}

TEST_CASE("retention store: a committed result's buffer takes the next copy of its size, never "
          "while failover still holds it, and kept + free stay within the bound") {
  RetentionStore store(300, 1);
  Results a(0, 0, 100, {0, 0});
  REQUIRE(store.keep(a.collective()) == Outcome::kKept);
  // Failover holds chunk 1's result (uncommittedFrom shares it) across the commit.
  std::vector<RetentionStore::Kept> held = keptFrom(store, 0, 1, 1);
  const std::byte* heldBuffer = held[0].data.get();
  store.commit(0, 1);
  RetentionStats s = store.stats();
  CHECK(s.heldBytes == 0);
  CHECK(s.freeBytes == 100);  // chunk 0's buffer; chunk 1's is failover's

  Results b(1, 2, 100, {0, 0});
  REQUIRE(store.keep(b.collective()) == Outcome::kKept);
  s = store.stats();
  CHECK(s.reusedChunks == 1);
  CHECK(s.freeBytes == 0);
  // Failover's copy is untouched; the new copies are b's results.
  CHECK(std::vector<std::byte>(heldBuffer, heldBuffer + 100) == a.original(1));
  for (const RetentionStore::Kept& k : store.uncommittedFrom(0, 2))
    CHECK(k.data.get() != heldBuffer);
  CHECK(store.copyOf(2) == b.original(0));
  CHECK(store.copyOf(3) == b.original(1));
  held.clear();

  // Another size: the free buffers give way where kept + free + it would pass 300.
  store.commit(0, 3);
  CHECK(store.stats().freeBytes == 200);
  Results c(2, 4, 250, {0});
  REQUIRE(store.keep(c.collective()) == Outcome::kKept);
  s = store.stats();
  CHECK(s.reusedChunks == 1);
  CHECK(s.heldBytes == 250);
  CHECK(s.heldBytes + s.freeBytes <= 300);
  CHECK(store.copyOf(4) == c.original(0));
  store.commit(0, 4);
  s = store.stats();
  CHECK(s.freeBytes == 250);
  CHECK(s.heldBytes + s.freeBytes <= 300);
}

TEST_CASE("retention store: of free buffers of one size, the next copy takes the one freed last") {
  RetentionStore store(1000, 1);
  Results a(0, 0, 100, {0, 0});
  REQUIRE(store.keep(a.collective()) == Outcome::kKept);
  std::vector<RetentionStore::Kept> kept = keptFrom(store, 0, 0, 2);
  const std::byte* freedLast = kept[1].data.get();
  kept.clear();  // failover holds none of them
  store.commit(0, 0);
  store.commit(0, 1);  // chunk 1's buffer is freed last
  Results b(1, 2, 100, {0});
  REQUIRE(store.keep(b.collective()) == Outcome::kKept);
  CHECK(store.stats().reusedChunks == 1);
  const std::vector<RetentionStore::Kept> now = keptFrom(store, 0, 2, 1);
  CHECK(now[0].data.get() == freedLast);
  CHECK(store.copyOf(2) == b.original(0));
}

TEST_CASE("retention store: a timeout's debts name the lanes with chunks kept or waiting") {
  RetentionStore store(100, 3);
  Results a(0, 0, 60, {1});
  REQUIRE(store.keep(a.collective()) == Outcome::kKept);
  Results b(1, 1, 60, {1, 2, 2});
  REQUIRE(store.keep(b.collective()) == Outcome::kWaiting);
  const auto debts = store.debts(1);
  REQUIRE(debts.size() == 2);
  CHECK((debts[0].lane == 1 && debts[0].kept == 1 && debts[0].waiting == 1));
  CHECK((debts[1].lane == 2 && debts[1].kept == 0 && debts[1].waiting == 2));
  CHECK(store.debts(5).size() == 1);  // another collective: only what is kept
}

}  // namespace rs::client
