// Whether a message (a status's, a log line) contains a fragment, for checks that need a bool.
#pragma once

#include <string>

namespace rs::test {

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace rs::test
