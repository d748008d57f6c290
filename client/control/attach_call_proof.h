// Signs a gRPC call to a reducer that has a job secret (proto/WIRE.md, "Control plane"): every
// in-tree caller of the ReductionServer service goes through this one function.
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/client_context.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/common/status.h"

namespace rs::client {

// The rs-* metadata values of one call's proof.
struct CallProofMetadata {
  std::string job, timestamp, nonce, proof;
};

// The proof of `request` to `method` ("/rs.v1.ReductionServer/JoinGroup") at `timestampMs`
// (Unix ms) with `nonce` (64 hex digits), under `secret`: the job's secret with `jobName`, or
// the pool's secret without. For tests that need a chosen time or nonce.
CallProofMetadata makeCallProof(std::string_view method, const google::protobuf::Message& request,
                                std::string_view secret, std::string_view jobName,
                                int64_t timestampMs, std::string_view nonceHex);

// Adds `proof` to `context` (rs-job only when it names a job).
void addCallProof(grpc::ClientContext& context, const CallProofMetadata& proof);

// Signs one call now with a fresh nonce. An empty `secret` attaches nothing (an open reducer).
Status attachCallProof(grpc::ClientContext& context, std::string_view method,
                       const google::protobuf::Message& request, std::string_view secret,
                       std::string_view jobName = {});

}  // namespace rs::client
