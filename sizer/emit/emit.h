// The spec emitters behind `rs-sizer --emit`: from a sized plan (W GPU workers, R reducers) they
// write the launch files of deploy/ (a Vertex AI CustomJob as YAML or as a REST body, the gcloud
// command, the Python SDK call, a Kubernetes JobSet, a standing reducer pool). Pure functions: a
// plan in, the file's text out, no I/O. deploy/'s files for the documented examples are these
// functions' output byte for byte (tests/sizer_emit checks that), so the two cannot drift.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/common/status.h"

namespace rs::sizer {

// Why a Vertex AI job's reducers cannot be Spot on their own; rs-sizer's refusal, its report and
// the Vertex AI files' comments all say it with this text. Vertex AI's v1 REST reference:
// CustomJobSpec.scheduling.strategy is STANDARD, SPOT, FLEX_START, ...; a WorkerPoolSpec has
// machineSpec, replicaCount, diskSpec, containerSpec, pythonPackageSpec and nfsMounts, and no
// scheduling (gcloud's GoogleCloudAiplatformV1WorkerPoolSpec has the same fields).
inline constexpr std::string_view kVertexSpotIsJobWide =
    "Vertex AI sets Spot for a whole CustomJob (its CustomJobSpec's scheduling.strategy SPOT; a "
    "worker pool has no such field), so the reducers cannot be Spot while the GPU workers are "
    "standard";

// Everything the specs need. Worker pool 0 gets the primary worker and pool 1 the other W - 1
// (Vertex AI's layout); pool 2 holds the R reducers.
struct EmitPlan {
  // The Vertex AI display name, the JobSet's name, and the reducer pool's Service/StatefulSet name:
  // a DNS-1035 label (lower-case letters, digits and '-', starting with a letter).
  std::string jobName = "rs-train";
  std::string region = "us-central1";  // Vertex AI region (gcloud --region, SDK location)

  int workers = 0;                  // W, at least 2 (with one worker there is nothing to reduce)
  std::string workerMachineType;    // e.g. a2-megagpu-16g
  std::string acceleratorType;      // Vertex AI enum name, e.g. NVIDIA_TESLA_A100
  int acceleratorCount = 0;         // GPUs per worker (also torchrun's --nproc-per-node)
  std::string workerImage;          // the training image with the plugin layer (docker/)

  int reducers = 0;                 // the pool launched, from the sizing: the bounds' R and the spares
  int spareReducers = 0;            // of those, the spares beyond the bounds (--spare)
  // The reducers on Spot VMs (--reducer-capacity spot): on Kubernetes a GKE Spot node pool, which
  // their pods select (cloud.google.com/gke-spot) and whose taint they tolerate. Vertex AI's
  // files refuse it (kVertexSpotIsJobWide).
  bool spotReducers = false;
  std::string reducerMachineType;   // e.g. n1-highcpu-16
  int reducerVcpus = 0;             // of that machine type
  double reducerMemoryGb = 0;       // of that machine type, as GCP lists it (14.4 for n1-highcpu-16)
  std::string reducerImage;         // docker/'s reducer image (ENTRYPOINT reduction-server)

  // Each machine type's egress in Gbit/s, as the sizing used it (rs-sizer's machine table, its
  // Tier_1 figure with --tier1): the link rate the streams are paced to, so that a deployment
  // paces without the operator looking it up. Reducers get theirs as --link-gbps; workers get
  // theirs as RS_LINK_GBPS and the reducers' as RS_REDUCER_LINK_GBPS, so that W workers do not
  // send a slower reducer W x their own share (README, "Running a reducer"). Required: 0 is no
  // rate, not "unpaced".
  double workerLinkGbps = 0;
  double reducerLinkGbps = 0;

  int dataPort = 2222;              // gRPC listens on dataPort + 1
  int metricsPort = 2224;
  // What the Kubernetes workers run under torchrun (Vertex AI runs the image's own entry point).
  std::string trainScript = "train.py";
};

// Why the plan cannot be emitted, naming the field; OK when it can.
Status validatePlan(const EmitPlan& plan);

// The reducer container's Kubernetes resources for a machine type: a Guaranteed pod that leaves
// room for the kubelet and system daemons, with the daemon's accumulator memory (--memory-limit)
// well inside the container's memory limit and one io thread per CPU.
struct ReducerResources {
  int cpu = 0;                 // request = limit, whole CPUs; also RS_IO_THREADS
  int memoryLimitGib = 0;      // request = limit
  int accumulatorMib = 0;      // RS_MEMORY_LIMIT
};
Result<ReducerResources> reducerResources(const EmitPlan& plan);

// Vertex AI: the CustomJobSpec that `gcloud ai custom-jobs create --config` reads.
Result<std::string> emitVertexYaml(const EmitPlan& plan);
// Vertex AI: the REST body of projects.locations.customJobs.create (a CustomJob).
Result<std::string> emitVertexJson(const EmitPlan& plan);
// A bash script running `gcloud ai custom-jobs create` on the YAML above.
Result<std::string> emitGcloudScript(const EmitPlan& plan);
// A Python script submitting the same job through google-cloud-aiplatform's
// CustomContainerTrainingJob.run(reduction_server_replica_count=...).
Result<std::string> emitVertexPython(const EmitPlan& plan);
// Kubernetes: a JobSet whose reducers start first and whose workers' success ends the job.
Result<std::string> emitKubernetesJobSet(const EmitPlan& plan);
// Kubernetes: a standing reducer pool (headless Service, StatefulSet, PodDisruptionBudget)
// of the plan's R reducers, named after jobName.
Result<std::string> emitKubernetesReducerPool(const EmitPlan& plan);

// The Kubernetes Secrets (key "secret") the manifests mount and the operator creates
// (deploy/README.md): a job's own random secret, which its reducers and workers share, and a
// standing pool's secret, from which each job's secret is derived.
std::string kubernetesJobSecretName(const EmitPlan& plan);   // <jobName>-rs-secret
std::string kubernetesPoolSecretName(const EmitPlan& plan);  // <jobName>-pool-secret

// The names `--emit` takes and the emitter each selects.
inline constexpr std::string_view kEmitKinds[] = {"vertex-yaml", "vertex-json", "gcloud",
                                                  "vertex-python", "k8s", "k8s-pool"};
Result<std::string> emitSpec(std::string_view kind, const EmitPlan& plan);

// A link rate as the specs write it: the shortest text that reads back as the same number
// (32, 100, 23.5), no trailing zeros or exponent for the rates validatePlan accepts.
std::string linkGbpsText(double gbps);

// The comment block at the top of every emitted file: what plan it was made for.
std::vector<std::string> planSummary(const EmitPlan& plan);

// `text` cut into lines of at most `width` characters at spaces (a longer word stays whole), for
// comment blocks.
std::vector<std::string> wrapText(std::string_view text, size_t width);

}  // namespace rs::sizer
