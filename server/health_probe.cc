#include "server/health_probe.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdio>

#include "core/common/endpoint.h"
#include "proto/health.grpc.pb.h"

namespace rs::server {

namespace {

using grpc::health::v1::HealthCheckResponse;

// The name a client must expect of the certificate in `pem`: its first DNS subjectAltName,
// else its common name; "" if there is neither. A wildcard stands for any one label.
std::string certificateName(const std::string& pem) {
  std::string name;
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = bio ? PEM_read_bio_X509(bio, nullptr, nullptr, nullptr) : nullptr;
  if (cert) {
    auto* sans = static_cast<GENERAL_NAMES*>(
        X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
    for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans) && name.empty(); ++i) {
      const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
      if (g->type == GEN_DNS)
        name.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(g->d.dNSName)),
                    static_cast<size_t>(ASN1_STRING_length(g->d.dNSName)));
    }
    GENERAL_NAMES_free(sans);
    char cn[256];
    const int n = name.empty() ? X509_NAME_get_text_by_NID(X509_get_subject_name(cert),
                                                           NID_commonName, cn, sizeof(cn))
                               : 0;
    if (n > 0) name.assign(cn, static_cast<size_t>(n));
    X509_free(cert);
  }
  BIO_free(bio);
  if (name.rfind("*.", 0) == 0) name = "probe" + name.substr(1);
  return name;
}

void say(const std::string& address, const std::string& what) {
  fmt::print("reduction-server health probe: {} {}\n", address, what);
  std::fflush(stdout);
}

}  // namespace

Result<std::string> healthProbeAddress(const ServerConfig& config) {
  Endpoint grpc;
  if (!config.grpcListen.empty()) {
    auto ep = parseEndpoint(config.grpcListen, "--grpc-listen (RS_GRPC_LISTEN)");
    if (!ep)
      return invalidArgument(ep.status().message() +
                             "; an ephemeral port cannot be probed: pass --health-probe HOST:PORT");
    grpc = *ep;
  } else {
    auto data = parseEndpoint(
        config.dataListen, "the data address (--data-listen, RS_DATA_LISTEN or CLUSTER_SPEC)");
    if (!data)
      return invalidArgument(data.status().message() +
                             "; an ephemeral port cannot be probed: pass --health-probe HOST:PORT");
    if (data->port == UINT16_MAX)
      return invalidArgument("the data port is 65535, so gRPC has no data port + 1: set "
                             "--grpc-listen or pass --health-probe HOST:PORT");
    grpc = data->withPort(static_cast<uint16_t>(data->port + 1));
  }
  return grpc.reachableLocally().toString();
}

int runHealthProbe(const std::string& address, std::chrono::milliseconds timeout,
                   const std::string& tlsCert) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  grpc::ChannelArguments args;
  if (!tlsCert.empty()) {
    grpc::SslCredentialsOptions trust;
    trust.pem_root_certs = tlsCert;
    credentials = grpc::SslCredentials(trust);
    // We dial the daemon's own address, which need not be a name its certificate carries.
    if (const std::string name = certificateName(tlsCert); !name.empty())
      args.SetSslTargetNameOverride(name);
  }
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateCustomChannel(address, credentials, args));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  grpc::health::v1::HealthCheckRequest request;  // service "": the server as a whole
  HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);

  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    say(address, fmt::format("gave no answer within {} ms", timeout.count()));
    return 1;
  }
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    say(address, "is unreachable: " + status.error_message());
    return 1;
  }
  if (!status.ok()) {
    say(address, fmt::format("failed the health check with gRPC status {}: {}",
                             static_cast<int>(status.error_code()), status.error_message()));
    return 1;
  }
  const std::string name = HealthCheckResponse::ServingStatus_Name(response.status());
  if (response.status() == HealthCheckResponse::SERVING) {
    say(address, "is SERVING");
    return 0;
  }
  if (response.status() == HealthCheckResponse::NOT_SERVING) {
    say(address, "is NOT_SERVING (draining or stopping)");
    return 1;
  }
  say(address, "answered " + name);
  return 1;
}

}  // namespace rs::server
