// plugin_harness: one simulated NCCL node driving libnccl-net-reduction-server.so exactly as
// NCCL 2.28 does (spec section 5.1), from its own process. tests/nccl_plugin/run_harness.sh
// starts W of these beside real reducers, once per exported version.
//
//   plugin_harness --plugin PATH --version 11 --mode collnet --rank 0 --world 3 --dir DIR
// Without --plugin it finds the plugin as NCCL does: NCCL_NET_PLUGIN as given, else
// libnccl-net-<NCCL_NET_PLUGIN>.so on the loader's path.
// Modes:
//   collnet        init, devices, properties, listen/connect with exchanged handles, regMr,
//                  many iallreduce in flight for every (type, op) the plugin claims, checked,
//                  deregMr, closeColl, finalize; twice (a second communicator)
//   collnet-adapter  the same with every type once (sum) and every op once (fp32), each at one
//                  of the sizes in turn, so every size is sent too: for the older tables,
//                  which differ from v11 in argument lists, not in what they reach
//   collnet-reducer-lost  all-reduces in a loop, each checked, while run_harness.sh kills or
//                  stops a reducer; DIR/progress-<rank> counts those completed, DIR/stop ends
//                  the loop (at a round the ranks agree on); every call must succeed, the
//                  plugin's log must report the loss, and the loss's stall is printed beside
//                  the median all-reduce; DIR/attendance-<rank>: how long the thread that calls
//                  test() went without calling it (attendance.h)
//   p2p            a ring: listen, connect/accept polled until both are up, 32 isend/irecv in
//                  flight of many sizes, contents and sizes checked
//   collnet-down   the reducers are down: connect must fail with ncclRemoteError, on every node
//   collnet-refused  the reducers refuse this node (a wrong job secret): connect must fail
//   collnet-hostile-reducer  (one node) the reducer is this process's own listener, which
//                  accepts and then never speaks: connect must fail with ncclRemoteError
//                  within RS_CONNECT_TIMEOUT_MS, not hang; then it answers with an ERROR
//                  whose reason holds terminal escapes and a forged line: ncclRemoteError,
//                  and NCCL's log shows the reason escaped
//   collnet-die    rank 1 exits mid-run; the others' test() must return ncclRemoteError, not hang
//   p2p-die        rank 1 exits after connecting; rank 0's pending irecv must fail (ncclRemoteError)
//   bad-handle     connect with handles this plugin did not make: errors, no crash
// Exit code 0 means every check passed; failures print one line each to stderr.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <atomic>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/common/aligned_buffer.h"
#include "core/wire/control_frames.h"
#include "tests/nccl_plugin/attendance.h"
#include "tests/nccl_plugin/plugin_api.h"
#include "tests/support/verify_pattern.h"

