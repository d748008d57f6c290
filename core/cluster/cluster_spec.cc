#include "core/cluster/cluster_spec.h"

#include <climits>
#include <exception>
#include <nlohmann/json.hpp>

#include "core/common/env.h"
#include "core/common/text.h"

namespace rs::cluster {
namespace {

using Json = nlohmann::json;

// A JSON value as it appeared, for "got ..." in error messages.
std::string describe(const Json& v) {
  constexpr size_t kMaxShown = 80;
  std::string text = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > kMaxShown) text = text.substr(0, kMaxShown) + "...";
  if (v.is_object()) return "an object " + text;
  if (v.is_array()) return "an array " + text;
  return text;
}

std::string str(std::string_view s) { return std::string(s); }

// TF_CONFIG's task names and the Vertex AI pools they correspond to.
std::string tfPoolName(const std::string& tfName) {
  if (tfName == "chief" || tfName == "master") return "workerpool0";
  if (tfName == "worker") return "workerpool1";
  if (tfName == "ps") return "workerpool2";
  if (tfName == "evaluator") return "workerpool3";
  return tfName;  // kept as it is, like an unknown Vertex pool
}

// The error text nlohmann puts after its "[json.exception...] parse error at ...: " preamble.
std::string parseErrorReason(const char* what) {
  std::string_view w = what;
  size_t column = w.find("column ");
  size_t colon = w.find(": ", column == std::string_view::npos ? 0 : column);
  return colon == std::string_view::npos ? str(w) : str(w.substr(colon + 2));
}

// nlohmann parses iteratively but dumps (for "got ..." in messages) recursively, so a value
// nested thousands deep could exhaust the stack. Real specs nest a few levels.
constexpr int kMaxJsonDepth = 128;

Status checkNesting(std::string_view text, std::string_view var) {
  int depth = 0;
  bool inString = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        inString = false;
      }
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return invalidArgument(str(var) + ": JSON nested deeper than " +
                               std::to_string(kMaxJsonDepth) + " levels at byte " +
                               std::to_string(i));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return Status::ok();
}

Status parseJson(std::string_view text, std::string_view var, Json* out) {
  if (trim(text).empty()) return invalidArgument(str(var) + " is empty (expected a JSON object)");
  RS_RETURN_IF_ERROR(checkNesting(text, var));
  try {
    *out = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    const size_t offset = e.byte > 0 ? e.byte - 1 : 0;  // nlohmann counts bytes read, from 1
    return invalidArgument(str(var) + ": not valid JSON at byte " + std::to_string(offset) +
                           ": " + parseErrorReason(e.what()));
  } catch (const std::exception& e) {
    return invalidArgument(str(var) + ": not valid JSON: " + e.what());
  }
  return Status::ok();
}

// `prefix` is "VAR: ", `path` the pool's place, "cluster.workerpool2".
Status parsePool(const Json& value, const std::string& prefix, const std::string& path,
                 std::vector<Endpoint>* out) {
  const std::string where = prefix + path;
  // Vertex AI keeps the positions of unused pools with {}; treat that, [] and null as empty.
  if (value.is_null() || (value.is_object() && value.empty())) return Status::ok();
  if (!value.is_array()) {
    return invalidArgument(where + " must be a list of \"host:port\" strings, got " +
                           describe(value));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string entryWhere = where + "[" + std::to_string(i) + "]";
    const Json& entry = value[i];
    if (!entry.is_string()) {
      return invalidArgument(entryWhere + " must be a \"host:port\" string, got " +
                             describe(entry));
    }
    auto endpoint = parseEndpoint(entry.get_ref<const std::string&>(), entryWhere);
    if (!endpoint) return endpoint.status();
    for (size_t j = 0; j < out->size(); ++j) {
      if ((*out)[j] == *endpoint) {
        return invalidArgument(entryWhere + ": " + quoteText(endpoint->toString()) + " repeats " +
                               path + "[" + std::to_string(j) + "]");
      }
    }
    out->push_back(std::move(*endpoint));
  }
  return Status::ok();
}

Status parseTask(const Json& task, std::string_view var, bool tfNames, ClusterSpec* spec) {
  const std::string where = str(var) + ": task";
  if (task.is_null()) return Status::ok();
  if (!task.is_object()) return invalidArgument(where + " must be an object, got " + describe(task));

  if (auto it = task.find("type"); it != task.end() && !it->is_null()) {
    if (!it->is_string()) {
      return invalidArgument(where + ".type must be a string, got " + describe(*it));
    }
    const auto& type = it->get_ref<const std::string&>();
    spec->taskType = tfNames ? tfPoolName(type) : type;
  }
  if (auto it = task.find("index"); it != task.end() && !it->is_null()) {
    const bool ok = (it->is_number_unsigned() && it->get<uint64_t>() <= INT_MAX) ||
                    (it->is_number_integer() && it->get<int64_t>() >= 0 &&
                     it->get<int64_t>() <= INT_MAX);
    if (!ok) {
      return invalidArgument(where + ".index must be a non-negative integer, got " +
                             describe(*it));
    }
    spec->taskIndex = static_cast<int>(it->get<int64_t>());
  }
  if (auto it = task.find("trial"); it != task.end() && !it->is_null()) {
    if (it->is_string()) {
      spec->trial = it->get<std::string>();
    } else if (it->is_number_integer()) {
      spec->trial = it->dump();
    } else {
      return invalidArgument(where + ".trial must be a string, got " + describe(*it));
    }
  }
  return Status::ok();
}

