// Where the reducers are: CLUSTER_SPEC and TF_CONFIG as Vertex AI sets them, or RS_REDUCERS.
// Pure parsing, no I/O beyond reading the environment in reducersFromEnvironment().
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/endpoint.h"
#include "core/common/status.h"

namespace rs::cluster {

// Vertex AI's pools: workerpool0 primary, workerpool1 workers, workerpool2 reducers (or
// parameter servers), workerpool3 evaluators.
inline constexpr std::string_view kReducerPool = "workerpool2";

struct ClusterSpec {
  std::map<std::string, std::vector<Endpoint>> pools;  // "workerpool0" -> replicas, in order
  std::string taskType;     // e.g. "workerpool2"; empty when absent
  int taskIndex = -1;       // -1 when absent
  std::string environment;  // "cloud" on Vertex AI
  std::string trial;

  // workerpool2, empty when the job has no reducer pool.
  const std::vector<Endpoint>& reducers() const;
  bool isReducerTask() const { return taskType == kReducerPool; }
};

// CLUSTER_SPEC: {"cluster": {"workerpool0": ["host:port"], ...}, "environment": "cloud",
// "task": {"type": "workerpool0", "index": 0, "trial": "..."}, "job": {...}}.
Result<ClusterSpec> parseClusterSpec(std::string_view json);

// TF_CONFIG, mapped onto the same pools: chief/master -> workerpool0, worker -> workerpool1,
// ps -> workerpool2, evaluator -> workerpool3.
Result<ClusterSpec> parseTfConfig(std::string_view json);

// RS_REDUCERS: "host:port,host:port,..." (spaces around entries are ignored).
Result<std::vector<Endpoint>> parseReducerList(std::string_view text);

// The reducers from the environment, first found wins: RS_REDUCERS, CLUSTER_SPEC, TF_CONFIG.
// An error names the variable and what is wrong with it; none set is an error too.
Result<std::vector<Endpoint>> reducersFromEnvironment();

}  // namespace rs::cluster
