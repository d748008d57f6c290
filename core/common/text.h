// Text helpers for error messages.
#pragma once

#include <string>
#include <string_view>

namespace rs {

// Untrusted text in an error message: quoted, escaped ("\x01", "\""), and cut after 80
// characters ("..."), so that a message stays one readable line whatever the input held.
std::string quoteText(std::string_view s);

}  // namespace rs