// CLUSTER_SPEC and TF_CONFIG share their shape; TF_CONFIG's pool and task names are mapped.
Result<ClusterSpec> parseSpec(std::string_view text, std::string_view var, bool tfNames) {
  Json root;
  RS_RETURN_IF_ERROR(parseJson(text, var, &root));
  const std::string prefix = str(var) + ": ";
  if (!root.is_object()) return invalidArgument(prefix + "expected a JSON object, got " + describe(root));

  ClusterSpec spec;
  auto cluster = root.find("cluster");
  if (cluster == root.end() || cluster->is_null()) {
    return invalidArgument(prefix + "has no \"cluster\" (expected {\"cluster\": {\"<pool>\": "
                                    "[\"host:port\", ...]}, ...})");
  }
  if (!cluster->is_object()) {
    return invalidArgument(prefix + "cluster must be an object of pools, got " +
                           describe(*cluster));
  }
  // Pools this spec names by another key, for the TF_CONFIG chief/master clash.
  std::map<std::string, std::string> sourceKey;
  for (const auto& [key, value] : cluster->items()) {
    const std::string pool = tfNames ? tfPoolName(key) : key;
    if (auto seen = sourceKey.find(pool); seen != sourceKey.end()) {
      return invalidArgument(prefix + "cluster." + seen->second + " and cluster." + key +
                             " both name " + pool);
    }
    sourceKey[pool] = key;
    std::vector<Endpoint> endpoints;
    RS_RETURN_IF_ERROR(parsePool(value, prefix, "cluster." + key, &endpoints));
    spec.pools[pool] = std::move(endpoints);
  }

  if (auto task = root.find("task"); task != root.end()) {
    RS_RETURN_IF_ERROR(parseTask(*task, var, tfNames, &spec));
  }
  if (auto env = root.find("environment"); env != root.end() && !env->is_null()) {
    if (!env->is_string()) {
      return invalidArgument(prefix + "environment must be a string, got " + describe(*env));
    }
    spec.environment = env->get<std::string>();
  }
  // "job" (a JSON string on Vertex AI, sometimes an object) is not ours to read: ignored.

  // A task that names a listed pool must be one of its members.
  if (auto pool = spec.pools.find(spec.taskType);
      pool != spec.pools.end() && spec.taskIndex >= 0 &&
      static_cast<size_t>(spec.taskIndex) >= pool->second.size()) {
    return invalidArgument(prefix + "task.index " + std::to_string(spec.taskIndex) +
                           " is out of range: cluster." + sourceKey[pool->first] + " has " +
                           std::to_string(pool->second.size()) + " entries");
  }
  return spec;
}

Result<std::vector<Endpoint>> reducerPool(Result<ClusterSpec> spec, std::string_view var,
                                          std::string_view poolKey) {
  if (!spec) return spec.status();
  auto it = spec->pools.find(str(kReducerPool));
  if (it == spec->pools.end()) {
    return invalidArgument(str(var) + " has no " + str(poolKey) + " (the reducer pool)");
  }
  if (it->second.empty()) {
    return invalidArgument(str(var) + ": cluster." + str(poolKey) +
                           " (the reducer pool) is empty");
  }
  return std::move(it->second);
}

}  // namespace

const std::vector<Endpoint>& ClusterSpec::reducers() const {
  static const std::vector<Endpoint> kNone;
  auto it = pools.find(std::string(kReducerPool));
  return it == pools.end() ? kNone : it->second;
}

Result<ClusterSpec> parseClusterSpec(std::string_view json) {
  return parseSpec(json, "CLUSTER_SPEC", /*tfNames=*/false);
}

Result<ClusterSpec> parseTfConfig(std::string_view json) {
  return parseSpec(json, "TF_CONFIG", /*tfNames=*/true);
}

Result<std::vector<Endpoint>> parseReducerList(std::string_view text) {
  if (trim(text).empty()) {
    return invalidArgument("RS_REDUCERS is empty (expected host:port,host:port,...)");
  }
  std::vector<std::string_view> entries = split(text, ',');
  for (std::string_view& entry : entries) entry = trim(entry);
  std::vector<Endpoint> out;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string what = "RS_REDUCERS: entry " + std::to_string(i + 1);
    if (entries[i].empty()) {
      return invalidArgument(what + " is empty in " + quoteText(text) +
                             " (expected host:port,host:port,...; entries count from 1)");
    }
    auto ep = parseEndpoint(entries[i], what);
    if (!ep) return ep.status();
    for (size_t j = 0; j < out.size(); ++j) {
      if (out[j] == *ep) {
        return invalidArgument(what + " " + quoteText(ep->toString()) + " repeats entry " +
                               std::to_string(j + 1));
      }
    }
    out.push_back(std::move(*ep));
  }
  return out;
}

Result<std::vector<Endpoint>> reducersFromEnvironment() {
  // First set wins. A set but broken variable is an error rather than a reason to look at the
  // next one: silently using another list would connect workers to the wrong reducers.
  if (const auto list = envRaw("RS_REDUCERS")) {
    if (trim(*list).empty()) {
      return invalidArgument(
          "RS_REDUCERS is set but empty (expected host:port,host:port,...; unset it to use "
          "CLUSTER_SPEC or TF_CONFIG)");
    }
    return parseReducerList(*list);
  }
  if (const auto spec = envRaw("CLUSTER_SPEC")) {
    return reducerPool(parseClusterSpec(*spec), "CLUSTER_SPEC", kReducerPool);
  }
  if (const auto tf = envRaw("TF_CONFIG")) {
    return reducerPool(parseTfConfig(*tf), "TF_CONFIG", "ps");
  }
  return invalidArgument(
      "no reducers configured: RS_REDUCERS, CLUSTER_SPEC and TF_CONFIG are all unset (set "
      "RS_REDUCERS=host:port,host:port,... or run as a Vertex AI job with a reducer pool)");
}

}  // namespace rs::cluster
