// libFuzzer target for everything that parses operator- or platform-supplied text:
// CLUSTER_SPEC, TF_CONFIG, RS_REDUCERS, endpoints and group ids. Properties checked:
// a rejection is always an InvalidArgument with a message (never a crash, hang or exception),
// and whatever parses re-parses to the same value from its printed form.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/cluster/cluster_spec.h"
#include "core/wire/group_id.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();  // the fuzzer's crash signal: a property failed
}

void checkRejection(const rs::Status& status) {
  require(status.isOk() ||
          (status.code() == rs::StatusCode::kInvalidArgument && !status.message().empty()));
}

void checkEndpointRoundTrip(const rs::Endpoint& e) {
  auto again = rs::parseEndpoint(e.toString());
  require(again.isOk() && *again == e);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace rs::cluster;

  auto spec = parseClusterSpec(text);
  checkRejection(spec.status());
  if (spec)
    for (const auto& [pool, endpoints] : spec->pools)
      for (const auto& e : endpoints) checkEndpointRoundTrip(e);

  checkRejection(parseTfConfig(text).status());

  auto list = parseReducerList(text);
  checkRejection(list.status());
  if (list)
    for (const auto& e : *list) checkEndpointRoundTrip(e);

  auto endpoint = rs::parseEndpoint(text);
  checkRejection(endpoint.status());
  if (endpoint) checkEndpointRoundTrip(*endpoint);

  auto group = rs::GroupId::parse(text);
  checkRejection(group.status());
  if (group) require(rs::GroupId::parse(group->toString()).isOk());
  return 0;
}
