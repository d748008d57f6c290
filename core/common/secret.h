// The job secret that authenticates data connections (core/wire/auth.h): read from a file
// (--secret-file, RS_SECRET_FILE: a Kubernetes Secret mounted as a file) or from RS_SECRET.
// Never logged, never sent.
#pragma once

#include <cstddef>
#include <string>

#include "core/common/status.h"

namespace rs {

// Shorter secrets are refused: 16 random bytes is the least that resists guessing offline
// from a captured handshake.
inline constexpr size_t kMinSecretBytes = 16;

// The file's bytes, without trailing whitespace (the newline an editor or `echo` adds).
// Refused: unreadable, or shorter than kMinSecretBytes; the message names the path.
Result<std::string> readSecretFile(const std::string& path);

// RS_SECRET_FILE (read as above) or RS_SECRET; empty when neither is set. Both set is an error
// (which one was meant?).
Result<std::string> secretFromEnvironment();

// Checks the length; `source` names where the secret came from.
Status checkSecret(const std::string& secret, const std::string& source);

}  // namespace rs
