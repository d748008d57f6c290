// Liveness (core/transport/liveness.h): when a stream sends a HEARTBEAT and when its peer is
// lost, driven with made-up times and byte counters, no sockets and no sleeps.
#include "core/transport/liveness.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

using rs::transport::Liveness;
using std::chrono::milliseconds;
using Verdict = Liveness::Verdict;

namespace {

constexpr milliseconds kBound{12000};
const Liveness::Clock::time_point kT0 = Liveness::Clock::time_point{} + std::chrono::hours(1);

Liveness::Clock::time_point timeAt(int64_t ms) { return kT0 + milliseconds(ms); }

Liveness::Sample owing(uint64_t sent = 0) {
  return {.arrived = 0, .sent = sent, .owing = true, .waiting = false, .canSend = true};
}
Liveness::Sample waiting(uint64_t arrived = 0) {
  return {.arrived = arrived, .sent = 0, .owing = false, .waiting = true, .canSend = true};
}

// Checks on time, every interval (1000 ms) from `from` to `to`, each finding nothing to do.
void quietChecks(Liveness& l, int64_t from, int64_t to, const Liveness::Sample& sample) {
  for (int64_t t = from; t <= to; t += 1000) {
    INFO("at " << t << " ms");
    REQUIRE(l.check(timeAt(t), sample) == Verdict::kNothing);
  }
}

}  // namespace

TEST_CASE("liveness: the intervals are fractions of the bound") {
  Liveness l(kBound);
  CHECK(l.bound() == kBound);
  CHECK(l.checkInterval() == milliseconds(1000));
  CHECK(l.heartbeatAfter() == milliseconds(4000));
  CHECK(Liveness(milliseconds(11)).checkInterval() == milliseconds(1));
}

TEST_CASE("liveness: a stream with nothing owed either way sends nothing and loses no one") {
  Liveness l(kBound);
  l.begin(timeAt(0));
  for (int64_t t = 1000; t <= 100000; t += 1000) {
    REQUIRE(l.check(timeAt(t), {}) == Verdict::kNothing);
    REQUIRE_FALSE(l.active());
  }
}

TEST_CASE("liveness: a side that owes and sends nothing heartbeats every third of the bound") {
  Liveness l(kBound);
  l.begin(timeAt(0));
  CHECK(l.active());
  CHECK(l.check(timeAt(3999), owing()) == Verdict::kNothing);
  CHECK(l.check(timeAt(4000), owing()) == Verdict::kSendHeartbeat);
  l.heartbeatSent(72);  // its bytes are that send: the next is due a third of the bound later
  CHECK(l.check(timeAt(5000), owing(72)) == Verdict::kNothing);
  CHECK(l.check(timeAt(7999), owing(72)) == Verdict::kNothing);
  CHECK(l.check(timeAt(8000), owing(72)) == Verdict::kSendHeartbeat);
  // Not told (a heartbeat written later): its bytes, when seen, count as a later send.
  CHECK(l.check(timeAt(9000), owing(144)) == Verdict::kNothing);
  CHECK(l.check(timeAt(12999), owing(144)) == Verdict::kNothing);
  CHECK(l.check(timeAt(13000), owing(144)) == Verdict::kSendHeartbeat);
  // One that could not go out at all counts as sent too: the next is due a third later.
  CHECK(l.check(timeAt(16999), owing(144)) == Verdict::kNothing);
  CHECK(l.check(timeAt(17000), owing(144)) == Verdict::kSendHeartbeat);
}

TEST_CASE("liveness: a side that keeps sending never heartbeats") {
  Liveness l(kBound);
  l.begin(timeAt(0));
  uint64_t sent = 0;
  for (int64_t t = 1000; t <= 60000; t += 1000) {
    sent += 1 << 20;
    REQUIRE(l.check(timeAt(t), owing(sent)) == Verdict::kNothing);
  }
}

TEST_CASE("liveness: no heartbeat while a frame is being written, one as soon as it can go") {
  Liveness l(kBound);
  l.begin(timeAt(0));
  Liveness::Sample busy = owing();
  busy.canSend = false;
  CHECK(l.check(timeAt(4000), busy) == Verdict::kNothing);
  CHECK(l.check(timeAt(6000), busy) == Verdict::kNothing);
  CHECK(l.check(timeAt(7000), owing()) == Verdict::kSendHeartbeat);
}