namespace rs::harness {
namespace {

using Clock = std::chrono::steady_clock;
// A bound on every wait for a peer: far above a healthy run on a loaded 2-core machine, so it
// only turns a hang into a failure.
constexpr auto kPeerDeadline = std::chrono::seconds(120);

struct Args {
  std::string plugin, mode, dir;
  int version = 11, rank = 0, world = 2;
};

std::atomic<int> failures{0};  // EXPECT counts from any thread

#define EXPECT(cond, ...)                                              \
  do {                                                                 \
    if (!(cond)) {                                                     \
      ++failures;                                                      \
      std::fprintf(stderr, "rank %d: FAILED %s:%d: ", gRank, __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                               \
      std::fprintf(stderr, "\n");                                      \
    }                                                                  \
  } while (0)
#define EXPECT_OK(call) EXPECT((call) == ncclSuccess, "%s did not return ncclSuccess", #call)

int gRank = 0;

// --- rendezvous through files in a directory shared by the processes --------------------------

// RS_HARNESS_SLOW_FILES_MS: every publish takes that much longer, as on a file system that
// the machine's other writers stall (run_harness.sh's slow-files case).
void publish(const std::string& dir, const std::string& name, const void* data, size_t size) {
  static const int slowMs = std::atoi(std::getenv("RS_HARNESS_SLOW_FILES_MS") ?: "0");
  if (slowMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(slowMs));
  const std::string tmp = dir + "/." + name + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  std::rename(tmp.c_str(), (dir + "/" + name).c_str());
}

bool fetch(const std::string& dir, const std::string& name, void* data, size_t size) {
  const auto deadline = Clock::now() + kPeerDeadline;
  while (Clock::now() < deadline) {
    std::ifstream f(dir + "/" + name, std::ios::binary);
    if (f && f.read(static_cast<char*>(data), static_cast<std::streamsize>(size))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT(false, "no %s from a peer within %lld s", name.c_str(),
         static_cast<long long>(kPeerDeadline.count()));
  return false;
}

// --- checks shared by the modes ---------------------------------------------------------------

// RS_HARNESS_INNER=<name>:<N>: the plugin delegates point-to-point to that inner plugin,
// which its log says, and the inner's own init ran (its version line, RS_HARNESS_INNER_LIBRARY).
void checkDelegation() {
  const char* inner = std::getenv("RS_HARNESS_INNER");
  if (inner == nullptr) return;
  std::string name = inner, version = "?";
  if (auto colon = name.find(':'); colon != std::string::npos) {
    version = name.substr(colon + 1);
    name.resize(colon);
  }
  const std::string said = "point-to-point through the inner net plugin " + name +
                           " (ncclNetPlugin_v" + version + " of ";
  const char* library = std::getenv("RS_HARNESS_INNER_LIBRARY") ?: "?";
  bool delegated = false, innerInit = false;
  for (const auto& line : loggedLines()) {
    delegated = delegated || line.find(said) != std::string::npos;
    innerInit = innerInit || line.find(std::string(library) + " ") != std::string::npos;
  }
  EXPECT(delegated, "no log line says: %s...", said.c_str());
  EXPECT(innerInit, "the inner plugin logged no version line of %s", library);
}

int initAndCheckDevices(PluginApi& api, void** netCtx, void** collCtx, bool first) {
  EXPECT_OK(api.netInit(netCtx, 0x1234));
  int ndev = 0;
  if (first) {
    EXPECT_OK(api.netDevices(&ndev));
    EXPECT(ndev > 0, "net devices() = %d", ndev);
  } else {
    ndev = 1;  // NCCL asks devices() on the first init only
  }
  EXPECT_OK(api.collInit(collCtx, 0x1234));
  int ncoll = 0;
  if (first) {
    EXPECT_OK(api.collDevices(&ncoll));
    EXPECT(ncoll == ndev, "collnet devices() = %d, net devices() = %d", ncoll, ndev);
    for (int i = 0; i < ncoll; ++i) {
      ncclNetProperties_v11_t n{}, c{};
      EXPECT_OK(api.netGetProperties(i, &n));
      EXPECT_OK(api.collGetProperties(i, &c));
      EXPECT(n.name && c.name && std::strcmp(n.name, c.name) == 0,
             "device %d: net name %s, collnet name %s", i, n.name, c.name);
      // NCCL fills a NIC's topology from CollNet first: it must say what the net says.
      EXPECT(n.guid == c.guid && n.speed == c.speed && n.port == c.port &&
                 n.latency == c.latency && n.maxComms == c.maxComms,
             "device %d: CollNet's topology values differ from the net's", i);
      EXPECT(n.ptrSupport == NCCL_PTR_HOST && c.ptrSupport == NCCL_PTR_HOST, "ptrSupport");
      EXPECT(n.maxP2pBytes > 0 && n.maxP2pBytes <= NCCL_MAX_NET_SIZE_BYTES, "maxP2pBytes");
      EXPECT(c.maxCollBytes > 0 && c.maxCollBytes <= NCCL_MAX_NET_SIZE_BYTES, "maxCollBytes");
      EXPECT(n.maxRecvs == 1 && n.speed > 0, "maxRecvs %d speed %d", n.maxRecvs, n.speed);
    }
  }
  if (first) checkDelegation();
  return ndev;
}

// `attendance`: told of each test() call (what the thread did before the first: the harness's).
bool waitDone(PluginApi& api, bool coll, void* req, int* size, ncclResult_t* result,
              Attendance* attendance = nullptr) {
  const auto deadline = Clock::now() + kPeerDeadline;
  int done = 0;
  const char* since = "the harness's own steps";
  while (Clock::now() < deadline) {
    if (attendance) attendance->beat(since);
    since = "test()";
    *result = coll ? api.collTest(req, &done, size) : api.netTest(req, &done, size);
    if (*result != ncclSuccess || done) return true;
  }
  return false;
}

// --- collnet ----------------------------------------------------------------------------------

void* collnetConnect(PluginApi& api, void* ctx, const Args& a, const std::string& tag,
                     ncclResult_t* result) {
  ncclNetProperties_v11_t props{};
  EXPECT_OK(api.collGetProperties(0, &props));
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* lc = nullptr;
  EXPECT_OK(api.collListen(ctx, 0, handle, &lc));
  publish(a.dir, tag + "-" + std::to_string(a.rank), handle, sizeof handle);
  std::vector<std::vector<char>> all(static_cast<size_t>(a.world),
                                     std::vector<char>(NCCL_NET_HANDLE_MAXSIZE));
  std::vector<void*> ptrs;
  for (int r = 0; r < a.world; ++r) {
    fetch(a.dir, tag + "-" + std::to_string(r), all[static_cast<size_t>(r)].data(),
          NCCL_NET_HANDLE_MAXSIZE);
    ptrs.push_back(all[static_cast<size_t>(r)].data());
  }
  EXPECT_OK(api.collGetProperties(0, &props));
  void* cc = nullptr;
  *result = api.collConnect(ptrs.data(), a.world, a.rank, lc, &cc);
  if (*result == ncclSuccess) EXPECT_OK(api.collCloseListen(lc));  // NCCL drops it on failure
  return cc;
}

struct Pending {
  void* req;
  size_t recvOffset, count;
  ncclDataType_t type;
  ncclRedOp_t op;
};

void checkResult(const Pending& p, const char* recv, int world) {
  const auto t = static_cast<DataType>(p.type);
  const auto o = static_cast<ReduceOp>(p.op);
  // RS_WIRE_DTYPE=bf16: fp32 sums and averages come back rounded to bf16 (the inputs are small
  // integers, so only an average that is not a bf16 value shows it, and must).
  const char* wire = std::getenv("RS_WIRE_DTYPE");
  const bool bf16 = wire != nullptr && std::string_view(wire) == "bf16" &&
                    t == DataType::kFloat32 && (o == ReduceOp::kSum || o == ReduceOp::kAvg);
  const DataType expectAs = bf16 ? DataType::kBfloat16 : t;
  uint64_t wrong = 0, first = 0;
  for (uint64_t i = 0; i < p.count; ++i)
    if (test::loadAs(t, recv + p.recvOffset, i) != test::expectedResult(expectAs, o, world, i)) {
      if (wrong++ == 0) first = i;
    }
  EXPECT(wrong == 0, "type %d op %d count %zu: %llu wrong elements, first at %llu", p.type, p.op,
         p.count, static_cast<unsigned long long>(wrong), static_cast<unsigned long long>(first));
}

// Which (type, op) pairs and sizes a collnet run sends.
enum class Matrix { kFull, kAdapter };

// RS_HARNESS_EXPECT_FABRIC=1: the payloads went over the fabric to the reducers (the client's
// "data over the fabric" line) and no stream fell back to TCP (its "fabric not used" line).
// RS_HARNESS_EXPECT_FABRIC=declined:<why>: the fabric was declined, saying <why>, and never used.
void checkFabricUse() {
  const char* expect = std::getenv("RS_HARNESS_EXPECT_FABRIC");
  if (expect == nullptr) return;
  const std::string_view declinedTag = "declined:";
  const std::string e = expect;
  const bool declined = e.rfind(declinedTag, 0) == 0;
  const std::string why = declined ? e.substr(declinedTag.size()) : "";
  int over = 0, notUsed = 0;
  uint64_t zeroCopyBytes = 0;  // from the communicators' closing lines
  const std::string_view payloads = "fabric payloads: ";
  for (const auto& line : loggedLines()) {
    over += line.find("data over the fabric (") != std::string::npos;
    if (const size_t at = line.find(payloads); at != std::string::npos)
      zeroCopyBytes += std::strtoull(line.c_str() + at + payloads.size(), nullptr, 10);
    if (line.find("fabric not used") == std::string::npos) continue;
    ++notUsed;
    EXPECT(declined && line.find(why) != std::string::npos, "%s", line.c_str());
  }
  if (declined) {
    EXPECT(over == 0 && notUsed > 0, "fabric: %d streams' lines say used, %d not used (\"%s\")",
           over, notUsed, why.c_str());
  } else {
    EXPECT(over > 0, "no log line says the data went over the fabric");
    // NCCL's buffers are registered (collRegMr): the chunks leave from them, zero-copy.
    EXPECT(zeroCopyBytes > 0, "no payload bytes were written from the registered buffers");
  }
}

void runCollnet(PluginApi& api, const Args& a, int round, bool dieMidRun,
                Matrix matrix = Matrix::kFull) {
  void *netCtx = nullptr, *collCtx = nullptr;
  initAndCheckDevices(api, &netCtx, &collCtx, round == 0);
  ncclResult_t result;
  void* cc = collnetConnect(api, collCtx, a, "coll" + std::to_string(round), &result);
  EXPECT(result == ncclSuccess && cc != nullptr, "collnet connect failed (%d)", result);
  if (cc == nullptr) return;

  // NCCL's staging buffer: 2 x channels x 4 MiB, registered twice per channel.
  const int channels = 8;
  const size_t half = static_cast<size_t>(channels) * (4u << 20);
  AlignedBuffer buffer(2 * half);
  std::vector<void*> handles;
  for (int ch = 0; ch < channels; ++ch)
    for (int side = 0; side < 2; ++side) {
      void* mh = nullptr;
      EXPECT_OK(api.collRegMr(cc, buffer.data(), buffer.size(), NCCL_PTR_HOST, &mh));
      handles.push_back(mh);
    }
  char* send = reinterpret_cast<char*>(buffer.data());
  char* recv = send + half;

  std::vector<std::pair<ncclDataType_t, ncclRedOp_t>> supported;
  for (int t = 0; t < 12; ++t)
    for (int o = 0; o < 4; ++o) {
      int s = -1;
      EXPECT_OK(api.collReduceSupport(static_cast<ncclDataType_t>(t), static_cast<ncclRedOp_t>(o), &s));
      EXPECT(s == 1, "reduceSupport(%d, %d) = %d", t, o, s);  // fp8 (10, 11) included
      const bool sent = matrix == Matrix::kFull || o == ncclSum || t == ncclFloat32;
      if (s == 1 && sent)
        supported.emplace_back(static_cast<ncclDataType_t>(t), static_cast<ncclRedOp_t>(o));
    }

  // Many calls in flight (at most 8, as NCCL keeps), tested in issue order, some with size NULL.
  // The full matrix sends every pair at every size up to 512 KiB, and every third pair at 4 MiB
  // too (many chunks over both reducers: that size is 3/4 of the bytes, and its code is the same
  // whatever the pair); the adapter's pairs take the sizes in turn (one part, many parts, many
  // chunks): the pattern's fill and check, not the plugin, are most of a sanitizer tree's time.
  const std::vector<size_t> sizes = {1, 7, 4096, 65536 + 24, 512 << 10};
  const size_t largeSize = 4u << 20;
  const std::vector<size_t> adapterSizes = {7, 65536 + 24, largeSize};
  size_t pairIndex = static_cast<size_t>(round);  // the second communicator: other sizes
  std::deque<Pending> inFlight;
  size_t slot = 0;
  int calls = 0;
  bool sawError = false;  // collnet-die: the survivors must see one, from any call
  auto drainOne = [&] {
    Pending p = inFlight.front();
    inFlight.pop_front();
    int size = -1;
    const bool withSize = (calls++ % 3) != 0;
    ncclResult_t r;
    const bool finished = waitDone(api, true, p.req, withSize ? &size : nullptr, &r);
    EXPECT(finished, "collnet test() did not finish within 60 s (a hang)");
    if (r != ncclSuccess && dieMidRun) {
      EXPECT(r == ncclRemoteError, "collnet test() returned %d after node 1 died, not "
             "ncclRemoteError", r);
      sawError = true;
      return;
    }
    EXPECT(r == ncclSuccess, "collnet test() returned %d", r);
    if (!finished || r != ncclSuccess) return;
    const size_t bytes = p.count * dataTypeSize(static_cast<DataType>(p.type));
    if (withSize) EXPECT(size == static_cast<int>(bytes), "size %d, expected %zu", size, bytes);
    checkResult(p, recv, a.world);
  };
  for (auto [t, o] : supported) {
    if (sawError) break;
    std::vector<size_t> bytesList =
        matrix == Matrix::kFull ? sizes
                                : std::vector<size_t>{adapterSizes[pairIndex % adapterSizes.size()]};
    if (matrix == Matrix::kFull && pairIndex % 3 == 0) bytesList.push_back(largeSize);
    ++pairIndex;
    for (size_t bytes : bytesList) {
      const size_t esize = dataTypeSize(static_cast<DataType>(t));
      const size_t count = std::max<size_t>(1, bytes / esize);
      if (dieMidRun && a.rank == 1 && calls > 20) std::_Exit(0);  // vanish without closing
      if (inFlight.size() == 8) drainOne();
      // Each call in flight gets its own 1/8 of the staging halves (a channel's 4 MiB), like
      // NCCL's slots: the 9th call reuses the slot of the 1st, which has just been drained.
      const size_t offset = (slot++ % 8) * (half / 8);
      for (uint64_t i = 0; i < count; ++i)
        test::storeAs(static_cast<DataType>(t), send + offset, i,
                      test::exactInput(a.rank, i, static_cast<ReduceOp>(o)));
      void* req = nullptr;
      for (int tries = 0; req == nullptr && tries < 1000000; ++tries) {
        ncclResult_t r = api.collIallreduce(cc, send + offset, recv + offset, count, t, o,
                                            handles[1], handles[0], &req);
        if (r != ncclSuccess) {
          EXPECT(dieMidRun && r == ncclRemoteError, "iallreduce returned %d", r);
          sawError = true;
          break;
        }
      }
      if (req == nullptr) break;
      inFlight.push_back({req, offset, count, t, o});
    }
  }
  if (dieMidRun) {
    // The survivors must see an error (from iallreduce or test) long before any timeout.
    while (!inFlight.empty() && !sawError) drainOne();
    EXPECT(sawError, "no error after node 1 died");
    std::fprintf(stderr, "rank %d: saw the expected error after node 1 died\n", a.rank);
    return;  // like NCCL after a fatal error: no orderly teardown
  }
  while (!inFlight.empty()) drainOne();
  for (void* mh : handles) EXPECT_OK(api.collDeregMr(cc, mh));
  EXPECT_OK(api.collCloseColl(cc));
  EXPECT_OK(api.collFinalize(collCtx));
  EXPECT_OK(api.netFinalize(netCtx));
  checkFabricUse();
  std::fprintf(stderr, "rank %d: collnet v%d round %d: %d calls checked\n", a.rank, a.version,
               round, calls);
}

// --- collnet with a reducer lost mid-run ------------------------------------------------------

// collnet-reducer-lost: all-reduces in a loop, 8 in flight, while run_harness.sh kills or stops
// a reducer. Each rank writes how many it has completed to DIR/progress-<rank> (the state the
// script waits for); DIR/stop ends the loop at a round of kRound all-reduces that the ranks
// agree on through rank 0: it looks for DIR/stop after issuing each round and publishes what it
// saw as DIR/round-<k>; every rank reads round k after issuing round k + 1, the last it issues
// if round k saw DIR/stop. Rank 0 has published round k by then (the rank has completed an
// all-reduce of round k + 1, which rank 0 issued after publishing), so nobody waits.
constexpr int kRound = 16;  // more than the 8 in flight
// Long enough to meet every reducer (3 chunks, one per reducer, and every other call a 4th of
// a few elements), small enough to check fast under a sanitizer.
constexpr size_t kLoopCounts[] = {24576, 24576 + 7};
constexpr size_t kLoopSlotBytes = 128 << 10;

// The files of the loop (DIR/progress-<rank>, DIR/round-<k>, DIR/stop) read and written on a
// thread of their own: the thread that drives the plugin must not wait on the file system (a
// rename there waited 0.4 s beside a loaded machine's writers, its member unread meanwhile), as
// NCCL's proxy thread never does. Only the latest progress count goes out.
class LoopFiles {
 public:
  // `deadline`: when rank 0 stops the loop without DIR/stop (a failure).
  LoopFiles(const Args& a, Clock::time_point deadline)
      : dir_(a.dir), rank_(a.rank), deadline_(deadline), thread_([this] { run(); }) {}
  ~LoopFiles() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void setCompleted(size_t completed) {
    {
      std::lock_guard lock(mu_);
      completed_ = completed;
    }
    cv_.notify_one();
  }
  // Round `round` is issued: rank 0 looks for DIR/stop and publishes what it saw as round-<k>;
  // every rank reads round-<k - 1> then (rank 0 published it before issuing round k).
  void roundIssued(int round) {
    {
      std::lock_guard lock(mu_);
      issued_ = round;
    }
    cv_.notify_one();
  }
  // What round-<k> said (1: stop), once read; -1 before, -2 if it never came (a failure).
  int seen(int round) {
    std::lock_guard lock(mu_);
    if (static_cast<size_t>(round) < seen_.size()) return seen_[static_cast<size_t>(round)];
    return gaveUp_ ? -2 : -1;
  }

 private:
  void run() {
    size_t written = 0;
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stopping_ || completed_ != written || roundDue(); });
      // One of each that is due, in turn: the ranks wait for a round's word, the script for the
      // progress, and while the ranks run one of the two is always due again.
      const bool idle = !roundDue() && completed_ == written;
      if (roundDue()) {
        const int round = static_cast<int>(seen_.size());
        lock.unlock();
        char seen = 0;
        bool got = true;
        if (rank_ == 0) {
          const bool asked = std::ifstream(dir_ + "/stop").good();
          EXPECT(asked || Clock::now() < deadline_, "no %s/stop within %lld s", dir_.c_str(),
                 static_cast<long long>(kPeerDeadline.count()));
          seen = asked || Clock::now() >= deadline_ ? 1 : 0;
          publish(dir_, "round-" + std::to_string(round), &seen, 1);
          lock.lock();
        } else {
          got = false;
          // As fetch(), but a rank that ends meanwhile (a failure) need not wait for it.
          for (const auto until = Clock::now() + kPeerDeadline; !got;) {
            std::ifstream f(dir_ + "/round-" + std::to_string(round), std::ios::binary);
            got = f && f.read(&seen, 1);
            lock.lock();
            if (got || stopping_ || Clock::now() >= until) break;
            cv_.wait_for(lock, std::chrono::milliseconds(5), [&] { return stopping_; });
            lock.unlock();
          }
          EXPECT(got || stopping_, "no %s/round-%d from rank 0 within %lld s", dir_.c_str(), round,
                 static_cast<long long>(kPeerDeadline.count()));
        }
        if (got) seen_.push_back(seen);
        else gaveUp_ = true;
      }
      if (completed_ != written) {
        written = completed_;
        lock.unlock();
        const std::string text = std::to_string(written) + "\n";
        publish(dir_, "progress-" + std::to_string(rank_), text.data(), text.size());
        lock.lock();
      }
      if (idle) return;  // stopping, and the last count is out
    }
  }
  // The next round to read or publish: rank 0 its own once issued, the others the one before
  // the last issued.
  bool roundDue() const {
    if (gaveUp_) return false;
    const int next = static_cast<int>(seen_.size());
    return rank_ == 0 ? next <= issued_ : next < issued_;
  }

  const std::string dir_;
  const int rank_;
  const Clock::time_point deadline_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t completed_ = 0;
  int issued_ = -1;
  std::vector<char> seen_;  // [round]
  bool gaveUp_ = false;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the rest is set
};

void runCollnetReducerLost(PluginApi& api, const Args& a) {
  void *netCtx = nullptr, *collCtx = nullptr;
  initAndCheckDevices(api, &netCtx, &collCtx, true);
  ncclResult_t result;
  void* cc = collnetConnect(api, collCtx, a, "lost", &result);
  EXPECT(result == ncclSuccess && cc != nullptr, "collnet connect failed (%d)", result);
  if (cc == nullptr) return;
  AlignedBuffer buffer(2 * 8 * kLoopSlotBytes);
  void *smh = nullptr, *rmh = nullptr;
  EXPECT_OK(api.collRegMr(cc, buffer.data(), buffer.size(), NCCL_PTR_HOST, &smh));
  EXPECT_OK(api.collRegMr(cc, buffer.data(), buffer.size(), NCCL_PTR_HOST, &rmh));
  char* send = reinterpret_cast<char*>(buffer.data());
  char* recv = send + 8 * kLoopSlotBytes;
  const std::pair<ncclDataType_t, ncclRedOp_t> pairs[] = {
      {ncclFloat32, ncclSum}, {ncclInt32, ncclMax}, {ncclBfloat16, ncclSum}};

  struct Timed {
    Pending p;
    Clock::time_point issued;
    size_t warnings;  // the plugin's WARN lines by then: one more when this rank finds the loss
  };
  std::deque<Timed> inFlight;
  std::vector<double> seconds;  // each all-reduce's, from its iallreduce to its test()'s done
  double stall = 0;  // the slowest of those in flight when this rank found the loss
  bool failed = false;
  Attendance attendance;
  const auto deadline = Clock::now() + kPeerDeadline;
  LoopFiles files(a, deadline);
  // The front all-reduce's test() finished it (or failed, or never finished): check and count.
  auto complete = [&](bool finished, ncclResult_t r) {
    const Timed t = inFlight.front();
    inFlight.pop_front();
    EXPECT(finished, "all-reduce %zu: test() did not finish within %lld s (a hang)",
           seconds.size(), static_cast<long long>(kPeerDeadline.count()));
    EXPECT(r == ncclSuccess, "all-reduce %zu: test() returned %d", seconds.size(), r);
    if (!finished || r != ncclSuccess) {
      failed = true;
      return;
    }
    seconds.push_back(std::chrono::duration<double>(Clock::now() - t.issued).count());
    if (loggedWarnings().size() > t.warnings) stall = std::max(stall, seconds.back());
    checkResult(t.p, recv, a.world);
    files.setCompleted(seconds.size());
  };
  auto drainOne = [&] {
    ncclResult_t r;
    int size = -1;
    const bool finished = waitDone(api, true, inFlight.front().p.req, &size, &r, &attendance);
    complete(finished, r);
  };
  // One test() of the front all-reduce, as NCCL's proxy thread keeps polling what it has in
  // flight while it waits for something else.
  auto pollFront = [&] {
    if (inFlight.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return attendance.rest();
    }
    attendance.beat("the harness's own steps");
    int done = 0, size = -1;
    const ncclResult_t r = api.collTest(inFlight.front().p.req, &done, &size);
    if (r != ncclSuccess || done) complete(true, r);
  };
  bool stop = false;
  size_t issued = 0;
  for (int round = 0; !stop && !failed; ++round) {
    for (int i = 0; i < kRound && !failed; ++i, ++issued) {
      if (inFlight.size() == 8) drainOne();
      if (failed) break;
      const auto [t, o] = pairs[issued % std::size(pairs)];
      const size_t count = kLoopCounts[issued % std::size(kLoopCounts)];
      const size_t offset = (issued % 8) * kLoopSlotBytes;
      const auto type = static_cast<DataType>(t);
      for (uint64_t e = 0; e < count; ++e)
        test::storeAs(type, send + offset, e, test::exactInput(a.rank, e, static_cast<ReduceOp>(o)));
      // Poisoned: a result that never came cannot pass for the last one in this slot.
      std::memset(recv + offset, 0xFF, count * dataTypeSize(type));
      void* req = nullptr;
      ncclResult_t r = ncclSuccess;
      for (const auto refusedUntil = Clock::now() + kPeerDeadline;
           req == nullptr && r == ncclSuccess && !failed && Clock::now() < refusedUntil;) {
        r = api.collIallreduce(cc, send + offset, recv + offset, count, t, o, smh, rmh, &req);
        if (req == nullptr && r == ncclSuccess) pollFront();  // "not now": NCCL polls meanwhile
      }
      EXPECT(r == ncclSuccess, "all-reduce %zu: iallreduce returned %d", issued, r);
      EXPECT(req != nullptr || r != ncclSuccess, "all-reduce %zu: iallreduce refused for %lld s",
             issued, static_cast<long long>(kPeerDeadline.count()));
      if (req == nullptr) failed = true;
      else inFlight.push_back({{req, offset, count, t, o}, Clock::now(), loggedWarnings().size()});
    }
    if (failed) break;
    files.roundIssued(round);
    if (round > 0) {
      int seen;
      while ((seen = files.seen(round - 1)) == -1 && !failed) pollFront();
      if (seen < 0) break;  // fetch() said why
      stop = seen != 0;
    }
  }
  while (!inFlight.empty() && !failed) drainOne();
  // For run_harness.sh, which reruns a case that failed while a rank waited for a CPU for half
  // its loss bound: "<longest wait for a CPU in one stretch, ms> <longest stretch, ms>".
  std::fprintf(stderr, "rank %d: %s\n", a.rank, attendance.summary().c_str());
  const std::string attended = std::to_string(static_cast<long>(attendance.longestRunQueueMs())) +
                               " " + std::to_string(static_cast<long>(attendance.longestMs())) + "\n";
  publish(a.dir, "attendance-" + std::to_string(a.rank), attended.data(), attended.size());
  bool lossLogged = false;
  for (const std::string& line : loggedWarnings())
    lossLogged = lossLogged || line.find("lost: their chunks go to the survivors") != std::string::npos;
  EXPECT(lossLogged, "the plugin's log does not say that a reducer was lost");
  if (failed) return;  // like NCCL after an error: no orderly teardown (main exits at once)
  EXPECT_OK(api.collDeregMr(cc, smh));
  EXPECT_OK(api.collDeregMr(cc, rmh));
  EXPECT_OK(api.collCloseColl(cc));
  EXPECT_OK(api.collFinalize(collCtx));
  EXPECT_OK(api.netFinalize(netCtx));
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  std::fprintf(stderr,
               "rank %d: %zu all-reduces checked across the loss; the slowest of those in flight "
               "when it was found took %.3f s, the median %.4f s (the slowest of all %.3f s)\n",
               a.rank, sorted.size(), stall, sorted.empty() ? 0.0 : sorted[sorted.size() / 2],
               sorted.empty() ? 0.0 : sorted.back());
}

// --- p2p --------------------------------------------------------------------------------------

uint8_t patternByte(int sender, int message, size_t i) {
  return static_cast<uint8_t>(sender * 131 + message * 31 + i * 7);
}

void runP2p(PluginApi& api, const Args& a, bool dieAfterConnect) {
  void *netCtx = nullptr, *collCtx = nullptr;
  initAndCheckDevices(api, &netCtx, &collCtx, true);
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* lc = nullptr;
  EXPECT_OK(api.netListen(netCtx, 0, handle, &lc));
  publish(a.dir, "p2p-" + std::to_string(a.rank), handle, sizeof handle);
  const int next = (a.rank + 1) % a.world, prev = (a.rank + a.world - 1) % a.world;
  char peerHandle[NCCL_NET_HANDLE_MAXSIZE];
  if (!fetch(a.dir, "p2p-" + std::to_string(next), peerHandle, sizeof peerHandle)) return;
  void *sc = nullptr, *rc = nullptr;
  const auto deadline = Clock::now() + kPeerDeadline;
  while ((sc == nullptr || rc == nullptr) && Clock::now() < deadline) {
    if (sc == nullptr && api.netConnect(netCtx, 0, peerHandle, &sc) != ncclSuccess) break;
    if (rc == nullptr && api.netAccept(lc, &rc) != ncclSuccess) break;
  }
  EXPECT(sc != nullptr && rc != nullptr, "p2p connect/accept did not complete");
  EXPECT_OK(api.netCloseListen(lc));
  if (sc == nullptr || rc == nullptr) return;
  if (dieAfterConnect && a.rank == 1) std::_Exit(0);

  const std::vector<size_t> sizes = {0, 1, 7, 4096, 65535, 65536 + 3, 1 << 20, (4u << 20) + 1};
  const int messages = 64;
  const size_t maxSize = (4u << 20) + 1;
  std::vector<AlignedBuffer> out, in;
  for (int m = 0; m < 32; ++m) {
    out.emplace_back(maxSize + 64);
    in.emplace_back(maxSize + 64);
  }
  void *smh = nullptr, *rmh = nullptr;
  EXPECT_OK(api.netRegMr(sc, out[0].data(), out[0].size(), NCCL_PTR_HOST, &smh));
  EXPECT_OK(api.netRegMr(rc, in[0].data(), in[0].size(), NCCL_PTR_HOST, &rmh));
  std::deque<std::pair<void*, int>> sends, recvs;  // request, message index
  int posted = 0, received = 0, sent = 0;
  auto size = [&](int m) { return sizes[static_cast<size_t>(m) % sizes.size()]; };
  const auto stop = Clock::now() + kPeerDeadline;
  while ((received < messages || sent < messages) && Clock::now() < stop) {
    // Keep 32 of each in flight; the 33rd may be refused (NULL request): retried next turn.
    while (posted < messages && sends.size() < 32 && recvs.size() < 32) {
      auto& o = out[static_cast<size_t>(posted % 32)];
      for (size_t i = 0; i < size(posted); ++i)
        reinterpret_cast<uint8_t*>(o.data())[i] = patternByte(a.rank, posted, i);
      void *sreq = nullptr, *rreq = nullptr;
      ncclResult_t rr = api.netIrecv(rc, in[static_cast<size_t>(posted % 32)].data(), maxSize,
                                     posted, rmh, &rreq);
      if (rr != ncclSuccess) {
        EXPECT(dieAfterConnect && rr == ncclRemoteError, "irecv returned %d", rr);
        std::fprintf(stderr, "rank %d: receive refused after the peer died, as it must\n", a.rank);
        return;
      }
      if (rreq == nullptr) break;
      recvs.emplace_back(rreq, posted);
      while (sreq == nullptr && Clock::now() < stop) {
        ncclResult_t r = api.netIsend(sc, o.data(), size(posted), posted, smh, &sreq);
        if (r != ncclSuccess) {
          EXPECT(dieAfterConnect && r == ncclRemoteError, "isend returned %d", r);
          std::fprintf(stderr, "rank %d: send failed after the peer died, as it must\n", a.rank);
          return;
        }
      }
      sends.emplace_back(sreq, posted);
      ++posted;
    }
    if (!sends.empty()) {
      int done = 0, bytes = -1;
      ncclResult_t r = api.netTest(sends.front().first, &done, &bytes);
      if (r != ncclSuccess) {
        EXPECT(dieAfterConnect && r == ncclRemoteError, "isend test returned %d", r);
        std::fprintf(stderr, "rank %d: pending send failed after the peer died, as it must\n", a.rank);
        return;
      }
      if (done) {
        EXPECT(bytes == static_cast<int>(size(sends.front().second)), "sent %d bytes", bytes);
        sends.pop_front();
        ++sent;
      }
    }
    if (!recvs.empty()) {
      int done = 0, bytes = -1;
      ncclResult_t r = api.netTest(recvs.front().first, &done, &bytes);
      if (r != ncclSuccess) {
        EXPECT(dieAfterConnect && r == ncclRemoteError, "irecv test returned %d", r);
        std::fprintf(stderr, "rank %d: pending receive failed after the peer died, as it must\n", a.rank);
        return;
      }
      if (done) {
        const int m = recvs.front().second;
        recvs.pop_front();
        EXPECT(bytes == static_cast<int>(size(m)), "message %d: %d bytes, expected %zu", m, bytes, size(m));
        const auto* data = reinterpret_cast<const uint8_t*>(in[static_cast<size_t>(m % 32)].data());
        size_t bad = 0;
        for (size_t i = 0; i < size(m); ++i) bad += data[i] != patternByte(prev, m, i);
        EXPECT(bad == 0, "message %d from rank %d: %zu bytes differ", m, prev, bad);
        ++received;
      }
    }
  }
  EXPECT(!dieAfterConnect || a.rank != 0, "rank 0 finished although its peer died");
  EXPECT(received == messages && sent == messages, "p2p: %d sent, %d received of %d", sent,
         received, messages);
  EXPECT_OK(api.netDeregMr(sc, smh));
  EXPECT_OK(api.netDeregMr(rc, rmh));
  // Both ends finish before anyone closes, as NCCL does at communicator teardown.
  const char token = 1;
  publish(a.dir, "p2p-done-" + std::to_string(a.rank), &token, 1);
  char peerToken;
  fetch(a.dir, "p2p-done-" + std::to_string(next), &peerToken, 1);
  fetch(a.dir, "p2p-done-" + std::to_string(prev), &peerToken, 1);
  EXPECT_OK(api.netCloseSend(sc));
  EXPECT_OK(api.netCloseRecv(rc));
  EXPECT_OK(api.collFinalize(collCtx));
  EXPECT_OK(api.netFinalize(netCtx));
  std::fprintf(stderr, "rank %d: p2p v%d: %d messages each way checked\n", a.rank, a.version,
               messages);
}

// --- misuse -----------------------------------------------------------------------------------

void runCollnetDown(PluginApi& api, const Args& a) {
  void *netCtx = nullptr, *collCtx = nullptr;
  initAndCheckDevices(api, &netCtx, &collCtx, true);
  ncclResult_t result;
  const auto start = Clock::now();
  void* cc = collnetConnect(api, collCtx, a, "down", &result);
  EXPECT(result != ncclSuccess && cc == nullptr,
         "collnet connect succeeded with the reducers down");
  EXPECT(result == ncclRemoteError,
         "collnet connect with the reducers down returned %d, not ncclRemoteError", result);
  std::fprintf(stderr, "rank %d: collnet connect failed as expected after %.1f s\n", a.rank,
               std::chrono::duration<double>(Clock::now() - start).count());
  EXPECT_OK(api.collFinalize(collCtx));
  EXPECT_OK(api.netFinalize(netCtx));
}

void runCollnetRefused(PluginApi& api, const Args& a) {
  void *netCtx = nullptr, *collCtx = nullptr;
  initAndCheckDevices(api, &netCtx, &collCtx, true);
  ncclResult_t result;
  void* cc = collnetConnect(api, collCtx, a, "refused", &result);
  EXPECT(result != ncclSuccess && cc == nullptr, "collnet connect succeeded though refused");
  std::fprintf(stderr, "rank %d: collnet connect refused as expected (%d)\n", a.rank, result);
  EXPECT_OK(api.collFinalize(collCtx));
  EXPECT_OK(api.netFinalize(netCtx));
}

// A reducer that misbehaves, in this process: a listener on 127.0.0.1 whose thread accepts
// every connection and hands it to `greet` (which may say anything, or nothing), then keeps it
// open until the end.
class HostileReducer {
 public:
  using Greet = std::function<void(int fd)>;
  explicit HostileReducer(Greet greet) : greet_(std::move(greet)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listener_, 64) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      EXPECT(false, "hostile reducer: no listener");
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        const int fd = ::accept(listener_, nullptr, nullptr);
        if (fd < 0 || stopping_) {
          if (fd >= 0) ::close(fd);
          return;
        }
        accepted_.push_back(fd);
        greet_(fd);
      }
    });
  }
  ~HostileReducer() {
    stopping_ = true;
    ::shutdown(listener_, SHUT_RDWR);  // ends the blocked accept
    if (thread_.joinable()) thread_.join();
    for (int fd : accepted_) ::close(fd);
    if (listener_ >= 0) ::close(listener_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  Greet greet_;
  int listener_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::vector<int> accepted_;  // the accept thread's until it is joined
  std::thread thread_;
};

bool printable(const std::string& line) {
  for (unsigned char c : line)
    if (c < 0x20 || c >= 0x7F) return false;
  return true;
}

void runCollnetHostileReducer(PluginApi& api, const Args& a) {
  // Accepts, then says nothing; once `forge` is set, sends an ERROR with a hostile reason.
  std::atomic<bool> forge{false};
  const Status hostile = abortedError(
      "\x1b[2J\x1b[H\r\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 999.000");
  HostileReducer reducer([&](int fd) {
    if (!forge) return;
    const wire::ErrorFrame f = wire::errorFrame({}, 0, hostile);
    std::string frame(f.header.begin(), f.header.end());
    frame += f.reason;
    if (::write(fd, frame.data(), frame.size()) < 0) return;  // the connect fails without it
  });
  // Before init: the plugin reads its environment there.
  ::setenv("RS_REDUCERS", reducer.address().c_str(), 1);
  void *netCtx = nullptr, *collCtx = nullptr;
  initAndCheckDevices(api, &netCtx, &collCtx, true);
  ncclResult_t result;
  const auto start = Clock::now();
  void* cc = collnetConnect(api, collCtx, a, "silent", &result);
  EXPECT(result == ncclRemoteError && cc == nullptr,
         "collnet connect to a reducer that never speaks returned %d, not ncclRemoteError",
         result);
  std::fprintf(stderr, "rank %d: collnet connect to a silent reducer failed after %.1f s\n",
               a.rank, std::chrono::duration<double>(Clock::now() - start).count());

  forge = true;
  cc = collnetConnect(api, collCtx, a, "forged", &result);
  EXPECT(result == ncclRemoteError && cc == nullptr,
         "collnet connect refused with an ERROR returned %d, not ncclRemoteError", result);
  bool escaped = false;
  for (const std::string& line : loggedWarnings()) {
    EXPECT(printable(line), "a WARN line carries a control character: %s", line.c_str());
    escaped = escaped ||
              line.find("\\x1b[2J\\x1b[H\\x0d\\x0a# Out of bounds") != std::string::npos;
  }
  EXPECT(escaped, "no WARN line shows the reducer's reason escaped");
  if (escaped)
    std::fprintf(stderr, "rank %d: the hostile reason reached NCCL's log escaped\n", a.rank);
  EXPECT_OK(api.collFinalize(collCtx));
  EXPECT_OK(api.netFinalize(netCtx));
}

void runBadHandle(PluginApi& api, const Args& a) {
  void *netCtx = nullptr, *collCtx = nullptr;
  initAndCheckDevices(api, &netCtx, &collCtx, true);
  std::vector<char> junk(NCCL_NET_HANDLE_MAXSIZE, 0x5A);
  void* ptrs[2] = {junk.data(), junk.data()};
  void* cc = nullptr;
  EXPECT(api.collConnect(ptrs, 2, a.rank, nullptr, &cc) != ncclSuccess && cc == nullptr,
         "collnet connect accepted foreign handles");
  void* sc = nullptr;
  ncclResult_t r = ncclSuccess;
  for (int i = 0; i < 1000 && r == ncclSuccess && sc == nullptr; ++i)
    r = api.netConnect(netCtx, 0, junk.data(), &sc);
  EXPECT(r != ncclSuccess && sc == nullptr, "net connect accepted a foreign handle");
  EXPECT_OK(api.collFinalize(collCtx));
  EXPECT_OK(api.netFinalize(netCtx));
  std::fprintf(stderr, "rank %d: foreign handles refused\n", a.rank);
}

// NCCL_RS_INNER_NET names what cannot serve: both inits fail (NCCL then runs its own
// transports), with a WARN that says why (RS_HARNESS_EXPECT_WARN).
void runInnerRefused(PluginApi& api, const Args&) {
  void *netCtx = nullptr, *collCtx = nullptr;
  EXPECT(api.netInit(&netCtx, 0x1234) != ncclSuccess, "net init succeeded");
  EXPECT(api.collInit(&collCtx, 0x1234) != ncclSuccess, "collnet init succeeded");
  const char* expected = std::getenv("RS_HARNESS_EXPECT_WARN") ?: "";
  bool said = false;
  for (const auto& w : loggedWarnings()) said = said || w.find(expected) != std::string::npos;
  EXPECT(said, "no WARN line says \"%s\"", expected);
  if (said) std::fprintf(stderr, "rank %d: refused, saying \"%s\"\n", gRank, expected);
}

}  // namespace
}  // namespace rs::harness

