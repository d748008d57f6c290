// The spec emitters: deploy/'s files are their output for the documented plans, byte for byte,
// the lists of reducers they write parse with the client's own parser, and a plan that cannot
// be emitted is refused with a message naming what is wrong.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "core/cluster/cluster_spec.h"
#include "sizer/emit/emit.h"
#include "tests/sizer_emit/documented_plans.h"

using namespace rs::sizer;
using rs::sizer::testing::a2HighPoolPlan;
using rs::sizer::testing::a2MegaPlan;

namespace {

std::string readSourceFile(const std::string& relative) {
  std::ifstream in(std::string(RS_SOURCE_DIR) + "/" + relative, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string emitted(std::string_view kind, const EmitPlan& plan) {
  auto text = emitSpec(kind, plan);
  INFO(text.status().message());
  REQUIRE(text.isOk());
  return *text;
}

// The value of the line after `marker` (" value: X" or "RS_REDUCERS=X").
std::string valueAfter(const std::string& text, const std::string& marker, const std::string& prefix) {
  const size_t at = text.find(marker);
  REQUIRE(at != std::string::npos);
  const size_t start = text.find(prefix, at + marker.size());
  REQUIRE(start != std::string::npos);
  const size_t end = text.find('\n', start);
  return text.substr(start + prefix.size(), end - start - prefix.size());
}

size_t countOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::string errorOf(const EmitPlan& plan) {
  auto text = emitVertexYaml(plan);
  REQUIRE_FALSE(text.isOk());
  return text.status().message();
}

}  // namespace

TEST_CASE("emit: deploy/ holds the emitters' output for the documented plans, byte for byte") {
  // 8 x a2-megagpu-16g -> 25 x n1-highcpu-16 for Vertex AI and the JobSet; 5 workers of 100 Gbps
  // -> 16 x n1-highcpu-16 for the standing pool.
  const std::pair<const char*, const char*> files[] = {
      {"vertex-yaml", "deploy/vertex/custom-job.yaml"},   {"vertex-json", "deploy/vertex/custom-job.json"},
      {"gcloud", "deploy/vertex/create-job.sh"},          {"vertex-python", "deploy/vertex/submit_job.py"},
      {"k8s", "deploy/k8s/training-jobset.yaml"},
  };
  for (const auto& [kind, path] : files) {
    INFO(path << " differs from the emitter's " << kind
              << " output: change sizer/emit and write the file from it, not by hand");
    CHECK(emitted(kind, a2MegaPlan()) == readSourceFile(path));
  }
  INFO("deploy/k8s/reducer-pool/reducer-pool.yaml differs from the emitter's k8s-pool output");
  CHECK(emitted("k8s-pool", a2HighPoolPlan()) == readSourceFile("deploy/k8s/reducer-pool/reducer-pool.yaml"));
}

namespace {

// The value of environment variable `name` in a Vertex AI containerSpec, or "" where it has none.
std::string envValue(const nlohmann::json& container, const std::string& name) {
  for (const auto& var : container["env"])
    if (var["name"] == name) return var["value"].get<std::string>();
  return "";
}

// The line after the first line holding `marker`, its indentation and "- " dash removed.
std::string itemAfter(const std::string& text, const std::string& marker) {
  const size_t at = text.find(marker);
  REQUIRE(at != std::string::npos);
  const size_t start = text.find('\n', at) + 1;
  std::string line = text.substr(start, text.find('\n', start) - start);
  line.erase(0, line.find_first_not_of(' '));
  if (line.rfind("- ", 0) == 0) line.erase(0, 2);
  return line;
}

struct PacedCase {
  const char* what;
  EmitPlan plan;
  const char* workerGbps;   // as the files must write them
  const char* reducerGbps;
};

}  // namespace

TEST_CASE("emit: reducers get --link-gbps, workers RS_LINK_GBPS and RS_REDUCER_LINK_GBPS: the "
          "machine types' egress") {
  // The table's figures, written out here so that a change to the table shows up in this test.
  REQUIRE(findMachineType("a2-megagpu-16g")->defaultGbps == 100);
  REQUIRE(findMachineType("n1-highcpu-16")->defaultGbps == 32);
  REQUIRE(findMachineType("g2-standard-48")->defaultGbps == 50);
  REQUIRE(findMachineType("n2-highcpu-32")->defaultGbps == 32);
  REQUIRE(findMachineType("a3-highgpu-8g")->defaultGbps == 200);  // its gVNIC share
  REQUIRE(findMachineType("c3-highcpu-88")->tier1Gbps == 100);

  JobSpec g2;
  g2.workers = 6;
  g2.workerType = "g2-standard-48";
  g2.reducerType = "n2-highcpu-32";
  JobSpec a3Tier1;  // GKE with Tier_1 reducers: the reducers' rate is their Tier_1 egress
  a3Tier1.workers = 4;
  a3Tier1.workerType = "a3-highgpu-8g";
  a3Tier1.reducerType = "c3-highcpu-88";
  a3Tier1.platform = Platform::kGke;
  a3Tier1.tier1 = true;
  const PacedCase cases[] = {
      {"8 x a2-megagpu-16g, n1-highcpu-16 reducers", a2MegaPlan(), "100", "32"},
      {"6 x g2-standard-48, n2-highcpu-32 reducers", rs::sizer::testing::sizedPlan(g2, "g2-job"), "50", "32"},
      {"4 x a3-highgpu-8g, c3-highcpu-88 Tier_1 reducers", rs::sizer::testing::sizedPlan(a3Tier1, "a3-job"),
       "200", "100"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    // Vertex AI: both worker pools carry RS_LINK_GBPS; the reducers' container its args.
    const auto pools = nlohmann::json::parse(emitted("vertex-json", c.plan))["jobSpec"]["workerPoolSpecs"];
    CHECK(envValue(pools[0]["containerSpec"], "RS_LINK_GBPS") == c.workerGbps);
    CHECK(envValue(pools[1]["containerSpec"], "RS_LINK_GBPS") == c.workerGbps);
    CHECK(pools[2]["containerSpec"]["args"] == nlohmann::json::array({"--link-gbps", c.reducerGbps}));
    CHECK(envValue(pools[2]["containerSpec"], "RS_LINK_GBPS").empty());
    // The workers also know the reducers' rate, to send each its 1/W of it and no more.
    CHECK(envValue(pools[0]["containerSpec"], "RS_REDUCER_LINK_GBPS") == c.reducerGbps);
    CHECK(envValue(pools[1]["containerSpec"], "RS_REDUCER_LINK_GBPS") == c.reducerGbps);
    CHECK(envValue(pools[2]["containerSpec"], "RS_REDUCER_LINK_GBPS").empty());
    CHECK(!pools[0]["containerSpec"].contains("args"));  // the training image's own command line
    const std::string yaml = emitted("vertex-yaml", c.plan);
    CHECK(itemAfter(yaml, "- \"--link-gbps\"") == fmt::format("\"{}\"", c.reducerGbps));
    CHECK(countOf(yaml, fmt::format("- name: RS_LINK_GBPS\n          value: \"{}\"\n", c.workerGbps)) == 2);
    CHECK(countOf(yaml, fmt::format("- name: RS_REDUCER_LINK_GBPS\n          value: \"{}\"\n", c.reducerGbps)) ==
          2);
    CHECK(countOf(emitted("vertex-python", c.plan), "\"--link-gbps\",") == 1);

    // Kubernetes: the JobSet's reducers and workers, and the standing pool's reducers.
    const std::string jobSet = emitted("k8s", c.plan);
    CHECK(itemAfter(jobSet, "- \"--link-gbps\"") == fmt::format("\"{}\"", c.reducerGbps));
    CHECK(valueAfter(jobSet, "- name: RS_LINK_GBPS", "value: ") == fmt::format("\"{}\"", c.workerGbps));
    CHECK(countOf(jobSet, "- name: RS_LINK_GBPS\n") == 1);  // the workers only
    CHECK(valueAfter(jobSet, "- name: RS_REDUCER_LINK_GBPS", "value: ") == fmt::format("\"{}\"", c.reducerGbps));
    CHECK(countOf(jobSet, "- name: RS_REDUCER_LINK_GBPS\n") == 1);
    const std::string pool = emitted("k8s-pool", c.plan);
    CHECK(itemAfter(pool, "- \"--link-gbps\"") == fmt::format("\"{}\"", c.reducerGbps));
    CHECK_THAT(pool, Catch::Contains(fmt::format("# RS_LINK_GBPS={} ({}'s egress", c.workerGbps,
                                                 c.plan.workerMachineType)));
    CHECK_THAT(pool, Catch::Contains(fmt::format("# RS_REDUCER_LINK_GBPS={} ({}'s egress", c.reducerGbps,
                                                 c.plan.reducerMachineType)));
  }
}

TEST_CASE("emit: a link rate is written as the shortest number that reads back the same") {
  CHECK(linkGbpsText(32) == "32");
  CHECK(linkGbpsText(100) == "100");
  CHECK(linkGbpsText(23.5) == "23.5");
  CHECK(linkGbpsText(0.1) == "0.1");
  CHECK(linkGbpsText(3200) == "3200");
  CHECK(linkGbpsText(100000) == "100000");
}

TEST_CASE("emit: the Vertex REST body has the three pools of the plan") {
  const auto body = nlohmann::json::parse(emitted("vertex-json", a2MegaPlan()));
  CHECK(body["displayName"] == "rs-train");
  const auto& pools = body["jobSpec"]["workerPoolSpecs"];
  REQUIRE(pools.size() == 3);
  CHECK(pools[0]["replicaCount"] == 1);
  CHECK(pools[1]["replicaCount"] == 7);
  CHECK(pools[2]["replicaCount"] == 25);
  CHECK(pools[1]["machineSpec"]["acceleratorType"] == "NVIDIA_TESLA_A100");
  CHECK(pools[1]["machineSpec"]["acceleratorCount"] == 16);
  CHECK(pools[2]["machineSpec"].size() == 1);  // reducers: a machine type, no GPUs
  CHECK(pools[2]["containerSpec"]["imageUri"] == rs::sizer::testing::kReducerImage);
}

TEST_CASE("emit: CPU workers get no accelerator fields and no GPU limits") {
  EmitPlan plan = a2MegaPlan();
  plan.workerMachineType = "n2-standard-32";
  plan.acceleratorType.clear();
  plan.acceleratorCount = 0;
  const auto body = nlohmann::json::parse(emitted("vertex-json", plan));
  CHECK(body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"].size() == 1);
  const std::string jobSet = emitted("k8s", plan);
  CHECK(jobSet.find("nvidia.com/gpu") == std::string::npos);
  CHECK(jobSet.find("--nproc-per-node=1\"") != std::string::npos);
  CHECK(emitted("vertex-python", plan).find("accelerator_") == std::string::npos);
}

TEST_CASE("emit: the workers' RS_REDUCERS names every reducer and parses as the client parses it") {
  const std::string jobSet = emitted("k8s", a2MegaPlan());
  const std::string list = valueAfter(jobSet, "name: RS_REDUCERS", "value: ");
  auto reducers = rs::cluster::parseReducerList(list);
  INFO(reducers.status().message());
  REQUIRE(reducers.isOk());
  REQUIRE(reducers->size() == 25);
  CHECK(reducers->front().toString() == "rs-train-reducers-0-0.rs-train:2222");
  CHECK(reducers->back().toString() == "rs-train-reducers-0-24.rs-train:2222");

  const std::string pool = emitted("k8s-pool", a2HighPoolPlan());
  auto poolReducers = rs::cluster::parseReducerList(valueAfter(pool, "# Workers", "RS_REDUCERS="));
  REQUIRE(poolReducers.isOk());
  REQUIRE(poolReducers->size() == 16);
  CHECK(poolReducers->back().toString() == "reduction-server-15.reduction-server:2222");
}

TEST_CASE("emit: reducer pods fit the machine type") {
  auto r = reducerResources(a2MegaPlan());  // n1-highcpu-16: 16 vCPUs, 14.4 GB
  REQUIRE(r.isOk());
  CHECK(r->cpu == 14);
  CHECK(r->memoryLimitGib == 8);
  CHECK(r->accumulatorMib == 6144);

  EmitPlan small = a2MegaPlan();
  small.reducerMachineType = "n1-highcpu-2";
  small.reducerVcpus = 2;
  small.reducerMemoryGb = 1.8;
  auto tiny = reducerResources(small);
  REQUIRE(tiny.isOk());
  CHECK(tiny->cpu == 1);
  CHECK(tiny->memoryLimitGib == 1);
  CHECK(tiny->accumulatorMib == 768);
  CHECK(emitted("k8s", small).find("value: \"768MiB\"") != std::string::npos);

  small.reducerMemoryGb = 1.5;  // 0.9 GiB for the container
  CHECK_THAT(emitKubernetesJobSet(small).status().message(), Catch::Contains("under 1 GiB"));
  small.reducerVcpus = 1;
  CHECK_THAT(emitKubernetesReducerPool(small).status().message(), Catch::Contains("at least 2 vCPUs"));
  // Vertex AI runs the daemon on the whole VM: no Kubernetes sizing needed.
  CHECK(emitVertexYaml(small).isOk());
}

TEST_CASE("emit: a plan that cannot be emitted is refused, naming the input") {
  EmitPlan plan = a2MegaPlan();
  plan.jobName = "RS_Train";
  CHECK_THAT(errorOf(plan), Catch::Contains("job name 'RS_Train' is not a DNS-1035 label"));
  plan.jobName = "rs-training-job-with-a-rather-long-name-wxyz";  // 44 characters
  CHECK_THAT(errorOf(plan), Catch::Contains("'rs-training-job-with-a-rather-long-name-wxyz-reducers-0-24-abcde' (64 characters"));

  plan = a2MegaPlan();
  plan.workers = 1;
  CHECK_THAT(errorOf(plan), Catch::Contains("1 worker(s): a reduction server needs at least 2 workers"));
  plan = a2MegaPlan();
  plan.reducers = 0;
  CHECK_THAT(errorOf(plan), Catch::Contains("0 reducers"));
  plan = a2MegaPlan();
  plan.acceleratorCount = 0;
  CHECK_THAT(errorOf(plan), Catch::Contains("accelerator type 'NVIDIA_TESLA_A100' with count 0"));
  plan = a2MegaPlan();
  plan.acceleratorType = "nvidia-tesla-a100";
  CHECK_THAT(errorOf(plan), Catch::Contains("'nvidia-tesla-a100' is not a Vertex AI AcceleratorType"));
  plan = a2MegaPlan();
  plan.reducerMachineType = "N1 highcpu";
  CHECK_THAT(errorOf(plan), Catch::Contains("reducer machine type 'N1 highcpu'"));
  plan = a2MegaPlan();
  plan.reducerImage = "my image";
  CHECK_THAT(errorOf(plan), Catch::Contains("reducer image 'my image'"));
  plan = a2MegaPlan();
  plan.metricsPort = 2223;
  CHECK_THAT(errorOf(plan), Catch::Contains("metrics 2223"));
  // The pacing rates: none (a plan not made by makePlan), not a number, beyond the daemon's range.
  plan = a2MegaPlan();
  plan.workerLinkGbps = 0;
  CHECK_THAT(errorOf(plan), Catch::Contains("worker link rate (RS_LINK_GBPS) 0 Gbit/s: need a finite rate above 0"));
  plan = a2MegaPlan();
  plan.reducerLinkGbps = 0;
  CHECK_THAT(errorOf(plan), Catch::Contains("reducer link rate (--link-gbps) 0 Gbit/s"));
  CHECK_THAT(emitKubernetesReducerPool(plan).status().message(), Catch::Contains("reducer link rate"));
  plan.reducerLinkGbps = std::numeric_limits<double>::quiet_NaN();
  CHECK_THAT(errorOf(plan), Catch::Contains("reducer link rate (--link-gbps) nan Gbit/s"));
  plan.reducerLinkGbps = std::numeric_limits<double>::infinity();
  CHECK_THAT(errorOf(plan), Catch::Contains("reducer link rate (--link-gbps) inf Gbit/s"));
  plan = a2MegaPlan();
  plan.workerLinkGbps = -100;
  CHECK_THAT(errorOf(plan), Catch::Contains("worker link rate (RS_LINK_GBPS) -100 Gbit/s"));
  plan.workerLinkGbps = 200000;
  CHECK_THAT(errorOf(plan), Catch::Contains("at most 100000"));
  EmitPlan unsized = a2MegaPlan();
  unsized.workerLinkGbps = unsized.reducerLinkGbps = 0;
  for (std::string_view kind : kEmitKinds) CHECK_FALSE(emitSpec(kind, unsized).isOk());
  plan = a2MegaPlan();
  plan.region = "US Central";
  CHECK_THAT(errorOf(plan), Catch::Contains("region 'US Central'"));

  CHECK_THAT(emitSpec("helm", a2MegaPlan()).status().message(),
             Catch::Contains("--emit 'helm' is not one of vertex-yaml, vertex-json, gcloud"));
}

namespace {

// The longest run of hexadecimal digits: a secret value would be one of 32 or more.
size_t longestHexRun(const std::string& text) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = std::isxdigit(static_cast<unsigned char>(c)) ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

}  // namespace

TEST_CASE("emit: every Kubernetes pod reads the job secret from a read-only Secret mount") {
  const std::string jobSet = emitted("k8s", a2MegaPlan());
  CHECK(kubernetesJobSecretName(a2MegaPlan()) == "rs-train-rs-secret");
  // Reducers and workers: the same Secret, mounted read-only, named by RS_SECRET_FILE.
  CHECK(countOf(jobSet, "secretName: rs-train-rs-secret\n") == 2);
  CHECK(countOf(jobSet, "- name: rs-secret\n") == 4);  // two volumes, two mounts
  CHECK(countOf(jobSet, "mountPath: /var/run/secrets/reduction-server\n") == 2);
  CHECK(countOf(jobSet, "readOnly: true\n") == 2);
  CHECK(countOf(jobSet, "- name: RS_SECRET_FILE\n") == 2);
  CHECK(countOf(jobSet, "value: /var/run/secrets/reduction-server/secret\n") == 2);
  CHECK(countOf(jobSet, "defaultMode: 288\n") == 1);  // 0440, the reducer reads it as fsGroup 10001
  CHECK(countOf(jobSet, "fsGroup: 10001\n") == 1);
  CHECK_THAT(jobSet, Catch::Contains(
                         "# kubectl create secret generic rs-train-rs-secret --from-literal=secret=$(openssl rand -hex 32)"));

  const std::string pool = emitted("k8s-pool", a2HighPoolPlan());
  CHECK(countOf(pool, "secretName: reduction-server-pool-secret\n") == 1);
  CHECK(countOf(pool, "- name: RS_SECRET_FILE\n") == 1);
  CHECK_THAT(pool, Catch::Contains("kubectl create secret generic reduction-server-pool-secret"));
  CHECK_THAT(pool, Catch::Contains("reduction-server --derive-job-secret JOB"));
  CHECK(pool.find("RS_SECRET\n") == std::string::npos);
}

TEST_CASE("emit: Vertex AI files hold no secret, their submit scripts make a fresh one per job") {
  const EmitPlan plan = a2MegaPlan();
  // The specs are kept and resubmitted: no secret in them.
  CHECK(emitted("vertex-yaml", plan).find("name: RS_SECRET") == std::string::npos);
  CHECK(emitted("vertex-json", plan).find("RS_SECRET") == std::string::npos);
  // The gcloud script draws 32 random bytes and hands them to awk through the environment.
  const std::string script = emitted("gcloud", plan);
  CHECK_THAT(script, Catch::Contains("RS_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \\n') awk"));
  CHECK_THAT(script, Catch::Contains("ENVIRON[\"RS_SECRET\"]"));
  CHECK_THAT(script, Catch::Contains("--config=\"$job\""));
  CHECK(script.find("exec gcloud") == std::string::npos);  // the trap removes the secret's file
  // The SDK script: all three pools through CustomJob, the secret from secrets.token_hex.
  const std::string python = emitted("vertex-python", plan);
  CHECK_THAT(python, Catch::Contains("secret = secrets.token_hex(32)"));
  CHECK_THAT(python, Catch::Contains("worker_pool_specs=with_secret(WORKER_POOL_SPECS, secret)"));
  CHECK(countOf(python, "\"container_spec\": {") == 3);
  CHECK(python.find("reduction_server_replica_count") == std::string::npos);
}

TEST_CASE("emit: no emitted file holds anything like a secret value") {
  for (std::string_view kind : kEmitKinds) {
    const EmitPlan plan = kind == "k8s-pool" ? a2HighPoolPlan() : a2MegaPlan();
    INFO(kind);
    CHECK(longestHexRun(emitted(kind, plan)) < 32);
  }
}

namespace {

// 8 x a2-megagpu-16g with 2 spares: 25 reducers for the bounds, 27 launched.
EmitPlan sparePlan(rs::sizer::ReducerCapacity capacity, Platform platform) {
  JobSpec spec;
  spec.workers = 8;
  spec.workerType = "a2-megagpu-16g";
  spec.spares = 2;
  spec.platform = platform;
  spec.reducerCapacity = capacity;
  return rs::sizer::testing::sizedPlan(spec, "rs-train");
}

}  // namespace

TEST_CASE("emit: spares make every file's pool larger, and its header says how many") {
  const EmitPlan plan = sparePlan(ReducerCapacity::kStandard, Platform::kVertex);
  REQUIRE(plan.reducers == 27);
  REQUIRE(plan.spareReducers == 2);
  const auto pools = nlohmann::json::parse(emitted("vertex-json", plan))["jobSpec"]["workerPoolSpecs"];
  CHECK(pools[2]["replicaCount"] == 27);
  CHECK(pools[1]["replicaCount"] == 7);  // the workers are what they were
  const std::string header =
      "#   reducers: 27 x n1-highcpu-16, paced to 32 Gbit/s (--link-gbps; the workers' RS_REDUCER_LINK_GBPS)\n"
      "#             (25 for the bounds and 2 spares)\n";
  for (std::string_view kind : {"vertex-yaml", "gcloud", "vertex-python", "k8s", "k8s-pool"}) {
    INFO(kind);
    CHECK_THAT(emitted(kind, plan), Catch::Contains(std::string(header)));
  }
  const std::string jobSet = emitted("k8s", plan);
  CHECK(countOf(jobSet, "parallelism: 27\n") == 1);
  CHECK(countOf(jobSet, "completions: 27\n") == 1);
  auto reducers = rs::cluster::parseReducerList(valueAfter(jobSet, "name: RS_REDUCERS", "value: "));
  REQUIRE(reducers.isOk());
  CHECK(reducers->size() == 27);
  const std::string pool = emitted("k8s-pool", plan);
  CHECK(countOf(pool, "replicas: 27\n") == 1);
  auto poolReducers = rs::cluster::parseReducerList(valueAfter(pool, "# Workers", "RS_REDUCERS="));
  REQUIRE(poolReducers.isOk());
  CHECK(poolReducers->size() == 27);
  // Without spares the header is what it always was.
  CHECK_THAT(emitted("k8s", a2MegaPlan()),
             Catch::Contains("#   reducers: 25 x n1-highcpu-16, paced to 32 Gbit/s (--link-gbps; the workers' "
                             "RS_REDUCER_LINK_GBPS)\n# Change the plan"));
}

TEST_CASE("emit: Spot reducers select GKE's Spot nodes and tolerate their taint, workers do not") {
  const EmitPlan plan = sparePlan(ReducerCapacity::kSpot, Platform::kGke);
  REQUIRE(plan.spotReducers);
  for (std::string_view kind : {"k8s", "k8s-pool"}) {
    INFO(kind);
    const std::string text = emitted(kind, plan);
    CHECK(countOf(text, "cloud.google.com/gke-spot: \"true\"\n") == 1);
    CHECK(countOf(text, "tolerations:\n") == 1);
    CHECK(countOf(text, "- key: cloud.google.com/gke-spot\n") == 1);
    CHECK(itemAfter(text, "- key: cloud.google.com/gke-spot") == "operator: Equal");
    CHECK(itemAfter(text, "operator: Equal") == "value: \"true\"");
    CHECK(itemAfter(text, "value: \"true\"\n") == "effect: NoSchedule");
    CHECK_THAT(text, Catch::Contains("#   reducers: 27 x n1-highcpu-16, paced to 32 Gbit/s (--link-gbps; the workers' "
                                     "RS_REDUCER_LINK_GBPS)\n#             (25 for the bounds and 2 spares, on GKE Spot VMs)\n"));
    CHECK_THAT(text, Catch::Contains("# gcloud container node-pools create reducers-spot --cluster=CLUSTER "
                                     "--machine-type=n1-highcpu-16 --spot \\\n"
                                     "#     --num-nodes=27 --node-taints=cloud.google.com/gke-spot=true:NoSchedule\n"));
  }
  // In the JobSet only the reducers' pods go to Spot nodes: the GPU workers stay where they were.
  const std::string jobSet = emitted("k8s", plan);
  CHECK(jobSet.find("gke-spot") < jobSet.find("- name: workers"));
  CHECK(jobSet.rfind("gke-spot") < jobSet.find("- name: workers"));
  // Standard reducers carry none of it.
  const EmitPlan standard = sparePlan(ReducerCapacity::kStandard, Platform::kGke);
  for (std::string_view kind : kEmitKinds) {
    INFO(kind);
    const std::string text = emitted(kind, standard);
    CHECK(text.find("gke-spot") == std::string::npos);
    CHECK(text.find("tolerations") == std::string::npos);
  }
}

TEST_CASE("emit: Vertex AI files refuse Spot reducers and say Spot is set for the whole job") {
  const EmitPlan spot = sparePlan(ReducerCapacity::kSpot, Platform::kGke);
  for (std::string_view kind : {"vertex-yaml", "vertex-json", "gcloud", "vertex-python"}) {
    INFO(kind);
    auto text = emitSpec(kind, spot);
    REQUIRE_FALSE(text.isOk());
    CHECK_THAT(text.status().message(), Catch::Contains("Spot reducers in a Vertex AI file: Vertex AI sets Spot for a "
                                                        "whole CustomJob (its CustomJobSpec's scheduling.strategy SPOT"));
    CHECK_THAT(text.status().message(), Catch::Contains("--reducer-capacity standard"));
  }
  // Every commented Vertex AI file says so; none asks for a scheduling strategy.
  for (std::string_view kind : {"vertex-yaml", "gcloud", "vertex-python"}) {
    INFO(kind);
    const std::string text = emitted(kind, a2MegaPlan());
    CHECK_THAT(text, Catch::Contains("# Capacity: every pool on standard VMs. Vertex AI sets Spot for a whole CustomJob"));
    CHECK_THAT(text, Catch::Contains("scheduling.strategy SPOT"));
    CHECK_THAT(text, Catch::Contains("cannot be Spot while the GPU workers are standard"));
  }
  for (std::string_view kind : {"vertex-yaml", "vertex-json", "vertex-python"}) {
    CHECK(emitted(kind, a2MegaPlan()).find("scheduling:") == std::string::npos);
    CHECK(emitted(kind, a2MegaPlan()).find("\"scheduling\"") == std::string::npos);
  }
}

TEST_CASE("emit: a plan's spares must be fewer than its reducers") {
  EmitPlan plan = a2MegaPlan();
  plan.spareReducers = 25;
  CHECK_THAT(errorOf(plan), Catch::Contains("25 spare reducers in a pool of 25: need 0 or more, and fewer than the pool"));
  plan.spareReducers = -1;
  CHECK_THAT(errorOf(plan), Catch::Contains("-1 spare reducers in a pool of 25"));
  plan.spareReducers = 24;
  CHECK(emitVertexYaml(plan).isOk());
}

TEST_CASE("emit: comment text wraps at spaces, a long word whole") {
  CHECK(wrapText("a bb ccc", 4) == std::vector<std::string>{"a bb", "ccc"});
  CHECK(wrapText("a bb ccc", 8) == std::vector<std::string>{"a bb ccc"});
  CHECK(wrapText("abcdefgh ij", 4) == std::vector<std::string>{"abcdefgh", "ij"});
  CHECK(wrapText("  a   b  ", 80) == std::vector<std::string>{"a b"});
  CHECK(wrapText("", 80).empty());
}
