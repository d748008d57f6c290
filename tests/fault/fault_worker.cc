// fault_worker: one member of a group, as a real process, for the fault loop and the soak.
// It reads the client library's environment (RS_REDUCERS, RS_SECRET_FILE, RS_TIMEOUT_MS, ...:
// ClientOptions::fromEnvironment), joins, runs --iters checked sum all-reduces (fp32, or --type's
// type; RS_DETERMINISTIC=1 in its environment asks for deterministic mode) and reports
// each step on stdout, one line each, flushed, so that a driver can wait for states:
//   joined | submitted <i> | done <i> | error <i> <status> | wrong <i> <count> | finished
// --stop-before <i> makes it stop itself (SIGSTOP) just before it submits collective i: a
// driver sees the stop with waitpid(WUNTRACED) and decides when (or whether) it goes on.
// --count-seed <s> varies the element count per collective (1..--count), the same on every
// member given the same seed; --counts a,b,... gives collective i its own count (the last one
// for the rest), instead of --count. Exit: 0 all done and exact, 3 a collective failed (the error is
// printed), 4 a wrong result, 2 usage.
//   fault_worker --group <32 hex> --world W --rank R --count N --iters K [--stop-before I]
//                [--count-seed S] [--counts a,b,...] [--type fp32|bf16|...]
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "rs/client.h"
#include "tests/support/verify_pattern.h"

namespace {

void say(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

uint64_t countFor(uint64_t seed, uint64_t i, uint64_t maxCount) {
  if (seed == 0) return maxCount;
  uint64_t x = (seed + i) * 0x9E3779B97F4A7C15ull;  // splitmix64's step: cheap, deterministic
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return 1 + (x ^ (x >> 31)) % maxCount;
}

}  // namespace

int main(int argc, char** argv) {
  std::string group;
  long world = 0, rank = -1, stopBefore = -1;
  unsigned long long count = 0, iters = 0, countSeed = 0;
  std::vector<uint64_t> counts;
  std::optional<rs::DataType> type = rs::DataType::kFloat32;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "--group") group = v;
    else if (flag == "--world") world = std::strtol(v, nullptr, 10);
    else if (flag == "--rank") rank = std::strtol(v, nullptr, 10);
    else if (flag == "--count") count = std::strtoull(v, nullptr, 10);
    else if (flag == "--iters") iters = std::strtoull(v, nullptr, 10);
    else if (flag == "--stop-before") stopBefore = std::strtol(v, nullptr, 10);
    else if (flag == "--count-seed") countSeed = std::strtoull(v, nullptr, 10);
    else if (flag == "--type") type = rs::parseDataType(v);
    else if (flag == "--counts") {
      for (char* p = argv[i + 1]; *p != '\0';) {
        counts.push_back(std::strtoull(p, &p, 10));
        if (*p == ',') ++p;
        else if (*p != '\0') break;
      }
      for (uint64_t c : counts) count = std::max<unsigned long long>(count, c);
    }
    else {
      std::fprintf(stderr, "fault_worker: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  auto id = rs::GroupId::parse(group);
  if (!id || world < 1 || rank < 0 || rank >= world || count < 1 || iters < 1 || !type) {
    std::fprintf(stderr, "fault_worker: need --group, --world, --rank, --count, --iters, and a "
                         "known --type\n");
    return 2;
  }
  auto options = rs::client::ClientOptions::fromEnvironment();
  if (!options) {
    say("error -1 " + options.status().toString());
    return 3;
  }
  auto comm = rs::client::Communicator::connect(
      *options, {*id, static_cast<uint32_t>(world), static_cast<uint32_t>(rank)});
  if (!comm) {
    say("error -1 " + comm.status().toString());
    return 3;
  }
  say("joined");
  const auto op = rs::ReduceOp::kSum;
  const size_t elemSize = rs::dataTypeSize(*type);
  std::vector<uint8_t> send(count * elemSize), recv(count * elemSize);
  for (uint64_t i = 0; i < count; ++i)
    rs::test::storeAs(*type, send.data(), i, rs::test::exactInput(static_cast<int>(rank), i, op));
  for (uint64_t it = 0; it < iters; ++it) {
    const uint64_t n = counts.empty() ? countFor(countSeed, it, count)
                                      : counts[std::min<size_t>(it, counts.size() - 1)];
    if (static_cast<long>(it) == stopBefore) {
      say(fmt::format("stopping {}", it));
      ::raise(SIGSTOP);
    }
    for (uint64_t i = 0; i < n; ++i) rs::test::storeAs(*type, recv.data(), i, -1.0);
    auto request = (*comm)->allReduceAsync(send.data(), recv.data(), n, *type, op);
    rs::Status s = request ? rs::Status::ok() : request.status();
    if (s.isOk()) {
      say(fmt::format("submitted {}", it));
      s = (*request)->wait();
    }
    if (!s.isOk()) {
      say(fmt::format("error {} {}", it, s.toString()));
      return 3;
    }
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < n; ++i)
      if (rs::test::loadAs(*type, recv.data(), i) !=
          rs::test::expectedResult(*type, op, static_cast<int>(world), i))
        ++wrong;
    if (wrong != 0) {
      say(fmt::format("wrong {} {}", it, wrong));
      return 4;
    }
    say(fmt::format("done {}", it));
  }
  say("finished");
  return 0;
}
