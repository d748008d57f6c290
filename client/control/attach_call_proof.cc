#include "client/control/attach_call_proof.h"

#include <chrono>

#include "core/wire/call_proof.h"

namespace rs::client {

CallProofMetadata makeCallProof(std::string_view method, const google::protobuf::Message& request,
                                std::string_view secret, std::string_view jobName,
                                int64_t timestampMs, std::string_view nonceHex) {
  const wire::Nonce nonce = wire::fromHex(nonceHex).value_or(wire::Nonce{});
  CallProofMetadata m;
  m.job = std::string(jobName);
  m.timestamp = std::to_string(timestampMs);
  m.nonce = std::string(nonceHex);
  m.proof = wire::toHex(wire::callProof(secret, method, jobName, timestampMs, nonce,
                                        request.SerializeAsString()));
  return m;
}

void addCallProof(grpc::ClientContext& context, const CallProofMetadata& proof) {
  if (!proof.job.empty()) context.AddMetadata(std::string(wire::kCallJobKey), proof.job);
  context.AddMetadata(std::string(wire::kCallTimestampKey), proof.timestamp);
  context.AddMetadata(std::string(wire::kCallNonceKey), proof.nonce);
  context.AddMetadata(std::string(wire::kCallProofKey), proof.proof);
}

Status attachCallProof(grpc::ClientContext& context, std::string_view method,
                       const google::protobuf::Message& request, std::string_view secret,
                       std::string_view jobName) {
  if (secret.empty()) return Status::ok();
  auto nonce = wire::randomNonce();
  if (!nonce) return nonce.status();
  const int64_t nowMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  addCallProof(context, makeCallProof(method, request, secret, jobName, nowMs,
                                      wire::toHex(*nonce)));
  return Status::ok();
}

}  // namespace rs::client
