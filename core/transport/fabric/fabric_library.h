// libfabric as the fabric layer reaches it. Every build but one links it. The portable NCCL
// plugin (RS_FABRIC_DLOPEN) must load in training images that have no libfabric, so it links
// none: fabric_library.cc then defines the six functions the layer imports (proto/FABRIC.md,
// "What the layer imports from libfabric"), each calling the one of the libfabric.so.1 found at
// run time with dlopen, at the symbol version the headers it was compiled against bind. The rest
// of libfabric's API is inline calls through the objects' operation tables and needs nothing.
#pragma once

#include "core/common/status.h"

namespace rs::transport::fabric {

// OK where libfabric can be called: always in a linked build; in the portable plugin, once
// libfabric.so.1 loaded and has all six functions. Otherwise why not, for the one log line that
// declines the fabric (the data then goes over TCP). Loads at the first call; thread-safe.
Status fabricLibraryStatus();

}  // namespace rs::transport::fabric
