// CLUSTER_SPEC, TF_CONFIG and RS_REDUCERS parsing, and the environment lookup order.
#include "core/cluster/cluster_spec.h"

#include <cstdlib>
#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include "tests/support/require_invalid.h"

using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using namespace rs::cluster;
using rs::Endpoint;
using rs::test::requireInvalid;

namespace {

Endpoint ep(std::string host, uint16_t port) { return Endpoint{std::move(host), port}; }

// A CLUSTER_SPEC as Vertex AI sets it for a job with a reducer pool: "job" is a string that
// holds JSON.
const char* kVertexSpec = R"({
  "cluster": {
    "workerpool0": ["cmle-training-workerpool0-ab123cd4e5-0:2222"],
    "workerpool1": ["cmle-training-workerpool1-ab123cd4e5-0:2222",
                    "cmle-training-workerpool1-ab123cd4e5-1:2222"],
    "workerpool2": ["cmle-training-workerpool2-ab123cd4e5-0:2222",
                    "cmle-training-workerpool2-ab123cd4e5-1:2222"]
  },
  "environment": "cloud",
  "task": {"type": "workerpool2", "index": 1, "trial": ""},
  "job": "{\"python_module\":\"trainer.task\",\"package_uris\":[\"gs://b/t.tar.gz\"],\"worker_pool_specs\":[{}]}"
})";

// Saves CLUSTER_SPEC, TF_CONFIG and RS_REDUCERS, clears them, and restores them at the end.
class EnvGuard {
 public:
  EnvGuard() {
    for (size_t i = 0; i < kNames.size(); ++i) {
      if (const char* v = std::getenv(kNames[i])) saved_[i] = v;
      ::unsetenv(kNames[i]);
    }
  }
  ~EnvGuard() {
    for (size_t i = 0; i < kNames.size(); ++i) {
      if (saved_[i]) {
        ::setenv(kNames[i], saved_[i]->c_str(), 1);
      } else {
        ::unsetenv(kNames[i]);
      }
    }
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

  static void set(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

 private:
  static constexpr std::array<const char*, 3> kNames = {"RS_REDUCERS", "CLUSTER_SPEC", "TF_CONFIG"};
  std::array<std::optional<std::string>, 3> saved_;
};

}  // namespace

// --- CLUSTER_SPEC ----------------------------------------------------------------------

TEST_CASE("cluster spec: a Vertex AI CLUSTER_SPEC with a reducer pool") {
  auto r = parseClusterSpec(kVertexSpec);
  INFO(r.status().toString());
  REQUIRE(r.isOk());
  const ClusterSpec& s = *r;
  REQUIRE(s.pools.size() == 3);
  REQUIRE(s.pools.at("workerpool0") ==
          std::vector<Endpoint>{ep("cmle-training-workerpool0-ab123cd4e5-0", 2222)});
  REQUIRE(s.pools.at("workerpool1").size() == 2);
  REQUIRE(s.pools.at("workerpool1")[1] == ep("cmle-training-workerpool1-ab123cd4e5-1", 2222));
  REQUIRE(s.reducers() == std::vector<Endpoint>{ep("cmle-training-workerpool2-ab123cd4e5-0", 2222),
                                                ep("cmle-training-workerpool2-ab123cd4e5-1", 2222)});
  REQUIRE(s.taskType == "workerpool2");
  REQUIRE(s.taskIndex == 1);
  REQUIRE(s.isReducerTask());
  REQUIRE(s.environment == "cloud");
  REQUIRE(s.trial.empty());
}

TEST_CASE("cluster spec: job may be an object, a string or absent") {
  for (const char* job : {R"("job": {"python_module": "trainer.task", "args": [1, 2]},)",
                          R"("job": "{\"a\": 1}",)", R"("job": "not json at all",)", ""}) {
    std::string spec = std::string(R"({"cluster": {"workerpool0": ["h-0:2222"]}, )") + job +
                       R"( "task": {"type": "workerpool0", "index": 0, "trial": "7"}})";
    INFO(spec);
    auto r = parseClusterSpec(spec);
    INFO(r.status().toString());
    REQUIRE(r.isOk());
    REQUIRE(r->taskType == "workerpool0");
    REQUIRE_FALSE(r->isReducerTask());
    REQUIRE(r->trial == "7");
    REQUIRE(r->reducers().empty());
  }
}

TEST_CASE("cluster spec: unknown pools are kept, empty pools as {} [] or null") {
  auto r = parseClusterSpec(R"({"cluster": {
      "workerpool0": ["a-0:1"], "workerpool1": {}, "workerpool2": ["r-0:2", "r-1:2"],
      "workerpool3": [], "workerpool7": ["x-0:5"], "custom": null},
      "task": {"type": "workerpool7", "index": 0}})");
  INFO(r.status().toString());
  REQUIRE(r.isOk());
  REQUIRE(r->pools.size() == 6);
  REQUIRE(r->pools.at("workerpool1").empty());
  REQUIRE(r->pools.at("workerpool3").empty());
  REQUIRE(r->pools.at("custom").empty());
  REQUIRE(r->pools.at("workerpool7") == std::vector<Endpoint>{ep("x-0", 5)});
  REQUIRE(r->reducers().size() == 2);
  REQUIRE(r->taskType == "workerpool7");
}

