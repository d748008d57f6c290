// forging_reducer: a reducer that forges allreduce_perf's verdict, for perf_verdict_test.sh. It
// speaks the handshake of an open reducer and answers each REDUCE, once its payload is in,
// with a RESULT of the same chunk: all bytes 0xFF (a wrong value in every type), except for a
// one-element uint64 sum, which it answers with 0: what an all-reduce of the members'
// wrong-value counts would need to say "0 OK". Each member is answered alone, whatever the
// group's size, its RECEIVED too: with the COMMIT of the same chunk, so that it keeps nothing. Takes reduction-server's command line as allreduce_perf's launcher passes it
// (only --port-file matters; it listens on an ephemeral port of 127.0.0.1) and runs until
// SIGTERM or SIGINT.
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/fake_reducer.h"

namespace {

void forge(rs::test::FakeReducer::Socket& s) {
  using namespace rs;
  constexpr uint32_t kMaxPayload = 1u << 30;
  test::acceptMember(s, kMaxPayload);
  for (;;) {
    const wire::FrameHeader reduce = test::readHeaderOf(s, kMaxPayload);
    if (reduce.type == wire::FrameType::kReceived) {
      const wire::HeaderBytes commit =
          wire::encodeHeader(wire::commitHeader(reduce.group, reduce.rank, reduce.chunk));
      test::writeBytes(s, commit.data(), commit.size());
      continue;
    }
    std::vector<uint8_t> payload(reduce.payloadLength);
    asio::read(s, asio::buffer(payload));
    const bool count = reduce.dtype == DataType::kUint64 && reduce.op == ReduceOp::kSum &&
                       reduce.elemCount == 1;
    test::sendResultPart(s, reduce, reduce.elemOffset,
                         std::vector<uint8_t>(reduce.payloadLength, count ? 0x00 : 0xFF));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string portFile;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--port-file") portFile = argv[i + 1];
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before any thread starts: sigwait takes them

  rs::test::FakeReducer reducer(forge);
  if (!portFile.empty()) {
    const std::string tmp = portFile + ".tmp";
    std::ofstream(tmp) << reducer.endpoint().port << " 0\n";
    if (std::rename(tmp.c_str(), portFile.c_str()) != 0) return 1;
  }
  int signal = 0;
  sigwait(&stop, &signal);
  return 0;
}
