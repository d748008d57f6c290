#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "core/cluster/cluster_spec.h"
#include "core/common/byte_size.h"
#include "core/common/env.h"
#include "core/common/secret.h"
#include "core/wire/frame.h"
#include "rs/client.h"

namespace rs::client {
namespace {

Status readNumber(const char* name, uint64_t min, uint64_t max, uint64_t* out) {
  return assignIfSet(envUnsigned(name, min, max), out);
}

Status readBytes(const char* name, uint64_t* out) { return assignIfSet(envByteSize(name), out); }

Result<double> parseGbps(std::string_view text) {
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !(v >= 0 && v <= 100000))
    return invalidArgument("'" + s + "' is not a link rate in Gbit/s (0 .. 100000, e.g. 25)");
  return v;
}

}  // namespace

Result<ClientOptions> ClientOptions::fromEnvironment() {
  ClientOptions o;
  auto reducers = cluster::reducersFromEnvironment();
  if (!reducers) return reducers.status();
  o.reducers = std::move(*reducers);
  RS_RETURN_IF_ERROR(o.applyEnvironment());
  RS_RETURN_IF_ERROR(o.validate());
  return o;
}

Status ClientOptions::applyEnvironment() {
  uint64_t streams = streamsPerReducer, threads = ioThreads;
  uint64_t timeoutMs = static_cast<uint64_t>(collectiveTimeout.count());
  uint64_t connectMs = static_cast<uint64_t>(connectTimeout.count());
  uint64_t probeMs = static_cast<uint64_t>(fabricProbeTimeout.count());
  uint64_t lossMs = static_cast<uint64_t>(lossDetect.count());
  uint64_t rejoinMs = static_cast<uint64_t>(rejoin.count());
  uint64_t deterministicMode = deterministic ? 1 : 0;
  RS_RETURN_IF_ERROR(readNumber("RS_STREAMS", 0, 256, &streams));
  RS_RETURN_IF_ERROR(readNumber("RS_CLIENT_IO_THREADS", 1, 256, &threads));
  RS_RETURN_IF_ERROR(readNumber("RS_TIMEOUT_MS", 1, UINT32_MAX, &timeoutMs));
  RS_RETURN_IF_ERROR(readNumber("RS_CONNECT_TIMEOUT_MS", 1, UINT32_MAX, &connectMs));
  RS_RETURN_IF_ERROR(readNumber("RS_FABRIC_PROBE_TIMEOUT_MS", 1, UINT32_MAX, &probeMs));
  RS_RETURN_IF_ERROR(readNumber("RS_LOSS_DETECT_MS", 0, UINT32_MAX, &lossMs));
  RS_RETURN_IF_ERROR(readNumber("RS_REJOIN_MS", 0, UINT32_MAX, &rejoinMs));
  RS_RETURN_IF_ERROR(readNumber("RS_DETERMINISTIC", 0, 1, &deterministicMode));
  RS_RETURN_IF_ERROR(readBytes("RS_MIN_CHUNK", &minChunkBytes));
  RS_RETURN_IF_ERROR(readBytes("RS_MAX_CHUNK", &maxChunkBytes));
  RS_RETURN_IF_ERROR(readBytes("RS_RETAIN_BYTES", &retainBytes));
  RS_RETURN_IF_ERROR(assignIfSet(envParsed("RS_CLIENT_PROGRESS", &parseProgress), &progress));
  RS_RETURN_IF_ERROR(assignIfSet(envParsed("RS_LINK_GBPS", &parseGbps), &linkGbps));
  RS_RETURN_IF_ERROR(
      assignIfSet(envParsed("RS_REDUCER_LINK_GBPS", &parseGbps), &reducerLinkGbps));
  RS_RETURN_IF_ERROR(assignIfSet(envParsed("RS_WIRE_DTYPE", &parseWireType), &float32WireType));
  RS_RETURN_IF_ERROR(
      assignIfSet(envParsed("RS_FP32_ACCUMULATOR", &parseFp32Accumulator), &fp32Accumulator));
  RS_RETURN_IF_ERROR(assignIfSet(envParsed("RS_FABRIC", &parseFabric), &fabric));
  if (auto node = envString("RS_FABRIC_NODE")) fabricNode = std::move(*node);
  streamsPerReducer = static_cast<uint32_t>(streams);
  ioThreads = static_cast<uint32_t>(threads);
  collectiveTimeout = std::chrono::milliseconds(timeoutMs);
  connectTimeout = std::chrono::milliseconds(connectMs);
  fabricProbeTimeout = std::chrono::milliseconds(probeMs);
  lossDetect = std::chrono::milliseconds(lossMs);
  rejoin = std::chrono::milliseconds(rejoinMs);
  deterministic = deterministicMode != 0;
  auto secret = secretFromEnvironment();  // RS_SECRET_FILE or RS_SECRET
  if (!secret) return secret.status();
  this->secret = std::move(*secret);
  if (auto job = envString("RS_JOB")) jobName = std::move(*job);
  return Status::ok();
}

uint32_t ClientOptions::streamsFor(size_t reducers) {
  constexpr size_t kStreamsPerWorker = 16, kMostPerReducer = 4;
  if (reducers == 0) return kMostPerReducer;
  return static_cast<uint32_t>(std::clamp<size_t>(kStreamsPerWorker / reducers, 1, kMostPerReducer));
}

