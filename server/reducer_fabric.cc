#include "server/reducer_fabric.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/common/endpoint.h"
#include "core/common/log.h"

#if RS_HAVE_FABRIC
#include "core/transport/fabric/fabric_hub.h"
#include "core/transport/fabric/payload_over_fabric.h"
#endif

namespace rs::server {
namespace {

// Each stream's receive ring: slots of one piece (what a fold takes at once), eight of them, so
// that a worker can keep a few pieces in flight while the reducer folds one.
constexpr uint32_t kRingSlots = 8;

// Where the fabric binds: the operator's --fabric-node, else the data listener's host unless
// it is a wildcard (the provider then picks its first interface).
std::string fabricNode(const ServerConfig& config) {
  if (!config.fabricNode.empty()) return config.fabricNode;
  auto listen = parseEndpoint(config.dataListen, "", PortZero::kAllowed);
  if (!listen) return "";
  const std::string& host = listen->host;
  if (host.empty() || host == "0.0.0.0" || host == "::" || host == "*") return "";
  return host;
}

}  // namespace

#if RS_HAVE_FABRIC

namespace fabric = transport::fabric;

struct ReducerFabric::Impl {
  std::unique_ptr<fabric::FabricHub> hub;
  fabric::RingShape ring;
};

namespace {

// The providers "auto" tries, in order: real devices only. tcp is never offered by accident.
constexpr const char* kAutoProviders[] = {"verbs", "efa"};

Result<std::unique_ptr<fabric::FabricHub>> openHub(asio::io_context& io, const std::string& provider,
                                                   const std::string& node, uint32_t shard) {
  fabric::FabricHubOptions options;
  options.name = fmt::format("reducer io thread {}", shard);
  // Results go from slot buffers that other groups use next: a write a member never completes
  // keeps its slot until it ends (FabricHubOptions::releaseSourcesAfter).
  options.releaseSourcesAfter = std::nullopt;
  return fabric::FabricHub::open(io, {provider, node}, options);
}

}  // namespace

std::unique_ptr<ReducerFabric> ReducerFabric::open(asio::io_context& io, const ServerConfig& config,
                                                   uint32_t shard, std::string* why) {
  const bool log = shard == 0;
  if (config.fabricProvider == "off") {
    *why = "no fabric on this reducer (--fabric-provider off)";
    return nullptr;
  }
  const std::string node = fabricNode(config);
  std::vector<std::string> tries;
  if (config.fabricProvider == "auto") tries.assign(std::begin(kAutoProviders), std::end(kAutoProviders));
  else tries.push_back(config.fabricProvider);
  std::string reasons;
  for (const std::string& provider : tries) {
    auto hub = openHub(io, provider, node, shard);
    if (hub) {
      auto impl = std::make_unique<Impl>();
      impl->hub = std::move(*hub);
      impl->ring = {kRingSlots, config.pieceBytes};
      if (log)
        rs::logger().info("fabric: offering {} to workers that ask ({} slots of {} bytes per "
                          "stream)",
                          impl->hub->provider(), impl->ring.slots, impl->ring.slotBytes);
      return std::unique_ptr<ReducerFabric>(new ReducerFabric(std::move(impl)));
    }
    if (!reasons.empty()) reasons += "; ";
    reasons += hub.status().message();
  }
  *why = config.fabricProvider == "auto"
             ? "no fabric on this reducer (no verbs or EFA device: " + reasons + ")"
             : "no fabric on this reducer (--fabric-provider " + config.fabricProvider + ": " +
                   reasons + ")";
  if (log) {
    if (config.fabricProvider == "auto") rs::logger().info("fabric: {}; data over TCP", *why);
    else rs::logger().warn("fabric: {}; data over TCP", *why);
  }
  return nullptr;
}

Result<FabricOffer> ReducerFabric::offer(const std::string& name,
                                         const std::shared_ptr<MemoryBudget>& budget) {
  if (Status s = budget->chargeBookkeeping(streamBytes(), "the fabric rings of " + name);
      !s.isOk())
    return Status(StatusCode::kResourceExhausted, "fabric memory exhausted: " + s.message());
  BookkeepingCharge charge(budget, streamBytes());
  auto channel = impl_->hub->openChannel(impl_->ring, name);
  if (!channel) return channel.status();
  FabricOffer offer;
  offer.charge = std::move(charge);
  offer.grant = fabric::toWireGrant((*channel)->grant());
  offer.channel = std::make_shared<fabric::PayloadOverFabric>(std::move(*channel));
  return offer;
}

uint64_t ReducerFabric::streamBytes() const { return impl_->ring.bytes() + maxPeerRingBytes(); }

// Twice its own ring, and never below twice the workers' default ring (client/fabric_hubs.h:
// 8 x 256 KiB), so that a smaller --piece does not refuse the workers' default.
uint64_t ReducerFabric::maxPeerRingBytes() const {
  return std::max<uint64_t>(2 * impl_->ring.bytes(), uint64_t{4} << 20);
}

Status ReducerFabric::accept(transport::PayloadChannel& channel, const wire::FabricGrant& worker) {
  if (worker.ringSize > maxPeerRingBytes())
    return invalidArgument(fmt::format("a receive ring of {} bytes ({} slots of {}), larger than "
                                       "this reducer takes ({} bytes)",
                                       worker.ringSize, worker.slots, worker.slotBytes,
                                       maxPeerRingBytes()));
  // Every channel here came from offer().
  return static_cast<fabric::PayloadOverFabric&>(channel).channel().connect(
      fabric::fromWireGrant(worker));
}

void ReducerFabric::shutdown(const Status& why) { impl_->hub->shutdown(why); }

void ReducerFabric::sendFrom(std::shared_ptr<const transport::UserMemory> buffers) {
  impl_->hub->followUserMemory(std::move(buffers));
}

uint64_t ReducerFabric::bytesZeroCopy() const { return impl_->hub->bytesFromUserMemory(); }

uint64_t ReducerFabric::bytesCopied() const { return impl_->hub->bytesThroughRing(); }

const std::string& ReducerFabric::provider() const { return impl_->hub->provider(); }

#else  // built without libfabric

struct ReducerFabric::Impl {
  std::string provider;
};

std::unique_ptr<ReducerFabric> ReducerFabric::open(asio::io_context&, const ServerConfig& config,
                                                   uint32_t shard, std::string* why) {
  (void)fabricNode(config);
  if (config.fabricProvider == "off") {
    *why = "no fabric on this reducer (--fabric-provider off)";
    return nullptr;
  }
  *why = "no fabric on this reducer (built without libfabric)";
  if (shard == 0 && config.fabricProvider != "off" && config.fabricProvider != "auto")
    rs::logger().warn("fabric: --fabric-provider {} asked for, but this reducer was built "
                      "without libfabric; data over TCP",
                      config.fabricProvider);
  return nullptr;
}

Result<FabricOffer> ReducerFabric::offer(const std::string&, const std::shared_ptr<MemoryBudget>&) {
  return unavailableError("built without libfabric");
}

uint64_t ReducerFabric::streamBytes() const { return 0; }

uint64_t ReducerFabric::maxPeerRingBytes() const { return 0; }

Status ReducerFabric::accept(transport::PayloadChannel&, const wire::FabricGrant&) {
  return unavailableError("built without libfabric");
}

void ReducerFabric::shutdown(const Status&) {}

void ReducerFabric::sendFrom(std::shared_ptr<const transport::UserMemory>) {}

uint64_t ReducerFabric::bytesZeroCopy() const { return 0; }

uint64_t ReducerFabric::bytesCopied() const { return 0; }

const std::string& ReducerFabric::provider() const { return impl_->provider; }

#endif

ReducerFabric::ReducerFabric(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ReducerFabric::~ReducerFabric() = default;

}  // namespace rs::server
