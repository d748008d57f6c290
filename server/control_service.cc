#include "server/control_service.h"

#include "core/common/build_info.h"
#include "core/common/endpoint.h"
#include "core/common/log.h"
#include "core/reduce/dtype.h"
#include "core/wire/call_proof.h"
#include "core/wire/frame.h"

namespace rs::server {

grpc::Status toGrpc(const Status& s) {
  using grpc::StatusCode;
  StatusCode code = StatusCode::INTERNAL;
  switch (s.code()) {
    case rs::StatusCode::kOk: return grpc::Status::OK;
    case rs::StatusCode::kInvalidArgument: code = StatusCode::INVALID_ARGUMENT; break;
    case rs::StatusCode::kProtocolError: code = StatusCode::INVALID_ARGUMENT; break;
    case rs::StatusCode::kIoError: code = StatusCode::UNAVAILABLE; break;
    case rs::StatusCode::kTimeout: code = StatusCode::DEADLINE_EXCEEDED; break;
    case rs::StatusCode::kAborted: code = StatusCode::ABORTED; break;
    case rs::StatusCode::kResourceExhausted: code = StatusCode::RESOURCE_EXHAUSTED; break;
    case rs::StatusCode::kFailedPrecondition: code = StatusCode::FAILED_PRECONDITION; break;
    case rs::StatusCode::kUnavailable: code = StatusCode::UNAVAILABLE; break;
    case rs::StatusCode::kInternal: code = StatusCode::INTERNAL; break;
  }
  return {code, s.message()};
}

namespace {

Result<GroupId> groupIdFromBytes(const std::string& bytes) {
  if (bytes.size() != 16)
    return invalidArgument("group_id must be 16 bytes, got " + std::to_string(bytes.size()));
  GroupId id;
  for (int i = 0; i < 8; ++i) {
    id.hi = id.hi << 8 | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
    id.lo = id.lo << 8 | static_cast<uint8_t>(bytes[static_cast<size_t>(i + 8)]);
  }
  return id;
}

std::string groupIdToBytes(const GroupId& id) {
  std::string out(16, '\0');
  for (int i = 0; i < 8; ++i) {
    out[static_cast<size_t>(i)] = static_cast<char>(id.hi >> (56 - 8 * i));
    out[static_cast<size_t>(i + 8)] = static_cast<char>(id.lo >> (56 - 8 * i));
  }
  return out;
}

}  // namespace

ControlService::ControlService(const ServerConfig& config, GroupRegistry& registry,
                               DataPlane& plane, std::function<void()> onDrain)
    : config_(config),
      registry_(registry),
      plane_(plane),
      onDrain_(std::move(onDrain)),
      auth_(config.secret),
      started_(std::chrono::steady_clock::now()) {}

grpc::Status ControlService::authenticate(grpc::ServerContext* ctx, std::string_view method,
                                          const google::protobuf::Message& request,
                                          Caller* caller) {
  CallMetadata call;
  const auto& md = ctx->client_metadata();
  auto take = [&](std::string_view key, std::optional<std::string>* out) {
    if (auto it = md.find(grpc::string_ref(key.data(), key.size())); it != md.end())
      *out = std::string(it->second.data(), it->second.size());
  };
  take(wire::kCallJobKey, &call.job);
  take(wire::kCallTimestampKey, &call.timestamp);
  take(wire::kCallNonceKey, &call.nonce);
  take(wire::kCallProofKey, &call.proof);
  const int64_t nowMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  auto who = auth_.check(call, method, request.SerializeAsString(), nowMs);
  if (who) {
    *caller = std::move(*who);
    return grpc::Status::OK;
  }
  refused(method, ctx->peer(), who.status().message());
  return {who.status().code() == rs::StatusCode::kResourceExhausted
              ? grpc::StatusCode::RESOURCE_EXHAUSTED
              : grpc::StatusCode::UNAUTHENTICATED,
          who.status().message()};
}

void ControlService::refused(std::string_view method, const std::string& peer,
                             std::string_view why) {
  callsRefused_.fetch_add(1, std::memory_order_relaxed);
  const std::optional<uint64_t> unlogged = refusalLog_.admit();
  if (!unlogged) return;
  rs::logger().warn("refused gRPC {} from {}: {}{}", method, peer, why,
                    refusalLog_.unloggedNote(*unlogged, "refused calls"));
}

std::vector<std::string> ControlService::dataEndpoints() const {
  // The listen host as configured; a wildcard address is the caller's business to replace
  // with the address it used to reach us. The data plane listens, so the address parses.
  auto listen = parseEndpoint(config_.dataListen, "--data-listen", PortZero::kAllowed);
  if (!listen) return {};
  return {listen->withPort(plane_.port()).toString()};
}

grpc::Status ControlService::GetInfo(grpc::ServerContext* ctx, const rs::v1::GetInfoRequest* in,
                                     rs::v1::GetInfoResponse* out) {
  Caller caller;
  if (grpc::Status s = authenticate(ctx, "/rs.v1.ReductionServer/GetInfo", *in, &caller); !s.ok())
    return s;
  out->set_version(std::string(buildInfo().version));
  out->set_protocol_version(wire::kProtocolVersion);
  for (int t = 0; t < kNumDataTypes; ++t)
    out->add_dtypes(std::string(dataTypeName(static_cast<DataType>(t))));
  for (int o = 0; o < kNumReduceOps; ++o)
    out->add_ops(std::string(reduceOpName(static_cast<ReduceOp>(o))));
  out->add_transports(rs::v1::TRANSPORT_TCP);
  out->set_max_chunk_bytes(config_.maxChunkBytes);
  for (auto& e : dataEndpoints()) out->add_data_endpoints(e);
  out->set_io_threads(static_cast<uint32_t>(config_.ioThreads));
  out->set_auth_required(!config_.secret.empty());
  out->set_draining(registry_.draining());
  return grpc::Status::OK;
}

grpc::Status ControlService::JoinGroup(grpc::ServerContext* ctx,
                                       const rs::v1::JoinGroupRequest* in,
                                       rs::v1::JoinGroupResponse* out) {
  Caller caller;
  if (grpc::Status s = authenticate(ctx, "/rs.v1.ReductionServer/JoinGroup", *in, &caller);
      !s.ok())
    return s;
  auto id = groupIdFromBytes(in->group_id());
  if (!id) return toGrpc(id.status());
  // The registry applies HELLO's limits; here only what does not fit HELLO's 16-bit fields.
  if (in->stream_count() > UINT16_MAX || in->reducer_count() > UINT16_MAX ||
      in->reducer_index() > UINT16_MAX)
    return toGrpc(invalidArgument(fmt::format(
        "stream_count {}, reducer_index {}, reducer_count {}: each must be at most 65535",
        in->stream_count(), in->reducer_index(), in->reducer_count())));
  GroupParams params{in->world_size(), static_cast<uint16_t>(in->stream_count()),
                     static_cast<uint16_t>(in->reducer_index()),
                     static_cast<uint16_t>(in->reducer_count()), in->timeout_ms(),
                     caller.job,  // the caller's job owns the group it declares
                     in->deterministic(),
                     in->fp64_accumulator() ? Fp32Accumulator::kFp64 : Fp32Accumulator::kFp32};
  auto known = registry_.declareMember(*id, in->rank(), params);
  if (!known) return toGrpc(known.status());
  rs::logger().info("group {} rank {} joined over gRPC ({} members known)",
                    id->toString().substr(0, 8), in->rank(), *known);
  for (auto& e : dataEndpoints()) out->add_data_endpoints(e);
  out->set_max_chunk_bytes(config_.maxChunkBytes);
  out->set_io_threads(static_cast<uint32_t>(config_.ioThreads));
  out->set_members_joined(*known);
  return grpc::Status::OK;
}

grpc::Status ControlService::LeaveGroup(grpc::ServerContext* ctx,
                                        const rs::v1::LeaveGroupRequest* in,
                                        rs::v1::LeaveGroupResponse*) {
  Caller caller;
  if (grpc::Status s = authenticate(ctx, "/rs.v1.ReductionServer/LeaveGroup", *in, &caller);
      !s.ok())
    return s;
  auto id = groupIdFromBytes(in->group_id());
  if (!id) return toGrpc(id.status());
  if (auto left = registry_.leaveMember(*id, in->rank(), caller.job); !left)
    return toGrpc(left.status());
  rs::logger().info("group {} rank {} left over gRPC", id->toString().substr(0, 8), in->rank());
  return grpc::Status::OK;
}

grpc::Status ControlService::GetStats(grpc::ServerContext* ctx, const rs::v1::GetStatsRequest* in,
                                      rs::v1::GetStatsResponse* out) {
  Caller caller;
  if (grpc::Status s = authenticate(ctx, "/rs.v1.ReductionServer/GetStats", *in, &caller);
      !s.ok())
    return s;
  DataPlaneStats s = plane_.stats();
  out->set_bytes_in(s.bytesIn);
  out->set_bytes_out(s.bytesOut);
  out->set_reductions(s.reductions);
  out->set_connections(static_cast<uint64_t>(std::max<int64_t>(0, s.connectionsOpen)));
  out->set_protocol_errors(s.protocolErrors);
  out->set_slot_bytes_in_use(s.slotBytesInUse);
  out->set_slot_bytes_limit(s.slotBytesLimit);
  out->set_uptime_seconds(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
  for (const GroupSnapshot& g : registry_.snapshot()) {
    // A job sees only its own groups; the pool's secret (or an open reducer) sees all.
    if (!caller.isPool() && g.group->job() != caller.job) continue;
    auto* gs = out->add_groups();
    GroupCounters& c = g.group->counters();
    // The first 4 bytes (8 hex digits, as in the logs): enough to tell groups apart, never
    // enough to name one in a HELLO.
    gs->set_group_id(groupIdToBytes(g.group->id()).substr(0, 4));
    gs->set_world_size(g.group->params().worldSize);
    gs->set_members_connected(g.membersKnown);
    gs->set_reductions(c.reductions.load());
    gs->set_bytes_in(c.bytesIn.load());
    gs->set_bytes_out(c.bytesOut.load());
    gs->set_errors(c.errors.load());
    gs->set_slots_in_use(static_cast<uint32_t>(std::max<int64_t>(0, c.openSlots.load())));
  }
  return grpc::Status::OK;
}

grpc::Status ControlService::Drain(grpc::ServerContext* ctx, const rs::v1::DrainRequest* in,
                                   rs::v1::DrainResponse* out) {
  Caller caller;
  if (grpc::Status s = authenticate(ctx, "/rs.v1.ReductionServer/Drain", *in, &caller); !s.ok())
    return s;
  if (!caller.isPool()) {
    refused("/rs.v1.ReductionServer/Drain", ctx->peer(), "job '" + caller.job + "' is not the operator");
    return {grpc::StatusCode::PERMISSION_DENIED,
            "Drain needs the pool's secret (the operator's); job '" + caller.job +
                "' may not drain this reducer"};
  }
  registry_.setDraining(true);
  out->set_groups_active(static_cast<uint32_t>(registry_.size()));
  rs::logger().info("drain requested over gRPC: {} groups active", registry_.size());
  if (onDrain_) onDrain_();
  return grpc::Status::OK;
}

}  // namespace rs::server
