#include "sizer/emit/emit.h"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <cmath>

namespace rs::sizer {
namespace {

constexpr double kMostLinkGbps = 100000;  // the most the daemon and the plugin accept

bool allOf(const std::string& text, std::string_view extra, bool upper) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [&](char c) {
           const unsigned char u = static_cast<unsigned char>(c);
           const bool letter = upper ? std::isupper(u) != 0 : std::islower(u) != 0;
           return letter || std::isdigit(u) || extra.find(c) != std::string_view::npos;
         });
}

// A Kubernetes DNS-1035 label: what Service, StatefulSet and JobSet names must be.
bool isDns1035Label(const std::string& text) {
  return text.size() <= 63 && allOf(text, "-", false) && std::islower(static_cast<unsigned char>(text.front())) &&
         text.back() != '-';
}

Status checkPodNameLength(const EmitPlan& plan, std::string_view replicatedJob, int count) {
  // JobSet names pods <jobset>-<replicatedJob>-<job index>-<pod index>-<5 random characters>
  // and refuses a JobSet whose longest pod name passes 63 characters.
  const std::string longest = fmt::format("{}-{}-0-{}-abcde", plan.jobName, replicatedJob, count - 1);
  if (longest.size() > 63) {
    return invalidArgument(fmt::format(
        "job name '{}' is too long: JobSet would name a pod '{}' ({} characters, at most 63)",
        plan.jobName, longest, longest.size()));
  }
  return Status::ok();
}

}  // namespace

Status validatePlan(const EmitPlan& plan) {
  if (!isDns1035Label(plan.jobName)) {
    return invalidArgument(fmt::format(
        "job name '{}' is not a DNS-1035 label (lower-case letters, digits and '-', starting with "
        "a letter, not ending in '-', at most 63 characters): Kubernetes names objects after it",
        plan.jobName));
  }
  if (!allOf(plan.region, "-", false)) {
    return invalidArgument(fmt::format("region '{}' is not a region name such as us-central1", plan.region));
  }
  if (plan.workers < 2) {
    return invalidArgument(fmt::format(
        "{} worker(s): a reduction server needs at least 2 workers (pool 0 holds the primary, "
        "pool 1 the others)", plan.workers));
  }
  if (plan.reducers < 1 || plan.reducers > 65535) {
    return invalidArgument(fmt::format("{} reducers: need 1..65535", plan.reducers));
  }
  if (plan.spareReducers < 0 || plan.spareReducers >= plan.reducers) {
    return invalidArgument(fmt::format(
        "{} spare reducers in a pool of {}: need 0 or more, and fewer than the pool", plan.spareReducers,
        plan.reducers));
  }
  for (const auto& [what, type] : {std::pair{"worker machine type", &plan.workerMachineType},
                                   std::pair{"reducer machine type", &plan.reducerMachineType}}) {
    if (!allOf(*type, "-", false)) {
      return invalidArgument(fmt::format("{} '{}' is not a machine type name such as n1-highcpu-16", what, *type));
    }
  }
  // The daemon (--link-gbps) and the plugin (RS_LINK_GBPS, RS_REDUCER_LINK_GBPS) accept
  // 0 .. 100000; 0 would leave the
  // streams unpaced, which is what this field exists to prevent.
  for (const auto& [what, gbps] : {std::pair{"worker link rate (RS_LINK_GBPS)", plan.workerLinkGbps},
                                   std::pair{"reducer link rate (--link-gbps)", plan.reducerLinkGbps}}) {
    if (!(gbps > 0 && gbps <= kMostLinkGbps)) {
      return invalidArgument(fmt::format(
          "{} {} Gbit/s: need a finite rate above 0 and at most {} (the machine type's egress, "
          "as makePlan takes it from rs-sizer's table)",
          what, gbps, kMostLinkGbps));
    }
  }
  if (plan.acceleratorCount < 0) {
    return invalidArgument(fmt::format("accelerator count {} is negative", plan.acceleratorCount));
  }
  if ((plan.acceleratorCount == 0) != plan.acceleratorType.empty()) {
    return invalidArgument(fmt::format(
        "accelerator type '{}' with count {}: give both (GPU workers) or neither (CPU workers)",
        plan.acceleratorType, plan.acceleratorCount));
  }
  if (!plan.acceleratorType.empty() && !allOf(plan.acceleratorType, "_", true)) {
    return invalidArgument(fmt::format(
        "accelerator type '{}' is not a Vertex AI AcceleratorType name such as NVIDIA_TESLA_A100",
        plan.acceleratorType));
  }
  for (const auto& [what, image] : {std::pair{"worker image", &plan.workerImage},
                                    std::pair{"reducer image", &plan.reducerImage}}) {
    const bool wordChars = !image->empty() && std::all_of(image->begin(), image->end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("._/:@-").find(c) != std::string_view::npos;
    });
    if (!wordChars || !std::isalnum(static_cast<unsigned char>(image->front()))) {
      return invalidArgument(fmt::format(
          "{} '{}' is not an image reference such as us-docker.pkg.dev/my-project/repo/image:tag",
          what, *image));
    }
  }
  if (plan.dataPort < 1 || plan.dataPort > 65534 || plan.metricsPort < 1 || plan.metricsPort > 65535 ||
      plan.metricsPort == plan.dataPort || plan.metricsPort == plan.dataPort + 1) {
    return invalidArgument(fmt::format(
        "ports: data {} (gRPC {}) and metrics {} must be distinct ports in 1..65535", plan.dataPort,
        plan.dataPort + 1, plan.metricsPort));
  }
  if (plan.trainScript.empty() ||
      std::any_of(plan.trainScript.begin(), plan.trainScript.end(),
                  [](char c) { return std::isspace(static_cast<unsigned char>(c)) || c == '"'; })) {
    return invalidArgument(fmt::format("training script '{}' must be one word (a path)", plan.trainScript));
  }
  RS_RETURN_IF_ERROR(checkPodNameLength(plan, "workers", plan.workers));
  return checkPodNameLength(plan, "reducers", plan.reducers);
}

