// The names the plugin goes by. The tests build it a second time under other names
// (tests/nccl_plugin: an inner net plugin to delegate to, which must not delegate in turn).
#pragma once

#ifndef RS_PLUGIN_NAME
#define RS_PLUGIN_NAME "ReductionServer"  // the tables' name, which NCCL logs
#endif
#ifndef RS_PLUGIN_LIBRARY
#define RS_PLUGIN_LIBRARY "libnccl-net-reduction-server"  // in the version line
#endif
#ifndef RS_PLUGIN_INNER_NET_VARIABLE
#define RS_PLUGIN_INNER_NET_VARIABLE "NCCL_RS_INNER_NET"
#endif