int main(int argc, char** argv) {
  using namespace rs::harness;
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--plugin") a.plugin = v;
    else if (k == "--version") a.version = std::atoi(v.c_str());
    else if (k == "--mode") a.mode = v;
    else if (k == "--rank") a.rank = std::atoi(v.c_str());
    else if (k == "--world") a.world = std::atoi(v.c_str());
    else if (k == "--dir") a.dir = v;
    else {
      std::fprintf(stderr, "plugin_harness: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  gRank = a.rank;
  PluginApi api;
  std::string error;
  if (!loadPlugin(a.plugin, a.version, &api, &error)) {
    std::fprintf(stderr, "rank %d: cannot load %s v%d: %s\n", a.rank, a.plugin.c_str(),
                 a.version, error.c_str());
    return 1;
  }
  if (a.mode == "collnet" || a.mode == "collnet-adapter") {
    const Matrix matrix = a.mode == "collnet" ? Matrix::kFull : Matrix::kAdapter;
    runCollnet(api, a, 0, false, matrix);
    runCollnet(api, a, 1, false, matrix);  // a second communicator in the same process
  } else if (a.mode == "collnet-die") {
    runCollnet(api, a, 0, true);
  } else if (a.mode == "collnet-reducer-lost") {
    runCollnetReducerLost(api, a);
  } else if (a.mode == "p2p") {
    runP2p(api, a, false);
  } else if (a.mode == "p2p-die") {
    runP2p(api, a, true);
  } else if (a.mode == "collnet-down") {
    runCollnetDown(api, a);
  } else if (a.mode == "collnet-refused") {
    runCollnetRefused(api, a);
  } else if (a.mode == "collnet-hostile-reducer") {
    runCollnetHostileReducer(api, a);
  } else if (a.mode == "bad-handle") {
    runBadHandle(api, a);
  } else if (a.mode == "inner-refused") {
    runInnerRefused(api, a);
  } else {
    std::fprintf(stderr, "plugin_harness: unknown mode %s\n", a.mode.c_str());
    return 2;
  }
  // After a node died (or a call failed) NCCL aborts the communicator and typically the
  // process: do the same, without teardown (so the leak check at exit does not count what an
  // abort leaves behind).
  if (a.mode == "collnet-die" || a.mode == "p2p-die" ||
      (a.mode == "collnet-reducer-lost" && failures > 0))
    std::_Exit(failures == 0 ? 0 : 1);
  unloadPlugin(&api);
  return failures == 0 ? 0 : 1;
}
