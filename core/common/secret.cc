#include "core/common/secret.h"

#include <fstream>
#include <iterator>

#include "core/common/env.h"

namespace rs {

Status checkSecret(const std::string& secret, const std::string& source) {
  if (secret.size() < kMinSecretBytes)
    return invalidArgument(source + ": the job secret has " + std::to_string(secret.size()) +
                           " bytes; at least " + std::to_string(kMinSecretBytes) +
                           " random bytes are needed (e.g. `openssl rand -hex 32`)");
  return Status::ok();
}

Result<std::string> readSecretFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return invalidArgument("cannot read the secret file '" + path + "'");
  std::string secret((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) return ioError("reading the secret file '" + path + "' failed");
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r' ||
                             secret.back() == ' ' || secret.back() == '\t'))
    secret.pop_back();
  RS_RETURN_IF_ERROR(checkSecret(secret, "secret file '" + path + "'"));
  return secret;
}

Result<std::string> secretFromEnvironment(const std::string& flagFile,
                                          std::string_view fileSources) {
  const std::optional<std::string> file =
      flagFile.empty() ? envString("RS_SECRET_FILE") : std::optional(flagFile);
  const std::optional<std::string> value = envString("RS_SECRET");
  if (file && value)
    return invalidArgument("both " + std::string(fileSources) +
                           " and RS_SECRET are set; set one");
  if (file) return readSecretFile(*file);
  if (!value) return std::string();
  RS_RETURN_IF_ERROR(checkSecret(*value, "RS_SECRET"));
  return *value;
}

}  // namespace rs
