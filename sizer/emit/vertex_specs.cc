// Vertex AI launch files: the CustomJobSpec (YAML), the CustomJob REST body (JSON), the gcloud
// command and the Python SDK call, all for the same plan. Field names are those of the v1 REST
// reference (CustomJobSpec, WorkerPoolSpec, MachineSpec, DiskSpec, ContainerSpec, EnvVar).
#include <fmt/format.h>

#include "sizer/emit/emit.h"
#include "sizer/emit/spec_value.h"

namespace rs::sizer {
namespace {

// The SDK's defaults for boot disks, used for every pool so that the YAML, the REST body and
// the Python call describe the same machines.
constexpr const char* kBootDiskType = "pd-ssd";
constexpr int kBootDiskSizeGb = 100;

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
// all-reduce to its CollNet; the plugin reads the reducers from CLUSTER_SPEC's workerpool2.
std::vector<std::pair<std::string, std::string>> workerEnv() {
  return {{"NCCL_NET_PLUGIN", "reduction-server"}, {"NCCL_COLLNET_ENABLE", "1"}};
}

SpecValue diskSpec() {
  return SpecValue::map({{"bootDiskType", kBootDiskType}, {"bootDiskSizeGb", kBootDiskSizeGb}});
}

SpecValue workerPool(const EmitPlan& plan, int replicas) {
  SpecValue machine = SpecValue::map({{"machineType", plan.workerMachineType}});
  if (plan.acceleratorCount > 0) {
    machine.set("acceleratorType", plan.acceleratorType).set("acceleratorCount", plan.acceleratorCount);
  }
  return SpecValue::map({
      {"machineSpec", machine},
      {"replicaCount", replicas},
      {"diskSpec", diskSpec()},
      {"containerSpec", SpecValue::map({{"imageUri", plan.workerImage}, {"env", env(workerEnv())}})},
  });
}

SpecValue reducerPool(const EmitPlan& plan) {
  return SpecValue::map({
      {"machineSpec", SpecValue::map({{"machineType", plan.reducerMachineType}})},
      {"replicaCount", plan.reducers},
      {"diskSpec", diskSpec()},
      {"containerSpec", SpecValue::map({{"imageUri", plan.reducerImage},
                                        {"env", env({{"RS_LOG_FORMAT", "json"}})}})},
  });
}

SpecValue customJobSpec(const EmitPlan& plan) {
  SpecValue pools = SpecValue::list();
  pools.add(workerPool(plan, 1).withComment(
      "Pool 0: the primary worker (Vertex AI wants replicaCount 1 here). The image is the training\n"
      "image with the plugin layer (docker/); the plugin finds the reducers in CLUSTER_SPEC."));
  pools.add(workerPool(plan, plan.workers - 1)
                .withComment(fmt::format("Pool 1: the other {} workers, the same image.", plan.workers - 1)));
  pools.add(reducerPool(plan).withComment(
      "Pool 2: the reducers, sized by rs-sizer; no GPUs. Each takes its data port from its\n"
      "CLUSTER_SPEC workerpool2 entry and serves gRPC (grpc.health.v1) on the next port."));
  return SpecValue::map({{"workerPoolSpecs", pools}});
}

}  // namespace

Result<std::string> emitVertexYaml(const EmitPlan& plan) {
  RS_RETURN_IF_ERROR(validatePlan(plan));
  std::vector<std::string> header = planSummary(plan);
  header.push_back("A Vertex AI CustomJobSpec: gcloud ai custom-jobs create --config=THIS_FILE");
  header.push_back("(create-job.sh runs it).");
  std::string headerText;
  for (const auto& line : header) headerText += (headerText.empty() ? "" : "\n") + line;
  return yamlStream(headerText, {customJobSpec(plan)});
}

Result<std::string> emitVertexJson(const EmitPlan& plan) {
  RS_RETURN_IF_ERROR(validatePlan(plan));
  // JSON has no comments: the REST body says only what the API reads.
  return SpecValue::map({{"displayName", plan.jobName}, {"jobSpec", customJobSpec(plan)}}).toJson();
}

Result<std::string> emitGcloudScript(const EmitPlan& plan) {
  RS_RETURN_IF_ERROR(validatePlan(plan));
  return fmt::format(
      "#!/usr/bin/env bash\n"
      "{}"
      "#\n"
      "# Creates the Vertex AI custom job of custom-job.yaml (the same plan, rs-sizer --emit vertex-yaml).\n"
      "#   create-job.sh [CONFIG.yaml] [more gcloud flags, e.g. --project=my-project]\n"
      "set -euo pipefail\n"
      "config=${{1:-$(dirname \"$0\")/custom-job.yaml}}\n"
      "if (($# > 0)); then shift; fi\n"
      "exec gcloud ai custom-jobs create \\\n"
      "  --region={} \\\n"
      "  --display-name={} \\\n"
      "  --config=\"$config\" \\\n"
      "  \"$@\"\n",
      joinLines(planSummary(plan), "# "), plan.region, plan.jobName);
}

Result<std::string> emitVertexPython(const EmitPlan& plan) {
  RS_RETURN_IF_ERROR(validatePlan(plan));
  std::string envLiteral;
  for (const auto& [name, value] : workerEnv()) {
    envLiteral += fmt::format("{}{}: {}", envLiteral.empty() ? "" : ", ", jsonQuote(name), jsonQuote(value));
  }
  const std::string accelerator =
      plan.acceleratorCount == 0
          ? std::string()
          : fmt::format("        accelerator_type={},\n        accelerator_count={},\n",
                        jsonQuote(plan.acceleratorType), plan.acceleratorCount);
  return fmt::format(
      "#!/usr/bin/env python3\n"
      "{}"
      "#\n"
      "# Submits the job of custom-job.yaml through the Vertex AI SDK (pip install google-cloud-aiplatform):\n"
      "#   submit_job.py --project=my-project --staging-bucket=gs://my-bucket\n"
      "\"\"\"Submits a training job with a Reduction Server pool to Vertex AI.\"\"\"\n"
      "import argparse\n"
      "\n"
      "from google.cloud import aiplatform\n"
      "\n"
      "\n"
      "def main():\n"
      "    parser = argparse.ArgumentParser(description=__doc__)\n"
      "    parser.add_argument(\"--project\", required=True)\n"
      "    parser.add_argument(\"--region\", default={})\n"
      "    parser.add_argument(\"--staging-bucket\", required=True, help=\"gs:// folder for the job's files\")\n"
      "    args = parser.parse_args()\n"
      "\n"
      "    aiplatform.init(project=args.project, location=args.region, staging_bucket=args.staging_bucket)\n"
      "    job = aiplatform.CustomContainerTrainingJob(\n"
      "        display_name={},\n"
      "        container_uri={},\n"
      "    )\n"
      "    # replica_count counts every worker: the SDK puts 1 in pool 0 and the rest in pool 1.\n"
      "    job.run(\n"
      "        replica_count={},\n"
      "        machine_type={},\n"
      "{}"
      "        boot_disk_type={},\n"
      "        boot_disk_size_gb={},\n"
      "        environment_variables={{{}}},\n"
      "        reduction_server_replica_count={},\n"
      "        reduction_server_machine_type={},\n"
      "        reduction_server_container_uri={},\n"
      "    )\n"
      "\n"
      "\n"
      "if __name__ == \"__main__\":\n"
      "    main()\n",
      joinLines(planSummary(plan), "# "), jsonQuote(plan.region), jsonQuote(plan.jobName),
      jsonQuote(plan.workerImage), plan.workers, jsonQuote(plan.workerMachineType), accelerator,
      jsonQuote(kBootDiskType), kBootDiskSizeGb, envLiteral, plan.reducers,
      jsonQuote(plan.reducerMachineType), jsonQuote(plan.reducerImage));
}

}  // namespace rs::sizer