TEST_CASE("cluster spec: missing task, environment and trial take their defaults") {
  auto r = parseClusterSpec(R"({"cluster": {"workerpool0": ["a:1"]}})");
  REQUIRE(r.isOk());
  REQUIRE(r->taskType.empty());
  REQUIRE(r->taskIndex == -1);
  REQUIRE(r->environment.empty());
  REQUIRE(r->trial.empty());
  REQUIRE(r->reducers().empty());
  auto n = parseClusterSpec(R"({"cluster": {}, "task": {"type": null, "index": null}})");
  REQUIRE(n.isOk());
  REQUIRE(n->taskIndex == -1);
}

TEST_CASE("cluster spec: not JSON names the byte") {
  auto r = parseClusterSpec(R"({"cluster": {"workerpool0": ["a:1"],}})");
  requireInvalid(r, "CLUSTER_SPEC: not valid JSON at byte 36: ");
  REQUIRE_THAT(r.status().message(), Contains("unexpected '}'"));
  REQUIRE_THAT(r.status().message(), !Contains("json.exception"));
  requireInvalid(parseClusterSpec("{\"cluster\": "), "CLUSTER_SPEC: not valid JSON at byte");
  requireInvalid(parseClusterSpec("cluster=a:1"), "CLUSTER_SPEC: not valid JSON at byte 0");
  requireInvalid(parseClusterSpec(R"({"cluster": {"p": ["\xff"]}})"), "not valid JSON");
  requireInvalid(parseClusterSpec(""), "CLUSTER_SPEC is empty");
  requireInvalid(parseClusterSpec("  \n"), "CLUSTER_SPEC is empty");
}

TEST_CASE("cluster spec: deeply nested JSON is refused, not recursed into") {
  const std::string deep(100000, '[');
  requireInvalid(parseClusterSpec("{\"cluster\": " + deep + std::string(100000, ']') + "}"),
                 "CLUSTER_SPEC: JSON nested deeper than 128 levels at byte 139");
  requireInvalid(parseTfConfig("{\"job\": " + deep), "TF_CONFIG: JSON nested deeper than 128");
  // Brackets inside strings do not count.
  std::string inString = R"({"cluster": {"workerpool0": ["a:1"]}, "job": ")" + deep + R"("})";
  REQUIRE(parseClusterSpec(inString).isOk());
  std::string escaped = R"({"cluster": {}, "job": "\")" + deep + R"("})";
  REQUIRE(parseClusterSpec(escaped).isOk());
  // 128 levels are fine.
  std::string ok = R"({"cluster": {}, "job": )" + std::string(127, '[') + std::string(127, ']') + "}";
  REQUIRE(parseClusterSpec(ok).isOk());
}

