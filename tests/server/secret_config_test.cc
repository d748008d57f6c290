// The reducer's job secret: --secret-file, RS_SECRET_FILE or RS_SECRET, parsed as main() does.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "server/config.h"
#include "tests/support/parse_server_args.h"
#include "tests/support/scoped_env.h"

namespace {

using rs::test::parseServerArgs;
using rs::test::ScopedEnv;

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& contents) {
    char p[] = "/tmp/rs_secret_config_XXXXXX";
    const int fd = mkstemp(p);
    REQUIRE(fd >= 0);
    close(fd);
    path = p;
    std::ofstream(path, std::ios::binary) << contents;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

}  // namespace

TEST_CASE("server config: no secret means an open reducer") {
  unsetenv("RS_SECRET");
  unsetenv("RS_SECRET_FILE");
  auto parsed = parseServerArgs({"--data-listen", "127.0.0.1:0"});
  REQUIRE(parsed.exitCode == -1);
  CHECK(parsed.config.secret.empty());
}

TEST_CASE("server config: the secret from --secret-file, RS_SECRET_FILE or RS_SECRET") {
  unsetenv("RS_SECRET");
  unsetenv("RS_SECRET_FILE");
  TempFile file("from-a-file-0123456789\n");
  {
    auto parsed = parseServerArgs({"--data-listen", "127.0.0.1:0", "--secret-file", file.path});
    REQUIRE(parsed.exitCode == -1);
    CHECK(parsed.config.secret == "from-a-file-0123456789");
  }
  {
    ScopedEnv env("RS_SECRET_FILE", file.path.c_str());
    auto parsed = parseServerArgs({"--data-listen", "127.0.0.1:0"});
    REQUIRE(parsed.exitCode == -1);
    CHECK(parsed.config.secret == "from-a-file-0123456789");
  }
  {
    ScopedEnv env("RS_SECRET", "from-the-environment-42");
    auto parsed = parseServerArgs({"--data-listen", "127.0.0.1:0"});
    REQUIRE(parsed.exitCode == -1);
    CHECK(parsed.config.secret == "from-the-environment-42");
  }
}

TEST_CASE("server config: a short, missing or doubly given secret stops start-up") {
  unsetenv("RS_SECRET");
  unsetenv("RS_SECRET_FILE");
  TempFile shortFile("short\n");
  CHECK(
      parseServerArgs({"--data-listen", "127.0.0.1:0", "--secret-file", shortFile.path}).exitCode ==
      2);
  CHECK(parseServerArgs({"--data-listen", "127.0.0.1:0", "--secret-file", "/nonexistent/secret"})
            .exitCode == 2);
  TempFile good("from-a-file-0123456789");
  ScopedEnv env("RS_SECRET", "from-the-environment-42");
  CHECK(parseServerArgs({"--data-listen", "127.0.0.1:0", "--secret-file", good.path}).exitCode ==
        2);
}

TEST_CASE("server config: --derive-job-secret needs the pool's secret and nothing else") {
  unsetenv("RS_SECRET_FILE");
  {
    ScopedEnv env("RS_SECRET", "pool-secret-0123456789abcdef");
    auto parsed = parseServerArgs({"--derive-job-secret", "team-a.train-7"});
    REQUIRE(parsed.exitCode == -1);
    CHECK(parsed.deriveJobSecret == "team-a.train-7");
    CHECK(parsed.config.secret == "pool-secret-0123456789abcdef");
  }
  unsetenv("RS_SECRET");
  CHECK(parseServerArgs({"--derive-job-secret", "team-a.train-7"}).exitCode == 2);
}

TEST_CASE("server config: gRPC TLS takes a PEM certificate and key together, or neither") {
  unsetenv("RS_SECRET");
  unsetenv("RS_SECRET_FILE");
  unsetenv("RS_GRPC_TLS_CERT");
  unsetenv("RS_GRPC_TLS_KEY");
  TempFile cert("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
  TempFile key("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n");
  auto plain = parseServerArgs({"--data-listen", "127.0.0.1:0"});
  REQUIRE(plain.exitCode == -1);
  CHECK(plain.config.grpcTlsCert.empty());
  auto both = parseServerArgs(
      {"--data-listen", "127.0.0.1:0", "--grpc-tls-cert", cert.path, "--grpc-tls-key", key.path});
  REQUIRE(both.exitCode == -1);
  CHECK(both.config.grpcTlsCert.find("BEGIN CERTIFICATE") != std::string::npos);
  CHECK(both.config.grpcTlsKey.find("BEGIN PRIVATE KEY") != std::string::npos);
  {
    ScopedEnv c("RS_GRPC_TLS_CERT", cert.path.c_str());
    ScopedEnv k("RS_GRPC_TLS_KEY", key.path.c_str());
    auto env = parseServerArgs({"--data-listen", "127.0.0.1:0"});
    REQUIRE(env.exitCode == -1);
    CHECK(env.config.grpcTlsKey == both.config.grpcTlsKey);
  }
  // Refused at start: one without the other, a missing file, a file that is not that PEM.
  CHECK(parseServerArgs({"--data-listen", "127.0.0.1:0", "--grpc-tls-cert", cert.path}).exitCode ==
        2);
  CHECK(parseServerArgs({"--data-listen", "127.0.0.1:0", "--grpc-tls-key", key.path}).exitCode ==
        2);
  CHECK(parseServerArgs({"--data-listen", "127.0.0.1:0", "--grpc-tls-cert", "/nonexistent/cert.pem",
                         "--grpc-tls-key", key.path})
            .exitCode == 2);
  CHECK(parseServerArgs({"--data-listen", "127.0.0.1:0", "--grpc-tls-cert", key.path,
                         "--grpc-tls-key", key.path})
            .exitCode == 2);
}