TEST_CASE("liveness: quiet while nothing was owed does not count") {
  Liveness l(kBound);
  l.begin(timeAt(0));
  CHECK(l.check(timeAt(50000), {}) == Verdict::kNothing);
  // Owing from here (found at a check, without begin()): the quiet counts from the last check
  // that found nothing owed.
  CHECK(l.check(timeAt(51000), owing()) == Verdict::kNothing);
  CHECK(l.check(timeAt(53999), owing()) == Verdict::kNothing);
  CHECK(l.check(timeAt(54000), owing()) == Verdict::kSendHeartbeat);
  // begin() after an idle spell: the same from its time, and bytes sent meanwhile count as
  // sent at the first check after it.
  l.begin(timeAt(90000));
  CHECK(l.check(timeAt(91000), owing(72)) == Verdict::kNothing);
  CHECK(l.check(timeAt(94999), owing(72)) == Verdict::kNothing);
  CHECK(l.check(timeAt(95000), owing(72)) == Verdict::kSendHeartbeat);
}

TEST_CASE("liveness: a peer silent for the bound while awaited is lost, not a moment sooner") {
  Liveness l(kBound);
  l.begin(timeAt(0));
  quietChecks(l, 1000, 11000, waiting());
  CHECK(l.check(timeAt(11999), waiting()) == Verdict::kNothing);
  CHECK(l.silence(timeAt(11999)) == milliseconds(11999));
  CHECK(l.check(timeAt(12000), waiting()) == Verdict::kLost);
  CHECK(l.silence(timeAt(12000)) == kBound);
}

TEST_CASE("liveness: any byte from the peer keeps it alive") {
  Liveness l(kBound);
  l.begin(timeAt(0));
  quietChecks(l, 1000, 4000, waiting());
  CHECK(l.check(timeAt(5000), waiting(101)) == Verdict::kNothing);  // one byte
  quietChecks(l, 6000, 16000, waiting(101));
  CHECK(l.check(timeAt(16999), waiting(101)) == Verdict::kNothing);
  CHECK(l.check(timeAt(17000), waiting(101)) == Verdict::kLost);
  CHECK(l.silence(timeAt(17000)) == kBound);
}

TEST_CASE("liveness: a wait this side holds up does not count, and one that resumes starts over") {
  Liveness l(kBound);
  l.begin(timeAt(0));
  quietChecks(l, 1000, 11000, waiting());
  // This side stops reading (a parked or held-back reducer session): the peer can send nothing.
  for (int64_t t = 12000; t <= 60000; t += 1000) REQUIRE(l.check(timeAt(t), {}) == Verdict::kNothing);
  CHECK(l.active() == false);
  // Reading again: the silence counts from the last check that found no wait.
  CHECK(l.check(timeAt(61000), waiting()) == Verdict::kNothing);
  quietChecks(l, 62000, 71000, waiting());
  CHECK(l.check(timeAt(71999), waiting()) == Verdict::kNothing);
  CHECK(l.check(timeAt(72000), waiting()) == Verdict::kLost);
}

TEST_CASE("liveness: a check that comes late was held up itself: its lateness is not the "
          "peer's silence") {
  Liveness l(kBound);
  l.begin(timeAt(0));
  quietChecks(l, 1000, 5000, waiting());
  // This side did not run for 20 s (its machine stopped, and the peer's heartbeats with it):
  // no byte came, and the peer is not lost for it. The lateness past one interval (19 s) does
  // not count: 6 s of silence so far.
  CHECK(l.check(timeAt(25000), waiting()) == Verdict::kNothing);
  CHECK(l.silence(timeAt(25000)) == milliseconds(6000));
  // Checks on time again: the peer that stays silent is lost at the bound counted so.
  quietChecks(l, 26000, 30000, waiting());
  CHECK(l.check(timeAt(31000), waiting()) == Verdict::kLost);
  CHECK(l.silence(timeAt(31000)) == kBound);
  // A check late by no more than an interval is not a stall: all of its wait counts.
  Liveness m(kBound);
  m.begin(timeAt(0));
  quietChecks(m, 1000, 9000, waiting());
  CHECK(m.check(timeAt(10999), waiting()) == Verdict::kNothing);
  CHECK(m.check(timeAt(12000), waiting()) == Verdict::kLost);
}

