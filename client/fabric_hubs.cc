#include "client/fabric_hubs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/common/log.h"
#if RS_HAVE_FABRIC
#include "core/transport/fabric/fabric_hub.h"
#endif

namespace rs::client {

std::vector<std::string> FabricHubs::candidates(const std::string& fabric) {
  if (fabric == "off") return {};
  // Never tcp by chance: it is the tests' provider, slower than the streams it would replace.
  if (fabric == "auto") return {"verbs", "efa"};
  return {fabric};
}

#if RS_HAVE_FABRIC

FabricHubs::FabricHubs(const ClientOptions& options, const std::vector<asio::io_context*>& ios,
                       const std::string& who,
                       std::shared_ptr<const transport::UserMemory> userMemory) {
  const std::vector<std::string> providers = candidates(options.fabric);
  std::vector<std::string> why;
  for (const std::string& provider : providers) {
    std::vector<std::unique_ptr<transport::fabric::FabricHub>> opened;
    Status failed;
    for (size_t i = 0; i < ios.size() && failed.isOk(); ++i) {
      transport::fabric::FabricHubOptions hubOptions;
      hubOptions.name = fmt::format("{} io {}", who, i);
      auto hub = transport::fabric::FabricHub::open(
          *ios[i], transport::fabric::FabricChoice{provider, options.fabricNode}, hubOptions);
      if (hub) opened.push_back(std::move(*hub));
      else failed = hub.status();
    }
    if (failed.isOk()) {
      hubs_ = std::move(opened);
      for (auto& hub : hubs_) hub->followUserMemory(userMemory);
      provider_ = hubs_.empty() ? provider : hubs_.front()->provider();
      rs::logger().info("{}: fabric {} on {} io thread(s); data over it where a reducer offers "
                        "the same",
                        who, provider_, hubs_.size());
      return;
    }
    for (auto& hub : opened) hub->shutdown(abortedError("the fabric was not used"));
    why.push_back(failed.message());
  }
  if (providers.empty()) return;  // RS_FABRIC=off
  // "auto" on a machine without RDMA is the usual case: info, not a warning.
  const std::string line =
      fmt::format("{}: fabric not used (RS_FABRIC={}: {}), data over TCP", who, options.fabric,
                  fmt::join(why, "; "));
  if (options.fabric == "auto") rs::logger().info("{}", line);
  else rs::logger().warn("{}", line);
}

FabricHubs::~FabricHubs() {
  for (auto& hub : hubs_) hub->shutdown(abortedError("the communicator was closed"));
}

transport::fabric::FabricHub* FabricHubs::at(size_t io) const {
  return io < hubs_.size() ? hubs_[io].get() : nullptr;
}

FabricStats FabricHubs::stats() const {
  FabricStats stats;
  if (!hubs_.empty()) stats.provider = provider_;
  for (const auto& hub : hubs_) {
    stats.bytesFromRegistered += hub->bytesFromUserMemory();
    stats.bytesCopied += hub->bytesThroughRing();
  }
  return stats;
}

#else  // built without libfabric: no hub is ever made

}  // namespace rs::client
namespace rs::transport::fabric {
class FabricHub {};
}  // namespace rs::transport::fabric
namespace rs::client {

FabricHubs::FabricHubs(const ClientOptions& options, const std::vector<asio::io_context*>&,
                       const std::string& who, std::shared_ptr<const transport::UserMemory>) {
  if (options.fabric != "off" && options.fabric != "auto")
    rs::logger().warn("{}: fabric not used (RS_FABRIC={}: this build has no libfabric), data "
                      "over TCP",
                      who, options.fabric);
}

FabricHubs::~FabricHubs() = default;

transport::fabric::FabricHub* FabricHubs::at(size_t) const { return nullptr; }

FabricStats FabricHubs::stats() const { return {}; }

#endif

}  // namespace rs::client
