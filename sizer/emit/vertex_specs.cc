// Vertex AI launch files: the CustomJobSpec (YAML), the CustomJob REST body (JSON), the gcloud
// command and the Python SDK call, all for the same plan. Field names are those of the v1 REST
// reference (CustomJobSpec, WorkerPoolSpec, MachineSpec, DiskSpec, ContainerSpec, EnvVar).
//
// The job secret: a Vertex AI job cannot mount a Kubernetes Secret, and its spec's environment is
// readable by whoever may view the job. The spec files hold no secret (they are kept, shared and
// resubmitted); the gcloud script and the SDK script put a fresh random one into every pool's
// RS_SECRET each time they submit, so each job has its own and no file holds it.
#include <fmt/format.h>

#include "sizer/emit/emit.h"
#include "sizer/emit/spec_value.h"

namespace rs::sizer {
namespace {

// The SDK's defaults for boot disks, used for every pool so that the YAML, the REST body and
// the Python call describe the same machines.
constexpr const char* kBootDiskType = "pd-ssd";
constexpr int kBootDiskSizeGb = 100;

// The spec's field names as the REST API (camelCase, the YAML and JSON) or the Python SDK's
// proto-plus dicts (snake_case) spell them.
enum class Naming { kRest, kPython };

std::string fieldName(std::string_view camel, Naming naming) {
  if (naming == Naming::kRest) return std::string(camel);
  std::string snake;
  for (char c : camel) {
    if (c >= 'A' && c <= 'Z') {
      snake += '_';
      snake += static_cast<char>(c - 'A' + 'a');
    } else {
      snake += c;
    }
  }
  return snake;
}

// A plan that Vertex AI can run: every plan validatePlan takes, except Spot reducers.
Status validateVertexPlan(const EmitPlan& plan) {
  RS_RETURN_IF_ERROR(validatePlan(plan));
  if (plan.spotReducers) {
    return invalidArgument(fmt::format(
        "Spot reducers in a Vertex AI file: {}. Emit it with --reducer-capacity standard, or "
        "run the reducers on Kubernetes (k8s, k8s-pool: a GKE Spot node pool)",
        kVertexSpotIsJobWide));
  }
  return Status::ok();
}

// The plan's summary and what capacity every pool runs on, at the top of each commented file.
std::vector<std::string> vertexSummary(const EmitPlan& plan) {
  std::vector<std::string> lines = planSummary(plan);
  const std::vector<std::string> capacity =
      wrapText(fmt::format("Capacity: every pool on standard VMs. {}. Spot reducers alone: "
                           "Kubernetes (rs-sizer --platform gke --reducer-capacity spot).",
                           kVertexSpotIsJobWide),
               96);
  // Before the summary's last line, which says to emit again rather than edit.
  lines.insert(lines.end() - 1, capacity.begin(), capacity.end());
  return lines;
}

std::string joinLines(const std::vector<std::string>& lines, std::string_view prefix) {
  std::string out;
  for (const auto& line : lines) out += std::string(prefix) + line + "\n";
  return out;
}

SpecValue env(const std::vector<std::pair<std::string, std::string>>& vars) {
  SpecValue list = SpecValue::list();
  for (const auto& [name, value] : vars) list.add(SpecValue::map({{"name", name}, {"value", value}}));
  return list;
}

// NCCL loads libnccl-net-reduction-server.so (installed by the worker layer) and offloads
// all-reduce to its CollNet; the plugin reads the reducers from CLUSTER_SPEC's workerpool2 and
// paces its streams to the worker machine type's egress, and to each reducer's 1/W of theirs.
std::vector<std::pair<std::string, std::string>> workerEnv(const EmitPlan& plan) {
  return {{"NCCL_NET_PLUGIN", "reduction-server"},
          {"NCCL_COLLNET_ENABLE", "1"},
          {"RS_LINK_GBPS", linkGbpsText(plan.workerLinkGbps)},
          {"RS_REDUCER_LINK_GBPS", linkGbpsText(plan.reducerLinkGbps)}};
}

SpecValue diskSpec(Naming n) {
  return SpecValue::map({{fieldName("bootDiskType", n), kBootDiskType},
                         {fieldName("bootDiskSizeGb", n), kBootDiskSizeGb}});
}

// `args` go to the image's ENTRYPOINT (none: the image's own command line).
SpecValue pool(Naming n, SpecValue machine, int replicas, const std::string& image,
               const std::vector<std::string>& args,
               const std::vector<std::pair<std::string, std::string>>& vars) {
  SpecValue container = SpecValue::map({{fieldName("imageUri", n), image}});
  if (!args.empty()) {
    SpecValue list = SpecValue::list();
    for (const auto& arg : args) list.add(arg);
    container.set("args", std::move(list));
  }
  container.set("env", env(vars));
  return SpecValue::map({
      {fieldName("machineSpec", n), std::move(machine)},
      {fieldName("replicaCount", n), replicas},
      {fieldName("diskSpec", n), diskSpec(n)},
      {fieldName("containerSpec", n), std::move(container)},
  });
}

SpecValue workerPool(const EmitPlan& plan, int replicas, Naming n) {
  SpecValue machine = SpecValue::map({{fieldName("machineType", n), plan.workerMachineType}});
  if (plan.acceleratorCount > 0) {
    machine.set(fieldName("acceleratorType", n), plan.acceleratorType)
        .set(fieldName("acceleratorCount", n), plan.acceleratorCount);
  }
  return pool(n, std::move(machine), replicas, plan.workerImage, {}, workerEnv(plan));
}

// The daemon paces its result streams to the reducer machine type's egress.
SpecValue reducerPool(const EmitPlan& plan, Naming n) {
  return pool(n, SpecValue::map({{fieldName("machineType", n), plan.reducerMachineType}}), plan.reducers,
              plan.reducerImage, {"--link-gbps", linkGbpsText(plan.reducerLinkGbps)},
              {{"RS_LOG_FORMAT", "json"}});
}

// The three pools: 0 the primary worker, 1 the other W - 1 workers, 2 the reducers.
SpecValue workerPoolSpecs(const EmitPlan& plan, Naming n) {
  SpecValue pools = SpecValue::list();
  pools.add(workerPool(plan, 1, n).withComment(
      "Pool 0: the primary worker (Vertex AI wants replicaCount 1 here). The image is the training\n"
      "image with the plugin layer (docker/); the plugin finds the reducers in CLUSTER_SPEC."));
  pools.add(workerPool(plan, plan.workers - 1, n)
                .withComment(fmt::format("Pool 1: the other {} workers, the same image.", plan.workers - 1)));
  pools.add(reducerPool(plan, n).withComment(
      "Pool 2: the reducers, sized by rs-sizer; no GPUs. Each takes its data port from its\n"
      "CLUSTER_SPEC workerpool2 entry and serves gRPC (grpc.health.v1) on the next port.\n"
      "Both ends pace their streams to their machine type's egress: the reducers' --link-gbps,\n"
      "the workers' RS_LINK_GBPS, and the workers to each reducer's 1/W of RS_REDUCER_LINK_GBPS\n"
      "(rs-sizer's figures for the types)."));
  return pools;
}

SpecValue customJobSpec(const EmitPlan& plan) {
  return SpecValue::map({{"workerPoolSpecs", workerPoolSpecs(plan, Naming::kRest)}});
}

// Puts one fresh secret into every pool's env of the YAML at $config (the layout emitVertexYaml
// writes: an `env:` list in each containerSpec), writing $job. The secret reaches awk through
// its environment, not its arguments, which any local user may read in /proc.
constexpr const char* kAddSecretScript = R"(umask 077
job=$(mktemp "${TMPDIR:-/tmp}/custom-job.XXXXXX")
trap 'rm -f "$job"' EXIT
RS_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n') awk '
  /^ *containerSpec:$/ { pools++ }
  /name: RS_SECRET$/ { taken = 1 }
  { print }
  /^ *env:$/ {
    indent = substr($0, 1, index($0, "env:") - 1)
    print indent "  - name: RS_SECRET"
    print indent "    value: \"" ENVIRON["RS_SECRET"] "\""
    added++
  }
  END {
    if (taken) { print "create-job.sh: " FILENAME " sets RS_SECRET itself; leave it to this script" > "/dev/stderr"; exit 1 }
    if (pools == 0 || added != pools) {
      print "create-job.sh: " FILENAME ": want an env: list in each of its " pools + 0 " containerSpec(s), found " added + 0 > "/dev/stderr"
      exit 1
    }
  }' "$config" >"$job"
)";

}  // namespace