TEST_CASE("cluster spec: wrong shapes say where") {
  struct Case {
    const char* json;
    const char* fragment;
  };
  const Case cases[] = {
      {R"(["a:1"])", "CLUSTER_SPEC: expected a JSON object, got an array [\"a:1\"]"},
      {R"("x")", "CLUSTER_SPEC: expected a JSON object, got \"x\""},
      {R"({"task": {"type": "workerpool0", "index": 0}})", "CLUSTER_SPEC: has no \"cluster\""},
      {R"({"cluster": null})", "has no \"cluster\""},
      {R"({"cluster": ["a:1"]})", "CLUSTER_SPEC: cluster must be an object of pools, got an array"},
      {R"({"cluster": {"workerpool2": "r-0:2222"}})",
       "CLUSTER_SPEC: cluster.workerpool2 must be a list of \"host:port\" strings, got \"r-0:2222\""},
      {R"({"cluster": {"workerpool2": {"0": "r-0:2222"}}})",
       "cluster.workerpool2 must be a list of \"host:port\" strings, got an object"},
      {R"({"cluster": {"workerpool2": ["r-0:1", 2222]}})",
       "CLUSTER_SPEC: cluster.workerpool2[1] must be a \"host:port\" string, got 2222"},
      {R"({"cluster": {"workerpool2": ["r-0:1", "host"]}})",
       "CLUSTER_SPEC: cluster.workerpool2[1]: \"host\" has no port (expected host:port)"},
      {R"({"cluster": {"workerpool1": ["w:1", "w:99999"]}})",
       "CLUSTER_SPEC: cluster.workerpool1[1]: \"w:99999\" has port 99999 (expected 1..65535)"},
      {R"({"cluster": {"workerpool2": ["r-0:1", "r-1:1", "r-0:1"]}})",
       "CLUSTER_SPEC: cluster.workerpool2[2]: \"r-0:1\" repeats cluster.workerpool2[0]"},
      {R"({"cluster": {}, "task": "workerpool0"})",
       "CLUSTER_SPEC: task must be an object, got \"workerpool0\""},
      {R"({"cluster": {}, "task": {"type": 2}})", "CLUSTER_SPEC: task.type must be a string, got 2"},
      {R"({"cluster": {}, "task": {"index": "x"}})",
       "CLUSTER_SPEC: task.index must be a non-negative integer, got \"x\""},
      {R"({"cluster": {}, "task": {"index": -1}})", "task.index must be a non-negative integer, got -1"},
      {R"({"cluster": {}, "task": {"index": 1.5}})", "task.index must be a non-negative integer, got 1.5"},
      {R"({"cluster": {}, "task": {"index": 4294967296}})", "got 4294967296"},
      {R"({"cluster": {}, "task": {"index": true}})", "got true"},
      {R"({"cluster": {}, "task": {"trial": [1]}})", "CLUSTER_SPEC: task.trial must be a string"},
      {R"({"cluster": {}, "environment": 3})", "CLUSTER_SPEC: environment must be a string, got 3"},
      {R"({"cluster": {"workerpool1": ["w:1", "w:2"]}, "task": {"type": "workerpool1", "index": 2}})",
       "CLUSTER_SPEC: task.index 2 is out of range: cluster.workerpool1 has 2 entries"},
      {R"({"cluster": {"workerpool2": {}}, "task": {"type": "workerpool2", "index": 0}})",
       "task.index 0 is out of range: cluster.workerpool2 has 0 entries"},
  };
  for (const Case& c : cases) {
    INFO(c.json);
    requireInvalid(parseClusterSpec(c.json), c.fragment);
  }
}

TEST_CASE("cluster spec: a task in a pool the spec does not list is accepted") {
  auto r = parseClusterSpec(R"({"cluster": {"workerpool0": ["a:1"]},
                               "task": {"type": "workerpool3", "index": 4}})");
  REQUIRE(r.isOk());
  REQUIRE(r->taskIndex == 4);
}

// --- TF_CONFIG -------------------------------------------------------------------------

TEST_CASE("cluster spec: TF_CONFIG maps chief, worker, ps and evaluator onto the pools") {
  auto r = parseTfConfig(R"({
    "cluster": {"chief": ["c-0:2222"], "worker": ["w-0:2222", "w-1:2222"],
                "ps": ["p-0:2222", "[::1]:2223"], "evaluator": ["e-0:2222"]},
    "task": {"type": "ps", "index": 1}, "environment": "cloud"})");
  INFO(r.status().toString());
  REQUIRE(r.isOk());
  REQUIRE(r->pools.size() == 4);
  REQUIRE(r->pools.at("workerpool0") == std::vector<Endpoint>{ep("c-0", 2222)});
  REQUIRE(r->pools.at("workerpool1").size() == 2);
  REQUIRE(r->pools.at("workerpool3") == std::vector<Endpoint>{ep("e-0", 2222)});
  REQUIRE(r->reducers() == std::vector<Endpoint>{ep("p-0", 2222), ep("::1", 2223)});
  REQUIRE(r->taskType == "workerpool2");
  REQUIRE(r->isReducerTask());
  REQUIRE(r->taskIndex == 1);
  REQUIRE(r->environment == "cloud");
}

