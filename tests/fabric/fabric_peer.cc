// The target of the peer-killed case (fabric_kill_test.cc), a process of its own so that it can
// be SIGKILLed mid-write: opens an endpoint on the provider under test (tests/support/fabric_choice.h), registers a buffer for peers' writes,
// prints "<endpoint address, hex> <remote address> <key> <size>" on one line, then polls its
// endpoint (landing the writes) until it is killed, or for at most two minutes so that an
// orphan never lingers.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/transport/fabric/fabric_domain.h"
#include "core/transport/fabric/fabric_endpoint.h"
#include "core/transport/fabric/fabric_info.h"
#include "core/transport/fabric/registered_memory.h"
#include "tests/support/fabric_choice.h"

namespace fab = rs::transport::fabric;

int main(int argc, char** argv) {
  const size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : size_t{64} << 20;
  auto info = fab::FabricInfo::probe(rs::test::fabricUnderTest());
  if (!info.isOk()) {
    std::fprintf(stderr, "fabric_peer: %s\n", info.status().toString().c_str());
    return 1;
  }
  auto domain = fab::FabricDomain::open(std::move(*info));
  if (!domain.isOk()) {
    std::fprintf(stderr, "fabric_peer: %s\n", domain.status().toString().c_str());
    return 1;
  }
  fab::FabricEndpointOptions options;
  options.name = "fabric_peer";
  auto endpoint = fab::FabricEndpoint::open(**domain, options);
  if (!endpoint.isOk()) {
    std::fprintf(stderr, "fabric_peer: %s\n", endpoint.status().toString().c_str());
    return 1;
  }
  std::vector<uint8_t> buffer(bytes);
  auto memory = fab::RegisteredMemory::add(**domain, buffer.data(), buffer.size(),
                                           fab::RegisteredMemory::Access::kRemoteWrite);
  if (!memory.isOk()) {
    std::fprintf(stderr, "fabric_peer: %s\n", memory.status().toString().c_str());
    return 1;
  }
  for (uint8_t b : (*endpoint)->address()) std::printf("%02x", b);
  const fab::RemoteBuffer remote = memory->remote();
  std::printf(" %llu %llu %llu\n", static_cast<unsigned long long>(remote.address),
              static_cast<unsigned long long>(remote.key),
              static_cast<unsigned long long>(remote.size));
  std::fflush(stdout);
  const auto end = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  std::vector<fab::FabricCompletion> done;
  while (std::chrono::steady_clock::now() < end) {
    done.clear();
    if (!(*endpoint)->poll(done).isOk()) return 2;
  }
  return 0;
}