TEST_CASE("liveness: a peer gone is found also while every check comes late") {
  // Every check 2.5 intervals after the last: each counts 1000 ms of the silence, not 2500.
  Liveness l(kBound);
  l.begin(timeAt(0));
  int64_t t = 0;
  Verdict v = Verdict::kNothing;
  while (v == Verdict::kNothing && t < 100000) {
    t += 2500;
    v = l.check(timeAt(t), waiting());
  }
  CHECK(v == Verdict::kLost);
  CHECK(t == 30000);  // twelve checks: the bound's twelve intervals
}

TEST_CASE("liveness: stays active while anything is owed either way") {
  Liveness l(kBound);
  CHECK_FALSE(l.active());
  l.begin(timeAt(0));
  CHECK(l.active());  // begin() starts the timer; the first check decides
  l.check(timeAt(1000), owing());
  CHECK(l.active());
  l.check(timeAt(2000), waiting());
  CHECK(l.active());
  l.check(timeAt(3000), {});
  CHECK_FALSE(l.active());
}

// Two ends, each checking on its own timer with its own phase and jitter: one owes and sends
// data for a while, then only heartbeats; the other waits for it. The sender's bytes must
// never be apart more than half the bound (plus the timers' lateness), so the waiting end
// never declares it lost; when the owing end stops (a SIGSTOP), the waiting end declares it
// lost after at least the bound of silence and at most the bound and two checks later.
TEST_CASE("liveness: heartbeats every third of the bound keep a waiting peer, a stop is found") {
  std::mt19937_64 rng(27);
  for (int round = 0; round < 300; ++round) {
    const milliseconds bound(100 + static_cast<int64_t>(rng() % 20000));
    Liveness sender(bound), receiver(bound);
    const int64_t interval = sender.checkInterval().count();
    // Each end's timer fires late by up to 5% of the bound (a loaded machine).
    const int64_t jitter = std::max<int64_t>(1, bound.count() / 20);
    auto next = [&](int64_t t) {
      return t + interval + static_cast<int64_t>(rng() % static_cast<uint64_t>(jitter));
    };
    int64_t sendCheck = static_cast<int64_t>(rng() % static_cast<uint64_t>(interval));
    int64_t receiveCheck = static_cast<int64_t>(rng() % static_cast<uint64_t>(interval));
    // Data flows until dataUntil (sent at random moments between checks), heartbeats after it;
    // everything stops at stopAt.
    const int64_t dataUntil = static_cast<int64_t>(rng() % (5 * static_cast<uint64_t>(bound.count())));
    const int64_t stopAt = dataUntil + 10 * bound.count();
    sender.begin(timeAt(0));
    receiver.begin(timeAt(0));
    std::vector<int64_t> sends;  // when each send's bytes reached the peer (at once)
    int64_t lastSend = 0;
    bool lost = false;
    while (!lost && receiveCheck < stopAt + 3 * bound.count()) {
      if (sendCheck <= receiveCheck) {
        // Data written since the last check, at a random moment of the interval.
        if (sendCheck < dataUntil) {
          const int64_t when = sendCheck - static_cast<int64_t>(rng() % static_cast<uint64_t>(interval));
          if (when > lastSend) {
            sends.push_back(when);
            lastSend = when;
          }
        }
        const uint64_t sent = sends.size() * 72;
        if (sendCheck < stopAt &&
            sender.check(timeAt(sendCheck), owing(sent)) == Verdict::kSendHeartbeat) {
          INFO("bound " << bound.count() << " gap " << sendCheck - lastSend);
          REQUIRE(sendCheck - lastSend <= bound.count() / 2 + 2 * jitter);
          sends.push_back(sendCheck);
          lastSend = sendCheck;
          sender.heartbeatSent(sends.size() * 72);
        }
        sendCheck = next(sendCheck);
      } else {
        const auto arrived = static_cast<uint64_t>(std::count_if(
            sends.begin(), sends.end(), [&](int64_t s) { return s <= receiveCheck; }));
        if (receiver.check(timeAt(receiveCheck), waiting(arrived * 72)) == Verdict::kLost) {
          lost = true;
          INFO("bound " << bound.count() << " lost at " << receiveCheck << ", stop at " << stopAt);
          REQUIRE(receiveCheck >= stopAt);
          const int64_t silence = receiveCheck - lastSend;
          REQUIRE(silence >= bound.count());
          REQUIRE(silence <= bound.count() + 2 * (interval + jitter));
          REQUIRE(receiver.silence(timeAt(receiveCheck)).count() >= bound.count());
        }
        receiveCheck = next(receiveCheck);
      }
    }
    REQUIRE(lost);
  }
}