TEST_CASE("cluster spec: TF_CONFIG master is the chief, unknown task types are kept") {
  auto r = parseTfConfig(R"({"cluster": {"master": ["m:1"], "worker": ["w:1"], "sidecar": ["s:1"]},
                             "task": {"type": "worker", "index": 0}})");
  REQUIRE(r.isOk());
  REQUIRE(r->pools.at("workerpool0") == std::vector<Endpoint>{ep("m", 1)});
  REQUIRE(r->pools.at("sidecar") == std::vector<Endpoint>{ep("s", 1)});
  REQUIRE(r->taskType == "workerpool1");
  REQUIRE(r->reducers().empty());
  // TensorFlow's evaluator is usually not listed in the cluster.
  auto e = parseTfConfig(R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "evaluator", "index": 0}})");
  REQUIRE(e.isOk());
  REQUIRE(e->taskType == "workerpool3");
}

TEST_CASE("cluster spec: TF_CONFIG errors use TensorFlow's names") {
  requireInvalid(parseTfConfig(R"({"cluster": {"ps": ["p-0:2222", "p-1"]}})"),
                 "TF_CONFIG: cluster.ps[1]: \"p-1\" has no port (expected host:port)");
  requireInvalid(parseTfConfig(R"({"cluster": {"chief": ["c:1"], "master": ["m:1"]}})"),
                 "TF_CONFIG: cluster.chief and cluster.master both name workerpool0");
  requireInvalid(parseTfConfig(R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": 1}})"),
                 "TF_CONFIG: task.index 1 is out of range: cluster.worker has 1 entries");
  requireInvalid(parseTfConfig("{"), "TF_CONFIG: not valid JSON at byte");
  requireInvalid(parseTfConfig(R"({"cluster": {}, "task": {"index": "0"}})"),
                 "TF_CONFIG: task.index must be a non-negative integer, got \"0\"");
}

// --- RS_REDUCERS -----------------------------------------------------------------------

TEST_CASE("cluster spec: RS_REDUCERS lists") {
  auto r = parseReducerList("r-0:8000,10.0.0.2:8000, [::1]:8001 ,\tr-3.example:9");
  INFO(r.status().toString());
  REQUIRE(r.isOk());
  REQUIRE(*r == std::vector<Endpoint>{ep("r-0", 8000), ep("10.0.0.2", 8000), ep("::1", 8001),
                                      ep("r-3.example", 9)});
  auto one = parseReducerList(" localhost:1 ");
  REQUIRE(one.isOk());
  REQUIRE(*one == std::vector<Endpoint>{ep("localhost", 1)});
  // The same host on another port is another reducer.
  REQUIRE(parseReducerList("h:1,h:2").isOk());
}

TEST_CASE("cluster spec: RS_REDUCERS errors name the entry") {
  requireInvalid(parseReducerList(""), "RS_REDUCERS is empty (expected host:port,host:port,...)");
  requireInvalid(parseReducerList("  "), "RS_REDUCERS is empty");
  requireInvalid(parseReducerList("a:1,b:2,,c:3"), "RS_REDUCERS: entry 3 is empty");
  requireInvalid(parseReducerList("a:1,"), "RS_REDUCERS: entry 2 is empty");
  requireInvalid(parseReducerList(",a:1"), "RS_REDUCERS: entry 1 is empty");
  requireInvalid(parseReducerList(","), "RS_REDUCERS: entry 1 is empty");
  requireInvalid(parseReducerList("a:1, ,b:2"), "RS_REDUCERS: entry 2 is empty");
  requireInvalid(parseReducerList("a:1,b"), "RS_REDUCERS: entry 2: \"b\" has no port (expected host:port)");
  requireInvalid(parseReducerList("a:1;b:2"), "RS_REDUCERS: entry 1: \"a:1;b:2\" has more than one ':'");
  requireInvalid(parseReducerList("a:1 b:2"), "RS_REDUCERS: entry 1: \"a:1 b:2\" has more than one ':'");
  requireInvalid(parseReducerList("a:1,::1:80"), "RS_REDUCERS: entry 2: \"::1:80\" has more than one ':'");
  requireInvalid(parseReducerList("a:1,b:2,a:1"), "RS_REDUCERS: entry 3 \"a:1\" repeats entry 1");
  requireInvalid(parseReducerList("a:0"), "RS_REDUCERS: entry 1: \"a:0\" has port 0");
}

// --- reducersFromEnvironment -----------------------------------------------------------

TEST_CASE("cluster spec: environment with nothing set is an error") {
  EnvGuard env;
  auto r = reducersFromEnvironment();
  requireInvalid(r, "no reducers configured");
  REQUIRE_THAT(r.status().message(), Contains("RS_REDUCERS"));
}

