// gloo_allreduce: Gloo's ring all-reduces over its TCP transport, the peer that the reduction
// server is measured against on the same (emulated) links. One process per member:
//   gloo_allreduce --rank 0 --world 4 --addr 10.77.0.10 --store /shared/dir --algo chunked
// Rendezvous goes through a FileStore in a directory every member sees; the transport binds to
// --addr, so traffic stays on the link under test. Rank 0 prints the allreduce_perf table.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/socket.h>

#include <chrono>
#include <exception>
#include <map>
#include <memory>

#include "bench/peers/peer_bench.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int rank = 0, world = 1;
  std::string addr = "127.0.0.1";
  std::string store;
  std::string algo = "ring";
  std::string runId = "run";
  int timeoutSeconds = 300;
  rs::bench::SweepOptions sweep;
};

const std::map<std::string, std::string> kAlgos = {
    {"ring", "AllreduceRing"},
    {"chunked", "AllreduceRingChunked"},
    {"hd", "AllreduceHalvingDoubling"},
};

std::unique_ptr<gloo::Algorithm> makeAllreduce(const std::string& algo,
                                               const std::shared_ptr<gloo::Context>& ctx,
                                               float* data, int count) {
  if (algo == "chunked")
    return std::make_unique<gloo::AllreduceRingChunked<float>>(ctx, std::vector<float*>{data}, count);
  if (algo == "hd")
    return std::make_unique<gloo::AllreduceHalvingDoubling<float>>(ctx, std::vector<float*>{data},
                                                                    count);
  return std::make_unique<gloo::AllreduceRing<float>>(ctx, std::vector<float*>{data}, count);
}

// Scalar all-reduce for the bookkeeping (slowest member's time, everyone's errors).
double reduceScalar(const std::shared_ptr<gloo::Context>& ctx, double value, bool max) {
  gloo::AllreduceRing<double> op(ctx, {&value}, 1,
                                 max ? gloo::ReductionFunction<double>::max
                                     : gloo::ReductionFunction<double>::sum);
  op.run();
  return value;
}

int run(const Options& o) {
  const auto sizes = o.sweep.sizes();
  if (sizes.empty() || !kAlgos.count(o.algo) || o.store.empty() || o.world < 1 || o.rank < 0 ||
      o.rank >= o.world) {
    fmt::print(stderr, "gloo_allreduce: need --store, --algo ring|chunked|hd, 0 <= rank < world\n");
    return 2;
  }
  gloo::transport::tcp::attr attr(o.addr.c_str());
  attr.ai_family = AF_INET;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore fileStore(o.store);
  // The prefix keeps separate runs that share a store directory apart.
  gloo::rendezvous::PrefixStore store(o.runId + "/" + o.algo, fileStore);
  auto context = std::make_shared<gloo::rendezvous::Context>(o.rank, o.world);
  context->setTimeout(std::chrono::seconds(o.timeoutSeconds));
  context->connectFullMesh(store, device);

  rs::bench::ResultTable table("gloo_" + o.algo, o.world);
  if (o.rank == 0)
    table.header(fmt::format("gloo::{} over TCP, iters {} warmup {}", kAlgos.at(o.algo),
                             o.sweep.iters, o.sweep.warmup));
  std::vector<float> data(sizes.back() / 4);
  for (uint64_t bytes : sizes) {
    const int count = static_cast<int>(bytes / 4);
    auto allreduce = makeAllreduce(o.algo, context, data.data(), count);
    // Timed on zeros: the algorithms are in place, so a pattern would grow by W at every
    // iteration; the bytes on the wire and the work per element are the same either way.
    std::fill(data.begin(), data.begin() + count, 0.0f);
    for (int i = 0; i < o.sweep.warmup; ++i) allreduce->run();
    gloo::BarrierAllToAll(context).run();
    const auto t0 = Clock::now();
    for (int i = 0; i < o.sweep.iters; ++i) allreduce->run();
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count() / o.sweep.iters;
    double wrong = 0;
    if (o.sweep.check) {
      rs::bench::fillInput(data.data(), static_cast<uint64_t>(count), o.rank);
      allreduce->run();
      wrong = static_cast<double>(rs::bench::countWrong(data.data(), static_cast<uint64_t>(count),
                                                        o.world));
    }
    seconds = reduceScalar(context, seconds, /*max=*/true);
    wrong = reduceScalar(context, wrong, /*max=*/false);
    if (o.rank == 0) table.row(bytes, seconds, static_cast<uint64_t>(wrong));
  }
  // A member that leaves early resets its peers' sockets mid-operation: leave together. Every
  // result is in by now; a peer that closes while this member still waits for its own barrier
  // send to flush is only noted.
  try {
    gloo::BarrierAllToAll(context).run();
  } catch (const std::exception& e) {
    fmt::print(stderr, "gloo_allreduce rank {}: a peer left during the final barrier: {}\n", o.rank,
               e.what());
  }
  return o.rank == 0 ? table.footer() : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"gloo_allreduce: Gloo ring all-reduce peer benchmark (fp32 sum)"};
  app.add_option("--rank", o.rank, "This member's rank")->required();
  app.add_option("--world", o.world, "Members")->required();
  app.add_option("--addr", o.addr, "Local address the TCP transport binds to")->capture_default_str();
  app.add_option("--store", o.store, "FileStore directory shared by all members")->required();
  app.add_option("--algo", o.algo, "ring, chunked (ring chunked) or hd (halving-doubling)")
      ->capture_default_str();
  app.add_option("--run-id", o.runId, "Rendezvous key prefix, the same on every member")
      ->capture_default_str();
  app.add_option("--timeout-s", o.timeoutSeconds, "Gloo operation timeout")->capture_default_str();
  o.sweep.addTo(app);
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "gloo_allreduce rank {}: {}\n", o.rank, e.what());
    return 1;
  }
}
