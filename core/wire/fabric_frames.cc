#include "core/wire/fabric_frames.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/common/text.h"
#include "core/wire/byte_order.h"

namespace rs::wire {
namespace {

// Named apart from frame.cc's and failover_frames.cc's: the sanitizer trees compile the three
// in one unity file.
std::string grantDecimal(uint64_t v) { return std::to_string(v); }

constexpr size_t kOffChannelId = 0;
constexpr size_t kOffProviderLength = 2;
constexpr size_t kOffReserved8 = 3;
constexpr size_t kOffAddressLength = 4;
constexpr size_t kOffReserved16 = 6;
constexpr size_t kOffSlots = 8;
constexpr size_t kOffSlotBytes = 12;
constexpr size_t kOffRingAddress = 16;
constexpr size_t kOffRingKey = 24;
constexpr size_t kOffRingSize = 32;
static_assert(kOffRingSize + 8 == kFabricGrantFixedBytes);

bool isProviderChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == ';' || c == '_' || c == '.' || c == '-';
}

// Why the grant's fields are out of range, or "" when they are not (the lengths apart).
std::string grantProblem(const FabricGrant& g) {
  if (g.channelId > kMaxFabricChannelId)
    return "channelId " + grantDecimal(g.channelId) + " (expected 0.." +
           grantDecimal(kMaxFabricChannelId) + ")";
  if (g.slots < 1 || g.slots > kMaxFabricSlots)
    return "slots " + grantDecimal(g.slots) + " (expected 1.." + grantDecimal(kMaxFabricSlots) +
           ")";
  if (g.slotBytes < kMinFabricSlotBytes || g.slotBytes > kMaxFabricSlotBytes ||
      g.slotBytes % kFabricSlotAlignment != 0)
    return "slotBytes " + grantDecimal(g.slotBytes) + " (expected " +
           grantDecimal(kMinFabricSlotBytes) + ".." + grantDecimal(kMaxFabricSlotBytes) +
           ", a multiple of " + grantDecimal(kFabricSlotAlignment) + ")";
  const uint64_t ring = static_cast<uint64_t>(g.slots) * g.slotBytes;
  if (g.ringSize != ring)
    return "ringSize " + grantDecimal(g.ringSize) + " (expected slots x slotBytes = " +
           grantDecimal(ring) + ")";
  return "";
}

Result<FabricFrame> grantFrame(FrameType type, const GroupId& group, uint32_t rank,
                               const FabricGrant& grant) {
  Result<std::vector<uint8_t>> payload = encodeFabricGrant(grant);
  if (!payload) return payload.status();
  FrameHeader h;
  h.type = type;
  h.group = group;
  h.rank = rank;
  h.payloadLength = static_cast<uint32_t>(payload->size());
  return FabricFrame{encodeHeader(h), std::move(*payload)};
}

}  // namespace

bool isValidFabricProvider(std::string_view provider) {
  return !provider.empty() && provider.size() <= kMaxFabricProviderBytes &&
         std::all_of(provider.begin(), provider.end(), isProviderChar);
}

Result<std::vector<uint8_t>> encodeFabricGrant(const FabricGrant& g) {
  if (!isValidFabricProvider(g.provider))
    return invalidArgument("fabric grant: provider '" + escapeText(g.provider) +
                           "' (expected 1.." + grantDecimal(kMaxFabricProviderBytes) +
                           " of A-Z a-z 0-9 ; _ . -)");
  if (g.address.empty() || g.address.size() > kMaxFabricAddressBytes)
    return invalidArgument("fabric grant: address of " + grantDecimal(g.address.size()) +
                           " bytes (expected 1.." + grantDecimal(kMaxFabricAddressBytes) + ")");
  if (std::string problem = grantProblem(g); !problem.empty())
    return invalidArgument("fabric grant: " + problem);
  std::vector<uint8_t> out(kFabricGrantFixedBytes + g.provider.size() + g.address.size());
  put16(&out[kOffChannelId], g.channelId);
  out[kOffProviderLength] = static_cast<uint8_t>(g.provider.size());
  out[kOffReserved8] = 0;
  put16(&out[kOffAddressLength], static_cast<uint16_t>(g.address.size()));
  put16(&out[kOffReserved16], 0);
  put32(&out[kOffSlots], g.slots);
  put32(&out[kOffSlotBytes], g.slotBytes);
  put64(&out[kOffRingAddress], g.ringAddress);
  put64(&out[kOffRingKey], g.ringKey);
  put64(&out[kOffRingSize], g.ringSize);
  auto tail = std::copy(g.provider.begin(), g.provider.end(), out.begin() + kFabricGrantFixedBytes);
  std::copy(g.address.begin(), g.address.end(), tail);
  return out;
}

