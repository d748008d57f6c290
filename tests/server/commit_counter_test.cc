// One stream's commit counter without sockets: the commit watermark is the lowest of the
// members' RECEIVED watermarks, taken once each time it rises, and an acknowledgement of a
// result that was never sent, or one that does not rise, is refused with the reason.
#include "server/commit_counter.h"

#include <algorithm>
#include <optional>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

namespace rs::server {
namespace {

using Catch::Matchers::Contains;

// Chunks of reducer 1 of 2, stream 0 of 2: 1, 5, 9, ... (every R x K-th chunk).
constexpr uint64_t kStep = 4;
uint64_t nth(uint64_t i) { return 1 + kStep * i; }

void requireRefused(const Status& s, const std::string& fragment) {
  INFO(s.toString());
  REQUIRE(s.code() == StatusCode::kProtocolError);
  REQUIRE_THAT(s.message(), Contains(fragment));
}

}  // namespace

TEST_CASE("commit counter: nothing commits until every member has acknowledged, then the lowest "
          "watermark, once each time it rises") {
  CommitCounter counter(3);
  for (uint64_t i = 0; i < 4; ++i) counter.resultSent(nth(i));
  REQUIRE(counter.received(0, nth(3)).isOk());
  REQUIRE(counter.received(2, nth(1)).isOk());
  CHECK_FALSE(counter.takeCommit());  // rank 1 has said nothing
  REQUIRE(counter.received(1, nth(0)).isOk());
  CHECK(counter.takeCommit() == nth(0));
  CHECK_FALSE(counter.takeCommit());  // taken
  REQUIRE(counter.received(1, nth(2)).isOk());
  CHECK(counter.takeCommit() == nth(1));  // rank 2 is now the lowest
  REQUIRE(counter.received(2, nth(3)).isOk());
  CHECK(counter.takeCommit() == nth(2));
  REQUIRE(counter.received(1, nth(3)).isOk());
  CHECK(counter.takeCommit() == nth(3));
  CHECK_FALSE(counter.takeCommit());
}

TEST_CASE("commit counter: several rises between two takes commit the latest once") {
  CommitCounter counter(2);
  for (uint64_t i = 0; i < 3; ++i) counter.resultSent(nth(i));
  REQUIRE(counter.received(0, nth(0)).isOk());
  REQUIRE(counter.received(1, nth(0)).isOk());
  REQUIRE(counter.received(0, nth(2)).isOk());
  REQUIRE(counter.received(1, nth(1)).isOk());
  REQUIRE(counter.received(1, nth(2)).isOk());
  CHECK(counter.takeCommit() == nth(2));
  CHECK_FALSE(counter.takeCommit());
}

TEST_CASE("commit counter: an acknowledgement of a result that was not sent is refused") {
  CommitCounter counter(2);
  requireRefused(counter.received(0, nth(0)),
                 "RECEIVED for chunk 1, but this reducer has sent no result on this stream yet");
  counter.resultSent(nth(0));
  counter.resultSent(nth(1));
  requireRefused(counter.received(1, nth(2)),
                 "RECEIVED for chunk 9, whose result this reducer has not sent (the last it sent "
                 "on this stream is chunk 5)");
  // A refusal changes nothing: the same member may still acknowledge what was sent.
  REQUIRE(counter.received(1, nth(1)).isOk());
  REQUIRE(counter.received(0, nth(1)).isOk());
  CHECK(counter.takeCommit() == nth(1));
}

TEST_CASE("commit counter: a member's watermark that goes back or repeats is refused") {
  CommitCounter counter(2);
  for (uint64_t i = 0; i < 3; ++i) counter.resultSent(nth(i));
  REQUIRE(counter.received(0, nth(2)).isOk());
  requireRefused(counter.received(0, nth(1)),
                 "RECEIVED for chunk 5 after RECEIVED for chunk 9: a member's acknowledgements "
                 "must increase");
  requireRefused(counter.received(0, nth(2)), "RECEIVED for chunk 9 after RECEIVED for chunk 9");
  // Another member's watermark is its own.
  REQUIRE(counter.received(1, nth(0)).isOk());
  CHECK(counter.takeCommit() == nth(0));
}

TEST_CASE("commit counter: the watermark is the lowest of many members' as they move in any "
          "order") {
  constexpr uint32_t kWorld = 7;
  constexpr uint64_t kChunks = 60;
  CommitCounter counter(kWorld);
  std::vector<uint64_t> acked(kWorld, 0);  // chunks acknowledged, per member (a count)
  std::optional<uint64_t> committed;
  std::mt19937 random(12345);
  uint64_t sent = 0;
  while (committed != nth(kChunks - 1)) {
    if (sent < kChunks && random() % 3 == 0) counter.resultSent(nth(sent++));
    const uint32_t rank = random() % kWorld;
    if (acked[rank] == sent) continue;  // nothing new for it to acknowledge
    acked[rank] += 1 + random() % (sent - acked[rank]);
    REQUIRE(counter.received(rank, nth(acked[rank] - 1)).isOk());
    const uint64_t lowest = *std::min_element(acked.begin(), acked.end());
    const std::optional<uint64_t> commit = counter.takeCommit();
    if (lowest == 0 || (committed && nth(lowest - 1) == *committed)) {
      CHECK_FALSE(commit);
    } else {
      REQUIRE(commit == nth(lowest - 1));
      committed = commit;
    }
  }
}

TEST_CASE("commit counter, lane: acknowledgements may run ahead of the chunks resolved, and the "
          "commit waits for both") {
  CommitCounter counter(2, CommitCounter::Bound::kEntries);
  // Both members' entries of chunks 1 and 5 were whole: they acknowledge them as sent.
  REQUIRE(counter.received(0, nth(1)).isOk());
  REQUIRE(counter.received(1, nth(1)).isOk());
  CHECK_FALSE(counter.takeCommit());  // nothing resolved yet
  counter.resultSent(nth(0));
  CHECK(counter.takeCommit() == nth(0));
  counter.resultSent(nth(1));
  CHECK(counter.takeCommit() == nth(1));
  // Chunk 9 needs a result for rank 1: resolved, but not acknowledged by it yet.
  REQUIRE(counter.received(0, nth(2)).isOk());
  counter.resultSent(nth(2));
  CHECK_FALSE(counter.takeCommit());
  REQUIRE(counter.received(1, nth(2)).isOk());
  CHECK(counter.takeCommit() == nth(2));
  // The rule that a watermark rises holds as on a stream.
  requireRefused(counter.received(1, nth(2)), "RECEIVED for chunk 9 after RECEIVED for chunk 9");
}

TEST_CASE("commit counter, lane: the chunks below the agreed point are committed at once, and "
          "the members' acknowledgements carry on above them") {
  CommitCounter counter(3, CommitCounter::Bound::kEntries);
  counter.commitThrough(nth(3));  // the agreed point is nth(4)
  CHECK(counter.takeCommit() == nth(3));
  CHECK_FALSE(counter.takeCommit());
  // Members below it acknowledge what they resent there; nothing goes back.
  REQUIRE(counter.received(0, nth(2)).isOk());
  REQUIRE(counter.received(1, nth(3)).isOk());
  REQUIRE(counter.received(2, nth(1)).isOk());
  counter.resultSent(nth(4));
  CHECK_FALSE(counter.takeCommit());
  for (uint32_t rank = 0; rank < 3; ++rank) REQUIRE(counter.received(rank, nth(4)).isOk());
  CHECK(counter.takeCommit() == nth(4));
  counter.commitThrough(nth(2));  // an older point changes nothing
  CHECK_FALSE(counter.takeCommit());
}

}  // namespace rs::server
