// fabric_write_bw: RMA-write bandwidth and latency of our fabric layer (core/transport/fabric)
// between two endpoints in one process, each driven by a thread of its own as a reducer's io
// thread would drive it. Per size, the writer keeps --window writes in flight (the data path's
// credits), each to a slot of its own in the target's registered memory, with delivery-complete
// and a 32-bit immediate (its sequence number); the target counts the arrivals by their
// immediates (and reposts the receive a write with immediate uses up on verbs). The last write
// of each size carries other bytes to a region of its own, and the target checks them.
//
//   fabric_write_bw [--provider tcp] [--node 127.0.0.1] [--sizes 4K,16K,...,64M] [--window 8]
//                   [--seconds 1]
//
// Per size: GB/s, microseconds per write (elapsed / writes) and the median and p99 time from a
// write's post to its completion; beside them, the limits measured in the same run: a memcpy of
// the same size on this machine and, on the tcp provider, one raw TCP loopback stream
// (bench/tcp_probe.h, as allreduce_perf's). On the tcp provider every byte crosses the kernel's
// loopback: its figures test this program and the layer, they say nothing of RDMA hardware.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/latency_summary.h"
#include "bench/tcp_probe.h"
#include "core/common/byte_size.h"
#include "core/transport/fabric/fabric_domain.h"
#include "core/transport/fabric/fabric_endpoint.h"
#include "core/transport/fabric/fabric_info.h"
#include "core/transport/fabric/registered_memory.h"

