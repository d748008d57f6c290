// The job secret that authenticates data connections (core/wire/auth.h): read from a file
// (--secret-file, RS_SECRET_FILE: a Kubernetes Secret mounted as a file) or from RS_SECRET.
// Never logged, never sent.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/common/status.h"

namespace rs {

// Shorter secrets are refused: 16 random bytes is the least that resists guessing offline
// from a captured handshake.
inline constexpr size_t kMinSecretBytes = 16;

// The file's bytes, without trailing whitespace (the newline an editor or `echo` adds).
// Refused: unreadable, or shorter than kMinSecretBytes; the message names the path.
Result<std::string> readSecretFile(const std::string& path);

// The one place a program reads its secret's sources: the file `flagFile` names (a program's
// own flag, the reducer's --secret-file; empty: not given), else the file RS_SECRET_FILE names
// (each read as above), else RS_SECRET; empty when none is set. A file and RS_SECRET both set is
// an error (which one was meant?), whose message names the file's sources as `fileSources`.
Result<std::string> secretFromEnvironment(const std::string& flagFile = {},
                                          std::string_view fileSources = "RS_SECRET_FILE");

// Checks the length; `source` names where the secret came from.
Status checkSecret(const std::string& secret, const std::string& source);

}  // namespace rs
