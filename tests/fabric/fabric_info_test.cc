// The provider probe: the tcp provider matches our verbs'-rules hints on loopback, and a named
// provider that is absent (verbs, on a machine without an RDMA device) is reported as such.
#include "core/transport/fabric/fabric_info.h"

#include <catch2/catch.hpp>

#include <rdma/fi_domain.h>

#include "tests/support/fabric_choice.h"
#include "tests/support/fabric_side.h"

namespace fab = rs::transport::fabric;

TEST_CASE("the provider under test matches verbs' rules", "[fabric]") {
  const fab::FabricChoice choice = rs::test::fabricUnderTest();
  rs::Result<fab::FabricInfo> info = fab::FabricInfo::probe(choice);
  REQUIRE(info.status().toString() == "OK");
  INFO(info->describe());
  // RDM endpoints on tcp come through the ofi_rxm utility layer, as they do on verbs; efa has
  // its own.
  if (choice.provider == "efa") {
    CHECK(info->providerName() == "efa");
  } else {
    CHECK(info->providerName() == choice.provider + ";ofi_rxm");
  }
  CHECK(info->get()->ep_attr->type == FI_EP_RDM);
  CHECK(info->immediateBytes() >= 4);
  CHECK((info->get()->caps & (FI_RMA | FI_WRITE | FI_REMOTE_WRITE | FI_MSG)) ==
        (FI_RMA | FI_WRITE | FI_REMOTE_WRITE | FI_MSG));
  // What the provider kept of the rules we asked for: nothing beyond them (checkVerbsRules), and
  // the addresses peers write to are what registered_memory.h hands out.
  const uint64_t mode = static_cast<uint64_t>(info->get()->domain_attr->mr_mode);
  CHECK((mode & ~uint64_t{FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY}) == 0);
  WARN(choice.provider << " provider under our hints: " << info->describe());
}

TEST_CASE("a named provider that is absent is reported as absent, naming the ones here",
          "[fabric]") {
  // No RDMA device and no kernel RDMA on the test machines: verbs offers nothing here. On a
  // machine with a device this case says nothing, so it only runs where verbs is absent.
  const std::vector<std::string> here = fab::availableProviders();
  if (!rs::test::fabricUnderTestIsTcp() ||
      std::find(here.begin(), here.end(), "verbs") != here.end()) {
    SUCCEED("verbs is present on this machine");
    return;
  }
  rs::Result<fab::FabricInfo> info = fab::FabricInfo::probe({"verbs", ""});
  REQUIRE_FALSE(info.isOk());
  INFO(info.status().toString());
  CHECK(info.status().code() == rs::StatusCode::kUnavailable);
  CHECK_THAT(info.status().message(), Catch::Contains("no provider 'verbs'"));
  CHECK_THAT(info.status().message(), Catch::Contains("providers here:"));
  CHECK_THAT(info.status().message(), Catch::Contains("tcp"));
}

TEST_CASE("a provider must be named", "[fabric]") {
  rs::Result<fab::FabricInfo> info = fab::FabricInfo::probe({"", ""});
  REQUIRE_FALSE(info.isOk());
  CHECK(info.status().code() == rs::StatusCode::kInvalidArgument);
}

TEST_CASE("a peer's malformed fabric address is an error, not a crash", "[fabric]") {
  rs::test::FabricSide side = rs::test::openFabricSide("receiver");
  const std::vector<uint8_t> garbage(1000, 0xAB);
  rs::Result<fab::FabricEndpoint::PeerId> tooLong = side.endpoint->addPeer(garbage, "peer");
  CHECK(tooLong.status().code() == rs::StatusCode::kInvalidArgument);
  rs::Result<fab::FabricEndpoint::PeerId> empty = side.endpoint->addPeer({}, "peer");
  CHECK(empty.status().code() == rs::StatusCode::kInvalidArgument);
  std::vector<uint8_t> shorter = side.endpoint->address();
  shorter.pop_back();
  rs::Result<fab::FabricEndpoint::PeerId> cut = side.endpoint->addPeer(shorter, "peer");
  CHECK(cut.status().code() == rs::StatusCode::kInvalidArgument);
  CHECK_THAT(cut.status().message(), Catch::Contains("peer peer: its tcp;ofi_rxm fabric address"));
}
