// The provider the fabric tests run on: libfabric's tcp provider over loopback, unless
// RS_TEST_FABRIC_PROVIDER names another ("verbs", "efa") and RS_TEST_FABRIC_NODE the local
// address to bind (empty: the provider's first domain). scripts/rdma-check.sh sets them on a
// machine with an RDMA device, so that the same cases run there under the real rules.
#pragma once

#include <cstdlib>
#include <string>

#include "core/transport/fabric/fabric_info.h"

namespace rs::test {

inline transport::fabric::FabricChoice fabricUnderTest() {
  const char* provider = std::getenv("RS_TEST_FABRIC_PROVIDER");
  const char* node = std::getenv("RS_TEST_FABRIC_NODE");
  if (provider == nullptr || *provider == '\0') return {"tcp", node != nullptr ? node : "127.0.0.1"};
  return {provider, node != nullptr ? node : ""};
}

// The userspace tcp provider, whose measured behaviour (proto/FABRIC.md) some cases record.
inline bool fabricUnderTestIsTcp() { return fabricUnderTest().provider == "tcp"; }

}  // namespace rs::test