uint64_t ClientOptions::effectiveRetainBytes() const {
  if (retainBytes != 0) return retainBytes;
  constexpr uint64_t kFloor = 64ull << 20;
  return std::max(kFloor, 4 * maxChunkBytes * effectiveStreams() * reducers.size());
}

Result<ClientOptions::Progress> ClientOptions::parseProgress(std::string_view name) {
  if (name == "threads") return Progress::kIoThreads;
  if (name == "caller") return Progress::kCaller;
  return invalidArgument("'" + std::string(name) + "' is not 'threads' or 'caller'");
}

Result<DataType> ClientOptions::parseWireType(std::string_view name) {
  if (name == "fp32") return DataType::kFloat32;
  if (name == "bf16") return DataType::kBfloat16;
  return invalidArgument("'" + std::string(name) +
                         "' is not a wire type: expected 'fp32' (no compression) or 'bf16'");
}

Result<Fp32Accumulator> ClientOptions::parseFp32Accumulator(std::string_view name) {
  if (auto accumulator = rs::parseFp32Accumulator(name)) return *accumulator;
  return invalidArgument("'" + std::string(name) +
                         "' is not an accumulator for fp32 sums: expected 'fp32' or 'fp64'");
}

Result<std::string> ClientOptions::parseFabric(std::string_view name) {
  const bool valid = !name.empty() && name.size() <= 64 &&
                     std::all_of(name.begin(), name.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                              c == '-' || c == ';' || c == '.';
                     });
  if (!valid)
    return invalidArgument("'" + std::string(name.substr(0, 64)) +
                           "' is not 'off', 'auto' or a libfabric provider's name (verbs, efa, "
                           "tcp)");
  return std::string(name);
}

DataType ClientOptions::wireType(DataType type, ReduceOp op) const {
  const bool summed = op == ReduceOp::kSum || op == ReduceOp::kAvg;
  return type == DataType::kFloat32 && summed ? float32WireType : type;
}

Status ClientOptions::validate() const {
  if (reducers.empty()) return invalidArgument("no reducers given");
  if (reducers.size() > 65535) return invalidArgument("more than 65535 reducers");
  if (streamsPerReducer > 256)
    return invalidArgument("streams per reducer must be 1..256 (0: automatic)");
  if (ioThreads < 1 || ioThreads > 256) return invalidArgument("client io threads must be 1..256");
  if (minChunkBytes < 1 || maxChunkBytes < minChunkBytes)
    return invalidArgument("chunk sizes: need 1 <= min (" + formatByteSize(minChunkBytes) +
                           ") <= max (" + formatByteSize(maxChunkBytes) + ")");
  if (maxChunkBytes > (1ull << 31))
    return invalidArgument("maximum chunk above 2 GiB");
  if (collectiveTimeout.count() < 1 || collectiveTimeout.count() > UINT32_MAX)
    return invalidArgument("collective timeout must be 1 ms .. 49 days");
  if (connectTimeout.count() < 1) return invalidArgument("connect timeout must be >= 1 ms");
  if (fabricProbeTimeout.count() < 1)
    return invalidArgument("fabric probe timeout must be >= 1 ms");
  if (lossDetect.count() != 0 &&
      (lossDetect.count() < wire::kMinLossDetectMs || lossDetect.count() > UINT32_MAX))
    return invalidArgument(fmt::format(
        "loss bound (RS_LOSS_DETECT_MS) must be 0 (the reducers') or {} ms .. 49 days, got {}",
        wire::kMinLossDetectMs, lossDetect.count()));
  if (!(linkGbps >= 0 && linkGbps <= 100000))
    return invalidArgument("link rate (RS_LINK_GBPS) must be 0 (not paced) .. 100000 Gbit/s");
  if (!(reducerLinkGbps >= 0 && reducerLinkGbps <= 100000))
    return invalidArgument(
        "reducers' link rate (RS_REDUCER_LINK_GBPS) must be 0 (RS_LINK_GBPS's) .. 100000 Gbit/s");
  if (float32WireType != DataType::kFloat32 && float32WireType != DataType::kBfloat16)
    return invalidArgument(
        "the wire type of fp32 all-reduces (RS_WIRE_DTYPE) must be fp32 or bf16");
  if (Result<std::string> f = parseFabric(fabric); !f)
    return invalidArgument("fabric (RS_FABRIC): " + f.status().message());
  if (!secret.empty()) RS_RETURN_IF_ERROR(checkSecret(secret, "the client's job secret"));
  if (!jobName.empty() && !wire::isValidJobName(jobName))
    return invalidArgument("job name (RS_JOB) '" + jobName.substr(0, wire::kMaxJobNameBytes) +
                           "': expected 1..128 characters of A-Z a-z 0-9 . _ -");
  if (!jobName.empty() && secret.empty())
    return invalidArgument("job name '" + jobName +
                           "' given without its secret: set RS_SECRET_FILE or RS_SECRET to "
                           "the job's secret (reduction-server --derive-job-secret " + jobName +
                           ")");
  return Status::ok();
}

}  // namespace rs::client