Status decodeFabricGrant(const uint8_t* data, size_t size, FabricGrant* out) {
  if (size < kFabricGrantFixedBytes + 2 || size > kMaxFabricGrantBytes)
    return protocolError("fabric grant: " + grantDecimal(size) + " bytes (expected " +
                         grantDecimal(kFabricGrantFixedBytes + 2) + ".." +
                         grantDecimal(kMaxFabricGrantBytes) + ")");
  FabricGrant g;
  g.channelId = get16(data + kOffChannelId);
  const size_t providerLength = data[kOffProviderLength];
  const size_t addressLength = get16(data + kOffAddressLength);
  g.slots = get32(data + kOffSlots);
  g.slotBytes = get32(data + kOffSlotBytes);
  g.ringAddress = get64(data + kOffRingAddress);
  g.ringKey = get64(data + kOffRingKey);
  g.ringSize = get64(data + kOffRingSize);
  if (data[kOffReserved8] != 0 || get16(data + kOffReserved16) != 0)
    return protocolError("fabric grant: reserved bytes 3 and 6..7 not zero");
  if (providerLength < 1 || providerLength > kMaxFabricProviderBytes)
    return protocolError("fabric grant: providerLength " + grantDecimal(providerLength) +
                         " (expected 1.." + grantDecimal(kMaxFabricProviderBytes) + ")");
  if (addressLength < 1 || addressLength > kMaxFabricAddressBytes)
    return protocolError("fabric grant: addressLength " + grantDecimal(addressLength) +
                         " (expected 1.." + grantDecimal(kMaxFabricAddressBytes) + ")");
  if (size != kFabricGrantFixedBytes + providerLength + addressLength)
    return protocolError("fabric grant: " + grantDecimal(size) + " bytes (expected " +
                         grantDecimal(kFabricGrantFixedBytes + providerLength + addressLength) +
                         ": 40 + providerLength + addressLength)");
  const uint8_t* provider = data + kFabricGrantFixedBytes;
  g.provider.assign(reinterpret_cast<const char*>(provider), providerLength);
  if (!isValidFabricProvider(g.provider))
    return protocolError("fabric grant: provider '" + escapeText(g.provider) +
                         "' (expected A-Z a-z 0-9 ; _ . -)");
  g.address.assign(provider + providerLength, provider + providerLength + addressLength);
  if (std::string problem = grantProblem(g); !problem.empty())
    return protocolError("fabric grant: " + problem);
  *out = std::move(g);
  return Status::ok();
}

Result<FabricFrame> fabricOfferFrame(const GroupId& group, uint32_t rank,
                                     const FabricGrant& grant) {
  return grantFrame(FrameType::kFabricOffer, group, rank, grant);
}

Result<FabricFrame> fabricAcceptFrame(const GroupId& group, uint32_t rank,
                                      const FabricGrant& grant) {
  return grantFrame(FrameType::kFabricAccept, group, rank, grant);
}

FabricFrame fabricDeclineFrame(const GroupId& group, uint32_t rank, std::string_view reason) {
  std::string text = encodeErrorMessage(reason.empty() ? std::string_view("declined") : reason);
  if (text.empty()) text = "declined";
  FrameHeader h;
  h.type = FrameType::kFabricDecline;
  h.group = group;
  h.rank = rank;
  h.payloadLength = static_cast<uint32_t>(text.size());
  return FabricFrame{encodeHeader(h), std::vector<uint8_t>(text.begin(), text.end())};
}

Status parseFabricDecline(const uint8_t* payload, size_t size, std::string* reason) {
  if (size < 1 || size > kMaxErrorMessageBytes)
    return protocolError("fabric decline: " + grantDecimal(size) + " bytes (expected 1.." +
                         grantDecimal(kMaxErrorMessageBytes) + ")");
  std::string text;
  if (Status s = decodeErrorMessage(payload, size, &text); !s.isOk())
    return protocolError("fabric decline: " + s.message());
  *reason = escapeText(text);
  return Status::ok();
}

namespace {
constexpr char kProbeMagic[16] = "rs-fabric-probe";  // 15 characters and the zero
}  // namespace

FabricProbe fabricProbe(const GroupId& group, uint32_t rank, ProbeFrom from) {
  FabricProbe p{};
  std::memcpy(p.data(), kProbeMagic, sizeof(kProbeMagic));
  put64(p.data() + 16, group.hi);
  put64(p.data() + 24, group.lo);
  put32(p.data() + 32, rank);
  p[36] = static_cast<uint8_t>(from);
  return p;
}

Status checkFabricProbe(const uint8_t* piece, size_t size, const GroupId& group, uint32_t rank,
                        ProbeFrom from) {
  const std::string who = from == ProbeFrom::kMember ? "the member's" : "the reducer's";
  if (size != kFabricProbeBytes)
    return protocolError("fabric probe: " + who + " probe is " + grantDecimal(size) +
                         " bytes (expected " + grantDecimal(kFabricProbeBytes) + ")");
  const FabricProbe want = fabricProbe(group, rank, from);
  if (std::memcmp(piece, want.data(), want.size()) == 0) return Status::ok();
  size_t at = 0;
  while (piece[at] == want[at]) ++at;
  return protocolError("fabric probe: " + who + " probe differs from byte " + grantDecimal(at) +
                       " on (expected the probe of group " + group.toString() + " rank " +
                       grantDecimal(rank) + "): the fabric delivered other bytes than were written");
}

}  // namespace rs::wire