Result<std::string> emitVertexYaml(const EmitPlan& plan) {
  RS_RETURN_IF_ERROR(validateVertexPlan(plan));
  std::vector<std::string> header = vertexSummary(plan);
  header.push_back("A Vertex AI CustomJobSpec for gcloud ai custom-jobs create --config: submit it with");
  header.push_back("create-job.sh, which adds a fresh random job secret to every pool (RS_SECRET) each time.");
  header.push_back("No secret is kept here, so this file can be kept and shared. Submitted without one, the");
  header.push_back("reducers run open and say so (deploy/README.md, \"The job secret\").");
  std::string headerText;
  for (const auto& line : header) headerText += (headerText.empty() ? "" : "\n") + line;
  return yamlStream(headerText, {customJobSpec(plan)});
}

Result<std::string> emitVertexJson(const EmitPlan& plan) {
  RS_RETURN_IF_ERROR(validateVertexPlan(plan));
  // JSON has no comments: the REST body says only what the API reads.
  return SpecValue::map({{"displayName", plan.jobName}, {"jobSpec", customJobSpec(plan)}}).toJson();
}


Result<std::string> emitGcloudScript(const EmitPlan& plan) {
  RS_RETURN_IF_ERROR(validateVertexPlan(plan));
  return fmt::format(
      "#!/usr/bin/env bash\n"
      "{}"
      "#\n"
      "# Creates the Vertex AI custom job of custom-job.yaml (the same plan, rs-sizer --emit vertex-yaml)\n"
      "# with a fresh random job secret in every pool's RS_SECRET: the reducers accept only this job's\n"
      "# workers. The secret is in the job's spec, which whoever may view the job can read, and in no\n"
      "# file here (deploy/README.md, \"The job secret\").\n"
      "#   create-job.sh [CONFIG.yaml] [more gcloud flags, e.g. --project=my-project]\n"
      "set -euo pipefail\n"
      "config=$(dirname \"$0\")/custom-job.yaml\n"
      "if (($# > 0)) && [[ $1 != -* ]]; then config=$1; shift; fi  # a first argument that is no flag\n"
      "{}"
      "gcloud ai custom-jobs create \\\n"
      "  --region={} \\\n"
      "  --display-name={} \\\n"
      "  --config=\"$job\" \\\n"
      "  \"$@\"\n",
      joinLines(vertexSummary(plan), "# "), kAddSecretScript, plan.region, plan.jobName);
}

