// The reducer's flags parsed as main() parses them, with CLUSTER_SPEC unset so that the data
// port never comes from the environment of whoever runs the test.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "server/config.h"

namespace rs::test {

// Runs the parser on "reduction-server <args...>".
inline server::ParsedConfig parseServerArgs(std::vector<std::string> args) {
  ::unsetenv("CLUSTER_SPEC");
  args.insert(args.begin(), "reduction-server");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return server::parseServerConfig(static_cast<int>(argv.size()), argv.data());
}

}  // namespace rs::test
