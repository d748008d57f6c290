// Pacing the streams of one host so that together they send at the host's link rate.
//
// Why (bench/RESULTS.md, "Where W=8 lost its time"): a worker sends its part of a collective
// to every reducer at once, over R x K streams, and a reducer its results to every worker. With
// loss-based TCP each stream's window is as large as the path ever let it grow, so at the
// start of a collective every stream hands its whole flight to the host's transmit queue at
// the same instant. Counted on the emulated links at W=8 (tc qdisc drops): that queue, the
// sender's own, overflowed, not the switch port in front of a reducer. A stream whose whole
// flight was dropped there has nothing in flight to clock a retransmission and waits for the
// kernel's 200 ms probe timer: a 1 MiB all-reduce then took 160-420 ms against 84 ms of link
// time. Paced at an equal share of the link, the streams hand the queue no more than the link
// drains, and no flight is lost.
//
// How: every stream that carries a transfer (a worker's chunk until its result is in, a
// reducer's chunk until its result is written) is busy; each busy stream is paced at
// rate / busy (SO_MAX_PACING_RATE, which Linux TCP honours by itself, without the fq qdisc).
// A stream re-reads its share before each write and each received result part, on its own
// thread, so no thread touches another's socket. A lone small collective still gets the
// whole link: only busy streams divide it.
//
// A worker also paces to the reducer's link: W workers share it, so each may send it
// rate / W, divided among its own busy streams to that reducer. With fewer reducers than
// workers that is the tighter bound: at W=16, R=8 the workers' own shares sent 1.8x what each
// reducer's link drains, and its port dropped 190 thousand packets in one sweep.
//
// The link rate comes from the operator (reducers: --link-gbps; workers: RS_LINK_GBPS, and
// the reducers' as RS_REDUCER_LINK_GBPS where it differs), as the NIC's or the VM's egress rate
// (the sizing calculator's per-machine bandwidth). 0: off, the streams are not paced.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace rs::transport {

class Stream;

class LinkShare {
 public:
  explicit LinkShare(uint64_t linkBytesPerSecond) : rate_(linkBytesPerSecond) {}
  LinkShare(const LinkShare&) = delete;
  LinkShare& operator=(const LinkShare&) = delete;

  // One instance per rate in a process, shared by every communicator in it (they share the
  // host's link); nullptr for 0.
  static std::shared_ptr<LinkShare> forProcess(uint64_t linkBytesPerSecond);
  // Gbit/s as an operator writes it -> bytes per second (0 for 0).
  static uint64_t bytesPerSecondFromGbps(double gbps);

  // What the paced streams together may send: the link less room for what the pace does not
  // count. Linux paces TCP segments without their IP and Ethernet headers (34 of each 1514
  // bytes on the wire, 2.3%), and the same link carries the ACKs of what the host receives
  // (one 66-byte frame per one or two full segments, 2.3-4.6%, far fewer where the receiver
  // coalesces segments). 0.9 held ours to 0.90 of the nominal link where Gloo's unpaced ring
  // reached 0.94-0.95, which alone kept W=32 at 0.89 of the ideal ratio at 16 MiB. At 0.94,
  // with the 20 ms minimum RTO (transport/tcp/socket_options.cc) bounding what an overflow
  // costs: W=8 over 100 Mbit/s 64 MiB at 1.00 of the measured link (0.96 at 0.9), W=16 0.98 of
  // the ideal at 16 and 64 MiB (0.95, 0.94), W=32 0.92 at 16 MiB (bench/RESULTS.md, "The
  // paced fraction"). At 0.93, before that RTO, W=16's hosts' queues overflowed now and then
  // and a 1 MiB iteration took 195-446 ms where it took 100 ms.
  static constexpr double kPacedFraction = 0.94;

  // A host with at most this much on its way is not paced at all: every queue on the path
  // absorbs it (a switch port holds hundreds of KB; the emulated links' 20 ms is 250 KB at
  // 100 Mbit/s), and a pace would only stretch a small collective to its fair share of a
  // link it has to itself for that long (16 KiB at W=4, 1 Gbit/s: 522 us paced, 135 us not,
  // beside a 138 us ping-pong of the same size). At 256 KiB, W=8 over 100 Mbit/s took 34 ms
  // unpaced against 27 ms paced: the threshold stays below that.
  static constexpr uint64_t kUnpacedBytes = 128 << 10;

  uint64_t linkBytesPerSecond() const { return rate_; }
  uint64_t bytesUnderWay() const { return bytes_.load(std::memory_order_relaxed); }
  // Paced from the moment the host has more than kUnpacedBytes under way until all its
  // streams are idle again: a collective whose remaining bytes drop below the threshold is not
  // let loose at its tail, when every stream would burst at once.
  bool paced() const { return paced_.load(std::memory_order_relaxed); }
  uint32_t busyStreams() const { return busy_.load(std::memory_order_relaxed); }
  // What each busy stream may send: the paced part of the link / busy streams.
  uint64_t share() const { return pacedShare(rate_, busy_.load(std::memory_order_relaxed)); }
  // The paced part of a link of `linkBytesPerSecond` over `streams` streams (at least 1 of
  // each), never 0: what share() gives, for a caller that counts its streams itself.
  static uint64_t pacedShare(uint64_t linkBytesPerSecond, uint32_t streams);

  // One stream's membership: busy/idle transitions and its applied pace. Lives on the
  // stream's thread; idle() is called before the stream closes (the destructor calls it too).
  class Pacer {
   public:
    Pacer() = default;
    // `farEnd` (may be null): the far host's link as this process may use it, shared by this
    // process's streams to that host; the pace is the smaller of the two shares.
    explicit Pacer(std::shared_ptr<LinkShare> link, std::shared_ptr<LinkShare> farEnd = nullptr)
        : link_(std::move(link)), far_(link_ ? std::move(farEnd) : nullptr) {}
    ~Pacer() { idle(); }
    Pacer(const Pacer&) = delete;
    Pacer& operator=(const Pacer&) = delete;

    bool enabled() const { return link_ != nullptr; }
    // `bytes` more to carry (a chunk); the stream is busy until they are done or it is idle.
    void busy(uint64_t bytes = 0);
    void done(uint64_t bytes);
    // Not busy, whatever it still had to carry.
    void idle();
    // Applies the current share to `stream` when it changed since the last call.
    void refresh(Stream& stream);

   private:
    std::shared_ptr<LinkShare> link_;
    std::shared_ptr<LinkShare> far_;
    bool busy_ = false;
    uint64_t bytes_ = 0;    // this stream's part of the links' bytes under way
    uint64_t applied_ = 0;  // 0: never applied
  };

 private:
  const uint64_t rate_;
  std::atomic<uint32_t> busy_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<bool> paced_{false};
};

}  // namespace rs::transport