Result<std::string> emitVertexPython(const EmitPlan& plan) {
  RS_RETURN_IF_ERROR(validateVertexPlan(plan));
  // JSON of strings and numbers is a Python literal too.
  const std::string pools = workerPoolSpecs(plan, Naming::kPython).toJson();
  return fmt::format(
      "#!/usr/bin/env python3\n"
      "{}"
      "#\n"
      "# Submits the job of custom-job.yaml through the Vertex AI SDK (pip install google-cloud-aiplatform),\n"
      "# with a fresh random job secret in every pool's RS_SECRET, as create-job.sh does:\n"
      "#   submit_job.py --project=my-project --staging-bucket=gs://my-bucket\n"
      "\"\"\"Submits a training job with a Reduction Server pool to Vertex AI.\"\"\"\n"
      "import argparse\n"
      "import copy\n"
      "import secrets\n"
      "\n"
      "from google.cloud import aiplatform\n"
      "\n"
      "# custom-job.yaml's pools: 0 the primary worker, 1 the other workers, 2 the reducers.\n"
      "WORKER_POOL_SPECS = {}"
      "\n"
      "\n"
      "def with_secret(pools, secret):\n"
      "    \"\"\"The pools, every container given the job secret in RS_SECRET.\"\"\"\n"
      "    pools = copy.deepcopy(pools)\n"
      "    for pool in pools:\n"
      "        pool[\"container_spec\"].setdefault(\"env\", []).append({{\"name\": \"RS_SECRET\", \"value\": secret}})\n"
      "    return pools\n"
      "\n"
      "\n"
      "def main():\n"
      "    parser = argparse.ArgumentParser(description=__doc__)\n"
      "    parser.add_argument(\"--project\", required=True)\n"
      "    parser.add_argument(\"--region\", default={})\n"
      "    parser.add_argument(\"--staging-bucket\", required=True, help=\"gs:// folder for the job's files\")\n"
      "    args = parser.parse_args()\n"
      "\n"
      "    # This job's own secret: the reducers accept only workers that hold it. It lives in the\n"
      "    # job's spec (readable by whoever may view the job) and in no file (deploy/README.md).\n"
      "    secret = secrets.token_hex(32)\n"
      "    aiplatform.init(project=args.project, location=args.region, staging_bucket=args.staging_bucket)\n"
      "    # CustomJob rather than CustomContainerTrainingJob.run(reduction_server_...): that one\n"
      "    # gives the reducers' pool no environment, so no secret.\n"
      "    job = aiplatform.CustomJob(\n"
      "        display_name={},\n"
      "        worker_pool_specs=with_secret(WORKER_POOL_SPECS, secret),\n"
      "    )\n"
      "    job.run()\n"
      "\n"
      "\n"
      "if __name__ == \"__main__\":\n"
      "    main()\n",
      joinLines(vertexSummary(plan), "# "), pools, jsonQuote(plan.region), jsonQuote(plan.jobName));
}

}  // namespace rs::sizer