TEST_CASE("cluster spec: environment RS_REDUCERS wins over CLUSTER_SPEC and TF_CONFIG") {
  EnvGuard env;
  EnvGuard::set("RS_REDUCERS", "a:1,b:2");
  EnvGuard::set("CLUSTER_SPEC", kVertexSpec);
  EnvGuard::set("TF_CONFIG", R"({"cluster": {"ps": ["p:1"]}})");
  auto r = reducersFromEnvironment();
  REQUIRE(r.isOk());
  REQUIRE(*r == std::vector<Endpoint>{ep("a", 1), ep("b", 2)});
}

TEST_CASE("cluster spec: environment CLUSTER_SPEC wins over TF_CONFIG") {
  EnvGuard env;
  EnvGuard::set("CLUSTER_SPEC", kVertexSpec);
  EnvGuard::set("TF_CONFIG", R"({"cluster": {"ps": ["p:1"]}})");
  auto r = reducersFromEnvironment();
  REQUIRE(r.isOk());
  REQUIRE(r->size() == 2);
  REQUIRE((*r)[0] == ep("cmle-training-workerpool2-ab123cd4e5-0", 2222));
}

TEST_CASE("cluster spec: environment TF_CONFIG alone gives the ps pool") {
  EnvGuard env;
  EnvGuard::set("TF_CONFIG", R"({"cluster": {"worker": ["w:1"], "ps": ["p-0:2222", "p-1:2222"]},
                                 "task": {"type": "worker", "index": 0}})");
  auto r = reducersFromEnvironment();
  REQUIRE(r.isOk());
  REQUIRE(*r == std::vector<Endpoint>{ep("p-0", 2222), ep("p-1", 2222)});
}

TEST_CASE("cluster spec: environment set but invalid is an error, never a fall-through") {
  EnvGuard env;
  EnvGuard::set("CLUSTER_SPEC", kVertexSpec);  // valid, and must not be used
  EnvGuard::set("RS_REDUCERS", "a:1,,b:2");
  requireInvalid(reducersFromEnvironment(), "RS_REDUCERS: entry 2 is empty");
  EnvGuard::set("RS_REDUCERS", "");
  requireInvalid(reducersFromEnvironment(), "RS_REDUCERS is set but empty");
  ::unsetenv("RS_REDUCERS");

  EnvGuard::set("TF_CONFIG", R"({"cluster": {"ps": ["p:1"]}})");  // valid, and must not be used
  EnvGuard::set("CLUSTER_SPEC", "{not json");
  requireInvalid(reducersFromEnvironment(), "CLUSTER_SPEC: not valid JSON at byte 2: ");
  EnvGuard::set("CLUSTER_SPEC", "");
  requireInvalid(reducersFromEnvironment(), "CLUSTER_SPEC is empty");
  ::unsetenv("CLUSTER_SPEC");

  EnvGuard::set("TF_CONFIG", R"({"cluster": {"ps": ["p"]}})");
  requireInvalid(reducersFromEnvironment(), "TF_CONFIG: cluster.ps[0]: \"p\" has no port");
}

TEST_CASE("cluster spec: environment spec without a reducer pool names the variable") {
  EnvGuard env;
  EnvGuard::set("CLUSTER_SPEC", R"({"cluster": {"workerpool0": ["a:1"], "workerpool1": ["b:1"]},
                                    "task": {"type": "workerpool0", "index": 0}})");
  requireInvalid(reducersFromEnvironment(), "CLUSTER_SPEC has no workerpool2 (the reducer pool)");
  EnvGuard::set("CLUSTER_SPEC", R"({"cluster": {"workerpool0": ["a:1"], "workerpool1": {},
                                    "workerpool2": {}}})");
  requireInvalid(reducersFromEnvironment(),
                 "CLUSTER_SPEC: cluster.workerpool2 (the reducer pool) is empty");
  ::unsetenv("CLUSTER_SPEC");
  EnvGuard::set("TF_CONFIG", R"({"cluster": {"chief": ["c:1"], "worker": ["w:1"]}})");
  requireInvalid(reducersFromEnvironment(), "TF_CONFIG has no ps (the reducer pool)");
  EnvGuard::set("TF_CONFIG", R"({"cluster": {"worker": ["w:1"], "ps": []}})");
  requireInvalid(reducersFromEnvironment(), "TF_CONFIG: cluster.ps (the reducer pool) is empty");
}
