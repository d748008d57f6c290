// The /metrics endpoint of running reducers, scraped over HTTP while members all-reduce through
// them (so that ASan and TSan see scrapes racing the io threads), then checked against what the
// members did: payload bytes, collectives, chunks and latency observations.
#include <catch2/catch.hpp>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <sstream>
#include <thread>

#include "core/common/build_info.h"
#include "tests/support/local_pool.h"

namespace rs::test {
namespace {

// GET /metrics over HTTP/1.0 (no chunked encoding); the body, or "" if the request failed.
std::string scrape(uint16_t port) {
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  std::error_code ec;
  s.connect({asio::ip::make_address("127.0.0.1"), port}, ec);
  if (ec) return "";
  const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  asio::write(s, asio::buffer(request), ec);
  if (ec) return "";
  std::string response;
  char buf[16384];
  for (;;) {
    const size_t n = s.read_some(asio::buffer(buf), ec);
    response.append(buf, n);
    if (ec) break;  // eof: the whole response is in
  }
  if (response.rfind("HTTP/1.1 200", 0) != 0 && response.rfind("HTTP/1.0 200", 0) != 0) return "";
  const size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

// The value of the series `series` (name plus labels exactly as exposed), or -1 if absent.
double valueOf(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ')
      return std::stod(line.substr(series.size() + 1));
  return -1;
}

// Sums every series of family `name` (with any labels) over the scrapes.
double sumOf(const std::vector<std::string>& texts, const std::string& name) {
  double total = 0;
  for (const auto& text : texts) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (line.compare(0, name.size(), name) == 0 &&
          (line[name.size()] == ' ' || line[name.size()] == '{'))
        total += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return total;
}

}  // namespace

TEST_CASE("the metrics endpoint counts what the members did", "[metrics]") {
  server::ServerConfig config = testServerConfig();
  config.metricsListen = "127.0.0.1:0";
  LocalPool pool(2, config);
  std::vector<uint16_t> ports;
  for (int r = 0; r < pool.size(); ++r) {
    REQUIRE(pool.reducer(r).metricsPort() != 0);
    ports.push_back(pool.reducer(r).metricsPort());
  }
  auto scrapeAll = [&] {
    std::vector<std::string> out;
    for (uint16_t p : ports) out.push_back(scrape(p));
    return out;
  };
  const double bytesBefore = sumOf(scrapeAll(), "rs_received_bytes_total");
  CHECK(bytesBefore == 0);

  // Scrapes run throughout the traffic: the counters are read while the io threads write them.
  std::atomic<bool> done{false};
  std::atomic<int> scrapes{0};
  std::thread scraper([&] {
    while (!done) {
      for (uint16_t p : ports)
        if (!scrape(p).empty()) ++scrapes;
    }
  });

  constexpr int kWorld = 3, kIters = 5;
  constexpr size_t kFloats = 300000, kHalves = 70000;  // several chunks per reducer
  const GroupId id = GroupId::random();
  Status st = runRanks(kWorld, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(testClientOptions(pool.endpoints(), 2),
                                              {id, kWorld, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    std::vector<float> f(kFloats, 1.0f);
    std::vector<uint16_t> h(kHalves, 0x3f80);  // bf16 1.0
    for (int i = 0; i < kIters; ++i) {
      RS_RETURN_IF_ERROR((*comm)->allReduce(f.data(), f.data(), f.size(), DataType::kFloat32,
                                            ReduceOp::kSum));
      RS_RETURN_IF_ERROR((*comm)->allReduce(h.data(), h.data(), h.size(), DataType::kBfloat16,
                                            ReduceOp::kMax));
    }
    return Status::ok();
  });
  done = true;
  scraper.join();
  REQUIRE(st.toString() == "OK");
  CHECK(scrapes.load() >= 2);

  // Every member sent S and received S per collective: the pool got and returned W * S.
  const double payload = kWorld * kIters * (kFloats * 4.0 + kHalves * 2.0);
  // A result write is counted when its completion handler runs, which may be just after the
  // member read it: wait (bounded) for the counters to reach what the members saw.
  std::vector<std::string> texts;
  for (int i = 0; i < 3000; ++i) {
    texts = scrapeAll();
    if (sumOf(texts, "rs_sent_bytes_total") >= payload &&
        sumOf(texts, "rs_reduce_latency_seconds_count") >=
            sumOf(texts, "rs_chunks_reduced_total"))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  INFO(texts[0]);
  CHECK(sumOf(texts, "rs_received_bytes_total") == payload);
  CHECK(sumOf(texts, "rs_sent_bytes_total") == payload);
  double fp32 = 0, bf16 = 0;
  for (const auto& t : texts) {
    fp32 += valueOf(t, "rs_collectives_reduced_total{dtype=\"fp32\",op=\"sum\"}");
    bf16 += valueOf(t, "rs_collectives_reduced_total{dtype=\"bf16\",op=\"max\"}");
  }
  CHECK(fp32 == kIters);  // each collective's first chunk is reduced by exactly one reducer
  CHECK(bf16 == kIters);
  CHECK(sumOf(texts, "rs_collectives_reduced_total") == 2 * kIters);
  const double chunks = sumOf(texts, "rs_chunks_reduced_total");
  CHECK(chunks >= 4 * kIters);  // 1.2 MB and 140 KB over 2 reducers: more than one chunk each
  for (const auto& t : texts) {
    // Every reducer got chunks, and every completed chunk was timed.
    CHECK(valueOf(t, "rs_chunks_reduced_total{dtype=\"fp32\",op=\"sum\"}") > 0);
    CHECK(valueOf(t, "rs_reduce_latency_seconds_count") ==
          sumOf({t}, "rs_chunks_reduced_total"));
    CHECK(valueOf(t, "rs_reduce_latency_seconds_bucket{le=\"+Inf\"}") ==
          valueOf(t, "rs_reduce_latency_seconds_count"));
    CHECK(valueOf(t, "rs_streams_joined_total") == kWorld * 2);  // 2 streams per reducer each
    CHECK(valueOf(t, "rs_frames_rejected_total{reason=\"malformed\"}") == 0);
    CHECK(valueOf(t, "rs_draining") == 0);
    CHECK(t.find("rs_build_info{version=\"" + std::string(buildInfo().version) + "\"") !=
          std::string::npos);
  }
}

TEST_CASE("a reducer whose metrics address is taken does not start, and says why", "[metrics]") {
  asio::io_context io;
  asio::ip::tcp::acceptor taken(io, {asio::ip::make_address("127.0.0.1"), 0});
  server::ServerConfig config = testServerConfig();
  config.metricsListen = "127.0.0.1:" + std::to_string(taken.local_endpoint().port());
  server::Server s(config);
  const Status st = s.start();
  INFO(st.toString());
  CHECK(!st.isOk());
  CHECK(st.message().find("--metrics-listen") != std::string::npos);
  CHECK(st.message().find(config.metricsListen) != std::string::npos);
}

}  // namespace rs::test