Result<ReducerResources> reducerResources(const EmitPlan& plan) {
  if (plan.reducerVcpus < 2 || plan.reducerMemoryGb <= 0) {
    return invalidArgument(fmt::format(
        "reducer machine type {}: {} vCPUs and {} GB is too small for a Kubernetes reducer pod "
        "(need at least 2 vCPUs: the kubelet and system daemons share the node)",
        plan.reducerMachineType, plan.reducerVcpus, plan.reducerMemoryGb));
  }
  ReducerResources r;
  // Leave one vCPU in eight to the kubelet, system daemons and the kernel's network softirqs.
  r.cpu = plan.reducerVcpus - (plan.reducerVcpus + 7) / 8;
  // GKE's allocatable memory on small nodes is about 75% of the machine; 60% leaves room for
  // DaemonSets. The accumulator gets three quarters of the container: the rest holds socket
  // buffers (charged to the pod's cgroup), gRPC and thread stacks.
  r.memoryLimitGib = static_cast<int>(std::floor(plan.reducerMemoryGb * 0.6));
  if (r.memoryLimitGib < 1) {
    return invalidArgument(fmt::format(
        "reducer machine type {}: {} GB leaves under 1 GiB for the reducer container",
        plan.reducerMachineType, plan.reducerMemoryGb));
  }
  r.accumulatorMib = r.memoryLimitGib * 1024 * 3 / 4;
  // The daemon refuses an accumulator share per io thread below one fp16 chunk (2 x 8 MiB).
  if (r.accumulatorMib / r.cpu < 16) {
    return invalidArgument(fmt::format(
        "reducer machine type {}: {} MiB of accumulator memory over {} io threads is under the "
        "16 MiB per thread the daemon needs",
        plan.reducerMachineType, r.accumulatorMib, r.cpu));
  }
  return r;
}

std::string linkGbpsText(double gbps) { return fmt::format("{}", gbps); }

std::string kubernetesJobSecretName(const EmitPlan& plan) { return plan.jobName + "-rs-secret"; }
std::string kubernetesPoolSecretName(const EmitPlan& plan) { return plan.jobName + "-pool-secret"; }

std::vector<std::string> planSummary(const EmitPlan& plan) {
  const std::string gpus = plan.acceleratorCount == 0
                               ? std::string("no accelerators")
                               : fmt::format("{} x {} each", plan.acceleratorCount, plan.acceleratorType);
  std::vector<std::string> lines = {
      "Made by rs-sizer --emit (sizer/emit) for this plan:",
      fmt::format("  workers:  {} x {} ({}), paced to {} Gbit/s (RS_LINK_GBPS)", plan.workers,
                  plan.workerMachineType, gpus, linkGbpsText(plan.workerLinkGbps)),
      fmt::format("  reducers: {} x {}, paced to {} Gbit/s (--link-gbps; the workers' RS_REDUCER_LINK_GBPS)",
                  plan.reducers, plan.reducerMachineType, linkGbpsText(plan.reducerLinkGbps)),
  };
  // What the pool holds beyond the bounds, and what it runs on, where that is not the default.
  std::vector<std::string> more;
  if (plan.spareReducers > 0)
    more.push_back(fmt::format("{} for the bounds and {} spare{}", plan.reducers - plan.spareReducers,
                               plan.spareReducers, plan.spareReducers == 1 ? "" : "s"));
  if (plan.spotReducers) more.push_back("on GKE Spot VMs");
  if (!more.empty()) lines.push_back(fmt::format("            ({})", fmt::join(more, ", ")));
  lines.push_back("Change the plan and emit again rather than editing the counts here (deploy/README.md).");
  return lines;
}

std::vector<std::string> wrapText(std::string_view text, size_t width) {
  std::vector<std::string> lines;
  std::string line;
  size_t at = 0;
  while (at < text.size()) {
    const size_t space = text.find(' ', at);
    const std::string_view word = text.substr(at, space == std::string_view::npos ? text.npos : space - at);
    at = space == std::string_view::npos ? text.size() : space + 1;
    if (word.empty()) continue;
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(std::move(line));
      line.clear();
    }
    line += (line.empty() ? "" : " ") + std::string(word);
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

Result<std::string> emitSpec(std::string_view kind, const EmitPlan& plan) {
  if (kind == "vertex-yaml") return emitVertexYaml(plan);
  if (kind == "vertex-json") return emitVertexJson(plan);
  if (kind == "gcloud") return emitGcloudScript(plan);
  if (kind == "vertex-python") return emitVertexPython(plan);
  if (kind == "k8s") return emitKubernetesJobSet(plan);
  if (kind == "k8s-pool") return emitKubernetesReducerPool(plan);
  return invalidArgument(
      fmt::format("--emit '{}' is not one of {}", kind, fmt::join(kEmitKinds, ", ")));
}

}  // namespace rs::sizer
