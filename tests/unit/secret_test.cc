// The job secret's sources (core/common/secret.h): a file, RS_SECRET_FILE, RS_SECRET.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/common/secret.h"
#include "tests/support/scoped_env.h"

namespace rs {
namespace {

using test::ScopedEnv;

std::string writeTemp(const std::string& contents) {
  char path[] = "/tmp/rs_secret_test_XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

}  // namespace

TEST_CASE("secret: a file's bytes, without the trailing newline") {
  const std::string path = writeTemp("0123456789abcdef0123\n");
  auto s = readSecretFile(path);
  REQUIRE(s.isOk());
  CHECK(*s == "0123456789abcdef0123");
  std::remove(path.c_str());
}

TEST_CASE("secret: a short secret or a missing file is refused with the path") {
  const std::string path = writeTemp("short\n");
  auto s = readSecretFile(path);
  REQUIRE_FALSE(s.isOk());
  CHECK(s.status().message().find(path) != std::string::npos);
  CHECK(s.status().message().find("at least 16") != std::string::npos);
  std::remove(path.c_str());
  auto missing = readSecretFile("/nonexistent/rs-secret");
  REQUIRE_FALSE(missing.isOk());
  CHECK(missing.status().message().find("/nonexistent/rs-secret") != std::string::npos);
}

TEST_CASE("secret: from the environment") {
  const std::string path = writeTemp("file-secret-0123456789");
  {
    ScopedEnv file("RS_SECRET_FILE", nullptr);
    ScopedEnv value("RS_SECRET", nullptr);
    auto s = secretFromEnvironment();
    REQUIRE(s.isOk());
    CHECK(s->empty());  // none: open
  }
  {
    ScopedEnv file("RS_SECRET_FILE", path.c_str());
    ScopedEnv value("RS_SECRET", nullptr);
    auto s = secretFromEnvironment();
    REQUIRE(s.isOk());
    CHECK(*s == "file-secret-0123456789");
  }
  {
    ScopedEnv file("RS_SECRET_FILE", nullptr);
    ScopedEnv value("RS_SECRET", "value-secret-0123456789");
    auto s = secretFromEnvironment();
    REQUIRE(s.isOk());
    CHECK(*s == "value-secret-0123456789");
  }
  {
    ScopedEnv file("RS_SECRET_FILE", nullptr);
    ScopedEnv value("RS_SECRET", "short");
    auto s = secretFromEnvironment();
    REQUIRE_FALSE(s.isOk());
    CHECK(s.status().message().find("RS_SECRET") != std::string::npos);
  }
  {
    ScopedEnv file("RS_SECRET_FILE", path.c_str());
    ScopedEnv value("RS_SECRET", "value-secret-0123456789");
    auto s = secretFromEnvironment();
    REQUIRE_FALSE(s.isOk());
    CHECK(s.status().message().find("both") != std::string::npos);
  }
  std::remove(path.c_str());
}

TEST_CASE("secret: a program's own file flag wins over RS_SECRET_FILE, and is named beside "
          "RS_SECRET") {
  const std::string flagged = writeTemp("flag-secret-0123456789");
  const std::string fromEnv = writeTemp("env-file-secret-0123456789");
  const std::string sources = "--secret-file (or RS_SECRET_FILE)";
  {
    ScopedEnv file("RS_SECRET_FILE", fromEnv.c_str());
    ScopedEnv value("RS_SECRET", nullptr);
    auto s = secretFromEnvironment(flagged, sources);
    REQUIRE(s.isOk());
    CHECK(*s == "flag-secret-0123456789");
    auto none = secretFromEnvironment({}, sources);  // no flag: the environment's file
    REQUIRE(none.isOk());
    CHECK(*none == "env-file-secret-0123456789");
  }
  for (const char* file : {static_cast<const char*>(nullptr), fromEnv.c_str()}) {
    ScopedEnv env("RS_SECRET_FILE", file);
    ScopedEnv value("RS_SECRET", "value-secret-0123456789");
    auto s = secretFromEnvironment(file == nullptr ? flagged : std::string(), sources);
    REQUIRE_FALSE(s.isOk());
    CHECK(s.status().message() ==
          "both --secret-file (or RS_SECRET_FILE) and RS_SECRET are set; set one");
  }
  std::remove(flagged.c_str());
  std::remove(fromEnv.c_str());
}

}  // namespace rs