namespace rs::bench {
namespace {

namespace fab = rs::transport::fabric;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kFinal = 0x80000000u;          // the immediate of a size's last write
constexpr auto kBound = std::chrono::seconds(30);  // a hang's bound, far beyond a healthy run
constexpr size_t kInboxWord = 64;                  // a receive a write with immediate may use up

struct Side {
  std::unique_ptr<fab::FabricDomain> domain;
  std::unique_ptr<fab::FabricEndpoint> endpoint;
};

Result<Side> openSide(const fab::FabricChoice& choice, const std::string& name) {
  Result<fab::FabricInfo> info = fab::FabricInfo::probe(choice);
  if (!info.isOk()) return info.status();
  Result<std::unique_ptr<fab::FabricDomain>> domain = fab::FabricDomain::open(std::move(*info));
  if (!domain.isOk()) return domain.status();
  fab::FabricEndpointOptions options;
  options.name = name;
  Result<std::unique_ptr<fab::FabricEndpoint>> ep = fab::FabricEndpoint::open(**domain, options);
  if (!ep.isOk()) return ep.status();
  return Side{std::move(*domain), std::move(*ep)};
}

uint8_t finalByte(size_t i, size_t size) { return static_cast<uint8_t>((i * 131 + size) >> 3); }

// What the target saw of one size.
struct TargetResult {
  uint64_t arrivals = 0;
  std::string error;  // empty: every write arrived once, and the last one's bytes are right
};

// The target's thread for one size: polls until the final write and every write before it
// have arrived (or the bound passes), reposting receives that writes used up, then checks the
// bytes of the final write.
void runTarget(fab::FabricEndpoint& ep, const fab::RegisteredMemory& inbox,
               const uint8_t* finalRegion, size_t size, const std::atomic<bool>& writerFailed,
               TargetResult& out) {
  uint64_t count = 0, sum = 0, expected = 0;
  bool finalSeen = false;
  std::vector<fab::FabricCompletion> got;
  const auto deadline = Clock::now() + kBound;
  while (!(finalSeen && count == expected)) {
    if (writerFailed.load()) return;
    if (Clock::now() > deadline) {
      out.error = fmt::format("target: {} of {} writes arrived{} within {} s", count, expected,
                              finalSeen ? "" : " and not the final one", kBound.count());
      return;
    }
    got.clear();
    if (Status s = ep.poll(got); !s.isOk()) {
      out.error = "target: " + s.toString();
      return;
    }
    for (const fab::FabricCompletion& c : got) {
      if (!c.status.isOk()) {
        out.error = fmt::format("target: {} failed: {}", fab::fabricOpName(c.op), c.status.toString());
        return;
      }
      if (c.op != fab::FabricOp::kRemoteWrite) continue;
      if (c.consumedRecv) {
        if (Status s = ep.postRecv(inbox, (c.token % (inbox.size() / kInboxWord)) * kInboxWord,
                                   kInboxWord, c.token);
            !s.isOk()) {
          out.error = "target: reposting a receive: " + s.toString();
          return;
        }
      }
      if ((c.immediate & kFinal) != 0) {
        finalSeen = true;
        expected = c.immediate & ~kFinal;
      } else {
        ++count;
        sum += c.immediate;
      }
    }
  }
  out.arrivals = count + 1;
  // Each sequence number 0..n-1 once: a duplicate or a stray shows in the sum.
  if (sum != expected * (expected - 1) / 2) {
    out.error = fmt::format("target: immediates sum to {}, not {}: a write arrived twice or with "
                            "the wrong immediate", sum, expected * (expected - 1) / 2);
    return;
  }
  for (size_t i = 0; i < size; ++i) {
    if (finalRegion[i] != finalByte(i, size)) {
      out.error = fmt::format("target: byte {} of the final {}-byte write is {:#04x}, not {:#04x}",
                              i, size, finalRegion[i], finalByte(i, size));
      return;
    }
  }
}

// GB/s of memcpy(size) on this machine, best of a few passes of about 50 ms each.
double memcpyGBps(uint8_t* dst, const uint8_t* src, size_t size) {
  double best = 0;
  for (int pass = 0; pass < 3; ++pass) {
    uint64_t n = 0;
    const auto t0 = Clock::now();
    std::chrono::duration<double> dt{};
    do {
      std::memcpy(dst, src, size);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      ++n;
      dt = Clock::now() - t0;
    } while (dt.count() < 0.05);
    best = std::max(best, static_cast<double>(n * size) / dt.count() / 1e9);
  }
  return best;
}

struct Row {
  double gbps = 0, usPerWrite = 0;
  LatencySummary latency;
  uint64_t writes = 0;
};

// One size: the timed writes, then the final one; the target runs on its own thread.
Result<Row> runSize(Side& writer, Side& target, fab::FabricEndpoint::PeerId peer,
                    const fab::RegisteredMemory& inbox, size_t size, int window, double seconds) {
  // Target: `window` slots and the final region; writer: the timed source and the final one.
  std::vector<uint8_t> slots((static_cast<size_t>(window) + 1) * size, 0xEE);
  std::vector<uint8_t> source(2 * size);
  for (size_t i = 0; i < size; ++i) {
    source[i] = static_cast<uint8_t>(i * 7);
    source[size + i] = finalByte(i, size);
  }
  Result<fab::RegisteredMemory> slotMem = fab::RegisteredMemory::add(
      *target.domain, slots.data(), slots.size(), fab::RegisteredMemory::Access::kRemoteWrite);
  if (!slotMem.isOk()) return slotMem.status();
  Result<fab::RegisteredMemory> srcMem = fab::RegisteredMemory::add(
      *writer.domain, source.data(), source.size(), fab::RegisteredMemory::Access::kLocal);
  if (!srcMem.isOk()) return srcMem.status();
  const fab::RemoteBuffer granted = slotMem->remote();
  const uint8_t* finalRegion = slots.data() + static_cast<size_t>(window) * size;

  std::atomic<bool> writerFailed{false};
  TargetResult seen;
  std::thread targetThread(
      [&] { runTarget(*target.endpoint, inbox, finalRegion, size, writerFailed, seen); });
  auto fail = [&](std::string why) -> Status {
    writerFailed = true;
    targetThread.join();
    std::vector<fab::FabricCompletion> dropped;  // what is still posted, before its memory goes
    (void)writer.endpoint->finishPending(std::chrono::seconds(5), dropped);
    return internalError(std::move(why));
  };

  std::vector<Clock::time_point> postedAt(static_cast<size_t>(window));
  std::vector<double> latencyUs;
  std::vector<fab::FabricCompletion> got;
  uint64_t posted = 0, completed = 0;
  const uint64_t minWrites = 4 * static_cast<uint64_t>(window);
  const auto t0 = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  while (true) {
    const bool timeUp = elapsed() >= seconds && posted >= minWrites;
    while (!timeUp && posted - completed < static_cast<uint64_t>(window) && posted < (kFinal - 1)) {
      const size_t slot = posted % static_cast<uint64_t>(window);
      postedAt[slot] = Clock::now();
      if (Status s = writer.endpoint->postWrite(peer, *srcMem, 0, size, granted, slot * size,
                                                static_cast<uint32_t>(posted), posted);
          !s.isOk()) {
        return fail("writer: " + s.toString());
      }
      ++posted;
    }
    if (timeUp && completed == posted) break;
    got.clear();
    if (Status s = writer.endpoint->poll(got); !s.isOk()) return fail("writer: " + s.toString());
    for (const fab::FabricCompletion& c : got) {
      if (!c.status.isOk()) return fail("writer: write failed: " + c.status.toString());
      if (c.op != fab::FabricOp::kWrite) continue;
      latencyUs.push_back(std::chrono::duration<double, std::micro>(
                              Clock::now() - postedAt[c.token % static_cast<uint64_t>(window)])
                              .count());
      ++completed;
    }
    if (elapsed() > seconds + kBound.count()) {
      return fail(fmt::format("writer: {} writes still pending after {} s", posted - completed,
                              kBound.count()));
    }
  }
  const double dt = elapsed();

  // The final write: other bytes, to a region of its own, once every timed write has landed.
  if (Status s = writer.endpoint->postWrite(peer, *srcMem, size, size, granted,
                                            static_cast<uint64_t>(window) * size,
                                            kFinal | static_cast<uint32_t>(posted), posted);
      !s.isOk()) {
    return fail("writer: final write: " + s.toString());
  }
  got.clear();
  if (Status s = writer.endpoint->finishPending(kBound, got); !s.isOk()) {
    return fail("writer: final write: " + s.toString());
  }
  for (const fab::FabricCompletion& c : got) {
    if (!c.status.isOk()) return fail("writer: final write failed: " + c.status.toString());
  }
  targetThread.join();
  if (!seen.error.empty()) return internalError(seen.error);
  if (seen.arrivals != posted + 1) {
    return internalError(fmt::format("target counted {} writes, the writer posted {}",
                                     seen.arrivals, posted + 1));
  }
  Row row;
  row.writes = posted;
  row.gbps = static_cast<double>(posted * size) / dt / 1e9;
  row.usPerWrite = dt * 1e6 / static_cast<double>(posted);
  row.latency = summarize(std::move(latencyUs));
  return row;
}

int run(int argc, char** argv) {
  CLI::App app{"RMA-write bandwidth and latency of the fabric layer between two endpoints"};
  std::string provider = "tcp", node, sizesText = "4K,16K,64K,256K,1M,4M,16M,64M";
  int window = 8;
  double seconds = 1.0;
  app.add_option("--provider", provider, "libfabric provider: tcp, verbs, efa")
      ->capture_default_str();
  app.add_option("--node", node, "local address or interface to bind (default: 127.0.0.1 on "
                                 "tcp, else the provider's first domain)");
  app.add_option("--sizes", sizesText, "bytes per write, comma-separated (4K, 1MiB, ...)")
      ->capture_default_str();
  app.add_option("--window", window, "writes in flight (the data path's credits)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--seconds", seconds, "timed writes per size, in seconds")
      ->check(CLI::Range(0.01, 600.0))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (node.empty() && provider == "tcp") node = "127.0.0.1";

  std::vector<size_t> sizes;
  for (size_t at = 0; at <= sizesText.size();) {
    const size_t comma = std::min(sizesText.find(',', at), sizesText.size());
    Result<uint64_t> bytes = parseByteSize(std::string_view(sizesText).substr(at, comma - at));
    if (!bytes.isOk() || *bytes == 0) {
      fmt::print(stderr, "fabric_write_bw: --sizes: '{}' is not a byte size above 0\n",
                 sizesText.substr(at, comma - at));
      return 2;
    }
    sizes.push_back(*bytes);
    at = comma + 1;
  }

  const fab::FabricChoice choice{provider, node};
  Result<Side> target = openSide(choice, "target");
  Result<Side> writer = target.isOk() ? openSide(choice, "writer") : Result<Side>(target.status());
  if (!writer.isOk()) {
    fmt::print(stderr, "fabric_write_bw: {}\n", writer.status().message());
    return 1;
  }
  Result<fab::FabricEndpoint::PeerId> peer =
      writer->endpoint->addPeer(target->endpoint->address(), "target");
  if (!peer.isOk()) {
    fmt::print(stderr, "fabric_write_bw: {}\n", peer.status().message());
    return 1;
  }
  // Receives for writes with immediate to use up (FI_RX_CQ_DATA, as verbs): one per write in
  // flight and the final one; the target reposts each that is used.
  std::vector<uint8_t> inboxBytes((static_cast<size_t>(window) + 1) * kInboxWord);
  Result<fab::RegisteredMemory> inbox =
      fab::RegisteredMemory::add(*target->domain, inboxBytes.data(), inboxBytes.size(),
                                 fab::RegisteredMemory::Access::kLocal);
  if (!inbox.isOk()) {
    fmt::print(stderr, "fabric_write_bw: {}\n", inbox.status().message());
    return 1;
  }
  for (int i = 0; i <= window; ++i) {
    if (Status s = target->endpoint->postRecv(*inbox, static_cast<size_t>(i) * kInboxWord,
                                              kInboxWord, static_cast<uint64_t>(i));
        !s.isOk()) {
      fmt::print(stderr, "fabric_write_bw: {}\n", s.message());
      return 1;
    }
  }

  const bool onTcp = provider == "tcp";
  double tcpGBps = 0;
  if (onTcp) tcpGBps = probeLoopbackTcp(1, std::chrono::milliseconds(1000)).bytesPerSecond / 1e9;
  fmt::print("# fabric_write_bw: {} ({}), window {}, {} s per size, delivery-complete writes "
             "with immediate data, two endpoints in one process\n",
             target->domain->info().describe(), provider, window, seconds);
  if (onTcp) {
    fmt::print("# tcp provider over loopback: a correctness vehicle, NOT an RDMA figure; one raw "
               "TCP loopback stream (tcp_probe) {:.2f} GB/s\n", tcpGBps);
  }
  fmt::print("# limits measured in this run: memcpy of the same size{}\n",
             onTcp ? "; the raw TCP stream above" : "");
  fmt::print("{:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>9} {:>7}{}\n", "size", "writes",
             "GB/s", "us/write", "lat_med_us", "lat_p99_us", "memcpy", "/memcpy",
             onTcp ? "    /tcp" : "");
  std::vector<uint8_t> copyDst, copySrc;
  int failures = 0;
  for (size_t size : sizes) {
    Result<Row> row = runSize(*writer, *target, *peer, *inbox, size, window, seconds);
    if (!row.isOk()) {
      fmt::print("{:>9} FAILED: {}\n", formatByteSize(size), row.status().message());
      ++failures;
      continue;
    }
    copyDst.assign(size, 0);
    copySrc.assign(size, 1);
    const double copy = memcpyGBps(copyDst.data(), copySrc.data(), size);
    std::string tcpRatio = onTcp ? fmt::format(" {:>7.2f}", row->gbps / tcpGBps) : "";
    fmt::print("{:>9} {:>9} {:>9.2f} {:>10.1f} {:>10.1f} {:>10.1f} {:>9.2f} {:>7.2f}{}\n",
               formatByteSize(size), row->writes, row->gbps, row->usPerWrite,
               row->latency.median, row->latency.p99, copy, row->gbps / copy, tcpRatio);
    std::fflush(stdout);
  }
  std::vector<fab::FabricCompletion> dropped;
  target->endpoint->abort(abortedError("benchmark done"), dropped);  // the posted receives
  if (failures > 0) {
    fmt::print("# {} size(s) FAILED\n", failures);
    return 1;
  }
  fmt::print("# every write arrived once, counted by its immediate; each size's final write "
             "landed byte-exact\n");
  return 0;
}

}  // namespace
}  // namespace rs::bench

int main(int argc, char** argv) { return rs::bench::run(argc, argv); }
