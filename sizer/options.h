// rs-sizer's command line: flags -> Options. Numbers arrive as text and are parsed strictly here;
// what they mean together (types, conflicts, Tier_1) is checked by resolveJob.
#pragma once

#include <string>

#include "sizer/emit/emit.h"
#include "sizer/job.h"

namespace rs::sizer {

struct Options {
  JobSpec job;
  bool json = false;
  bool recommend = false;
  bool listTypes = false;
  std::string pricesPath;  // empty: no --prices
  std::string emitKind;    // empty: no --emit
  EmitPlan emitNames;      // --job-name, --region, the images, --train-script
};

struct ParsedOptions {
  Options options;
  int exitCode = -1;  // >= 0: stop now with this code (help or version printed, or a flag error)
};

// Parses argv; prints --help, --version and flag errors itself.
ParsedOptions parseOptions(int argc, char** argv);

}  // namespace rs::sizer
