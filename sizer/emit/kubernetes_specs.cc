// Kubernetes launch files: a JobSet (jobset.x-k8s.io/v1alpha2, JobSet 0.8 or later for dependsOn)
// running one training job with its own reducers, and a standing reducer pool (headless Service,
// StatefulSet, PodDisruptionBudget). Both use the same hardened reducer pod. The job secret
// (core/common/secret.h) is a Kubernetes Secret the operator creates; every pod mounts it
// read-only as a file named in RS_SECRET_FILE. No secret value is ever written here: a manifest
// is reviewed, committed and reapplied, a credential must not be.
#include <fmt/format.h>

#include "sizer/emit/emit.h"
#include "sizer/emit/spec_value.h"

namespace rs::sizer {
namespace {

// The daemon drains for at most 60 s after SIGTERM; the kubelet waits this long before SIGKILL.
constexpr int kTerminationGraceSeconds = 75;
constexpr int kMasterPort = 29500;  // torchrun's rendezvous on worker 0
constexpr int kReducerUid = 10001;   // the reducer image's numeric USER
// Where every pod finds the job secret: the Secret's key "secret", as a file.
constexpr const char* kSecretVolume = "rs-secret";
constexpr const char* kSecretDir = "/var/run/secrets/reduction-server";
constexpr const char* kSecretKey = "secret";
// Secret file modes: the reducer reads its file as group 10001 (fsGroup); a worker's user is not
// known here.
constexpr int kReducerSecretMode = 0440;
constexpr int kWorkerSecretMode = 0444;
// GKE's label on Spot VM nodes, and the taint of the same key and value that Autopilot puts on
// them and a Standard node pool gets from --node-taints (GKE's "Spot VMs" pages).
constexpr const char* kGkeSpotKey = "cloud.google.com/gke-spot";

// The header lines of a Kubernetes file with Spot reducers: the node pool they need.
std::vector<std::string> spotPoolLines(const EmitPlan& plan) {
  if (!plan.spotReducers) return {};
  return {"On a Standard cluster, first make the reducers' Spot node pool (Autopilot makes its own):",
          fmt::format("gcloud container node-pools create reducers-spot --cluster=CLUSTER "
                      "--machine-type={} --spot \\",
                      plan.reducerMachineType),
          fmt::format("    --num-nodes={} --node-taints={}=true:NoSchedule", plan.reducers, kGkeSpotKey)};
}

std::string headerText(const EmitPlan& plan, std::initializer_list<std::string> more) {
  std::string out;
  for (const auto& line : planSummary(plan)) out += (out.empty() ? "" : "\n") + line;
  for (const auto& line : spotPoolLines(plan)) out += "\n" + line;
  for (const auto& line : more) out += "\n" + line;
  return out;
}

std::string secretFile() { return fmt::format("{}/{}", kSecretDir, kSecretKey); }

SpecValue secretEnv() {
  return SpecValue::map({{"name", "RS_SECRET_FILE"}, {"value", secretFile()}});
}

SpecValue secretMount() {
  return SpecValue::map({{"name", kSecretVolume}, {"mountPath", kSecretDir}, {"readOnly", true}});
}

// The pod volume of Secret `name`. It is not optional: a pod whose Secret is missing waits in
// ContainerCreating rather than running open.
SpecValue secretVolume(const std::string& name, int mode) {
  return SpecValue::map({{"name", kSecretVolume},
                         {"secret", SpecValue::map({{"secretName", name}, {"defaultMode", mode}})}});
}

SpecValue reducerLabels(const EmitPlan& plan) {
  return SpecValue::map({{"app.kubernetes.io/name", "reduction-server"},
                         {"app.kubernetes.io/component", "reducer"},
                         {"app.kubernetes.io/instance", plan.jobName}});
}

std::string memoryLimitText(int mib) {
  return mib % 1024 == 0 ? fmt::format("{}GiB", mib / 1024) : fmt::format("{}MiB", mib);
}

SpecValue grpcProbe(const EmitPlan& plan, int periodSeconds, int failureThreshold) {
  return SpecValue::map({{"grpc", SpecValue::map({{"port", plan.dataPort + 1}})},
                         {"periodSeconds", periodSeconds},
                         {"failureThreshold", failureThreshold}});
}

SpecValue reducerContainer(const EmitPlan& plan, const ReducerResources& r, const std::string& secretSource) {
  const std::string cpu = std::to_string(r.cpu);
  const std::string memory = fmt::format("{}Gi", r.memoryLimitGib);
  SpecValue env = SpecValue::list();
  for (const auto& [name, value] : std::initializer_list<std::pair<const char*, std::string>>{
           {"RS_DATA_LISTEN", fmt::format("0.0.0.0:{}", plan.dataPort)},
           {"RS_GRPC_LISTEN", fmt::format("0.0.0.0:{}", plan.dataPort + 1)},
           {"RS_METRICS_LISTEN", fmt::format("0.0.0.0:{}", plan.metricsPort)},
           {"RS_IO_THREADS", cpu},
           {"RS_MEMORY_LIMIT", memoryLimitText(r.accumulatorMib)},
           {"RS_LOG_FORMAT", "json"}}) {
    env.add(SpecValue::map({{"name", name}, {"value", value}}));
  }
  env.add(secretEnv().withComment(secretSource));
  return SpecValue::map({
      {"name", "reduction-server"},
      {"image", plan.reducerImage},
      {"args", SpecValue::list({"--link-gbps", linkGbpsText(plan.reducerLinkGbps)})
                   .withComment("Result streams paced to the reducer machine type's egress (rs-sizer's table).")},
      {"env", std::move(env).withComment(fmt::format(
                  "One io thread per CPU of the limit; the accumulator ({}) well inside the\n"
                  "memory limit ({}): the rest holds socket buffers, gRPC and stacks.",
                  memoryLimitText(r.accumulatorMib), memory))},
      {"ports", SpecValue::list({
                    SpecValue::map({{"name", "data"}, {"containerPort", plan.dataPort}}),
                    SpecValue::map({{"name", "grpc"}, {"containerPort", plan.dataPort + 1}}),
                    SpecValue::map({{"name", "metrics"}, {"containerPort", plan.metricsPort}}),
                })},
      {"readinessProbe",
       grpcProbe(plan, 5, 2).withComment(
           "grpc.health.v1 Check on the daemon itself: NOT_SERVING while it drains.")},
      {"livenessProbe",
       grpcProbe(plan, 10, 6).withComment(
           "The kubelet stops liveness probes once a pod is being deleted, so a drain is not cut short.")},
      {"resources", SpecValue::map({{"requests", SpecValue::map({{"cpu", cpu}, {"memory", memory}})},
                                    {"limits", SpecValue::map({{"cpu", cpu}, {"memory", memory}})}})},
      {"securityContext",
       SpecValue::map({{"allowPrivilegeEscalation", false},
                       {"readOnlyRootFilesystem", true},
                       {"capabilities", SpecValue::map({{"drop", SpecValue::list({"ALL"})}})}})},
      {"volumeMounts", SpecValue::list({secretMount()})},
  });
}

// The reducer pod: one per node of the reducer machine type, non-root, Guaranteed QoS, its
// secret from Secret `secretName` (`secretSource` says what that secret is).
Result<SpecValue> reducerPodTemplate(const EmitPlan& plan, bool restartNever, const std::string& secretName,
                                     const std::string& secretSource) {
  auto resources = reducerResources(plan);
  if (!resources) return resources.status();
  SpecValue spec = SpecValue::map();
  if (restartNever) {
    spec.set("restartPolicy", SpecValue("Never").withComment(
        "A failed reducer is replaced by its Job (backoffLimit, podFailurePolicy above)."));
  }
  SpecValue nodeSelector = SpecValue::map({{"node.kubernetes.io/instance-type", plan.reducerMachineType}});
  if (plan.spotReducers) nodeSelector.set(kGkeSpotKey, "true");
  spec.set("automountServiceAccountToken", false)
      .set("terminationGracePeriodSeconds", SpecValue(kTerminationGraceSeconds).withComment(
          "Above the daemon's 60 s drain after SIGTERM."))
      .set("nodeSelector", std::move(nodeSelector));
  if (plan.spotReducers) {
    SpecValue spotTaint = SpecValue::map(
        {{"key", kGkeSpotKey}, {"operator", "Equal"}, {"value", "true"}, {"effect", "NoSchedule"}});
    spec.set("tolerations",
             SpecValue::list({std::move(spotTaint)})
                 .withComment("On GKE Spot VMs (--reducer-capacity spot): the nodeSelector above picks them\n"
                              "and this tolerates their taint (harmless where a Standard pool has none). A\n"
                              "preempted node gives its pods about 15 s, not the grace period above: the drain\n"
                              "is cut short, and the workers move its share to the other reducers (README,\n"
                              "\"Security and operations\")."));
  }
  spec.set("affinity",
           SpecValue::map({{"podAntiAffinity",
                            SpecValue::map({{"requiredDuringSchedulingIgnoredDuringExecution",
                                             SpecValue::list({SpecValue::map({
                                                 {"labelSelector",
                                                  SpecValue::map({{"matchLabels", reducerLabels(plan)}})},
                                                 {"topologyKey", "kubernetes.io/hostname"},
                                             })})}})}})
               .withComment("One reducer per node: each needs the node's whole network bandwidth."))
      .set("securityContext", SpecValue::map({{"runAsNonRoot", true},
                                              {"runAsUser", kReducerUid},
                                              {"runAsGroup", kReducerUid},
                                              {"fsGroup", kReducerUid},
                                              {"seccompProfile", SpecValue::map({{"type", "RuntimeDefault"}})}}))
      .set("containers", SpecValue::list({reducerContainer(plan, *resources, secretSource)}))
      .set("volumes", SpecValue::list({secretVolume(secretName, kReducerSecretMode)})
                          .withComment(fmt::format("Secret {} (key {}), created before this file is applied; defaultMode\n"
                                                   "{} is mode 0{:o} (YAML has no octal that 1.1 and 1.2 read alike).",
                                                   secretName, kSecretKey, kReducerSecretMode, kReducerSecretMode)));
  return SpecValue::map({
      {"metadata",
       SpecValue::map({{"labels", reducerLabels(plan)},
                       {"annotations", SpecValue::map({{"prometheus.io/scrape", "true"},
                                                       {"prometheus.io/port", std::to_string(plan.metricsPort)},
                                                       {"prometheus.io/path", "/metrics"}})}})},
      {"spec", std::move(spec)},
  });
}

// An Indexed Job of `count` pods: pod i has hostname <jobset>-<name>-0-<i>. Its first failed
// pod fails it (and the JobSet's failurePolicy restarts the set).
SpecValue indexedJob(int count, SpecValue podTemplate) {
  return SpecValue::map({{"spec", SpecValue::map({{"parallelism", count},
                                                  {"completions", count},
                                                  {"completionMode", "Indexed"},
                                                  {"backoffLimit", 0},
                                                  {"template", std::move(podTemplate)}})}});
}

// The reducers' Indexed Job: a failed reducer is no failed job (the workers move its share to
// the others, proto/FAILOVER.md), so the Job replaces the pod under the same name rather than
// fail the set: a pod lost to preemption or eviction (condition DisruptionTarget) uncounted,
// and up to one crash per reducer in all.
SpecValue reducersIndexedJob(int count, SpecValue podTemplate) {
  SpecValue disruption = SpecValue::map(
      {{"action", "Ignore"},
       {"onPodConditions", SpecValue::list({SpecValue::map({{"type", "DisruptionTarget"}, {"status", "True"}})})}});
  return SpecValue::map(
      {{"spec",
        SpecValue::map(
            {{"parallelism", count},
             {"completions", count},
             {"completionMode", "Indexed"},
             {"backoffLimit", SpecValue(count).withComment(
                                  "Crashed reducers replaced, this many in all, before the Job fails and the\n"
                                  "JobSet restarts the set: the workers go on without a lost reducer meanwhile\n"
                                  "(README, \"Security and operations\"), and do not take its replacement back\n"
                                  "before the job restarts.")},
             {"podFailurePolicy",
              SpecValue::map({{"rules", SpecValue::list({std::move(disruption)})}})
                  .withComment("A reducer preempted (Spot) or evicted is replaced without counting.")},
             {"template", std::move(podTemplate)}})}});
}

// JobSet's DNS names (network.enableDNSHostnames): <jobset>-<replicatedJob>-<job>-<pod>.<subdomain>,
// the subdomain defaulting to the JobSet's name.
std::string podHost(const EmitPlan& plan, std::string_view replicatedJob, int index) {
  return fmt::format("{}-{}-0-{}.{}", plan.jobName, replicatedJob, index, plan.jobName);
}

// A named object of the standing pool, labelled as its reducers are.
SpecValue poolObject(const char* apiVersion, const char* kind, const EmitPlan& plan, SpecValue spec) {
  return SpecValue::map({{"apiVersion", apiVersion},
                         {"kind", kind},
                         {"metadata", SpecValue::map({{"name", plan.jobName}, {"labels", reducerLabels(plan)}})},
                         {"spec", std::move(spec)}});
}

// RS_REDUCERS for the plan's R reducers, reducer i reached at host(i).
template <typename HostOf>
std::string reducerList(const EmitPlan& plan, HostOf host) {
  std::string list;
  for (int i = 0; i < plan.reducers; ++i) list += fmt::format("{}{}:{}", i == 0 ? "" : ",", host(i), plan.dataPort);
  return list;
}

SpecValue workerPodTemplate(const EmitPlan& plan) {
  const std::string reducers = reducerList(plan, [&](int i) { return podHost(plan, "reducers", i); });
  SpecValue command = SpecValue::list({
      "torchrun",
      fmt::format("--nnodes={}", plan.workers),
      fmt::format("--nproc-per-node={}", std::max(1, plan.acceleratorCount)),
      "--node-rank=$(JOB_COMPLETION_INDEX)",
      fmt::format("--master-addr={}", podHost(plan, "workers", 0)),
      fmt::format("--master-port={}", kMasterPort),
      plan.trainScript,
  });
  SpecValue container = SpecValue::map({
      {"name", "trainer"},
      {"image", plan.workerImage},
      {"command", std::move(command)},
      {"env",
       SpecValue::list({
           SpecValue::map({{"name", "JOB_COMPLETION_INDEX"},
                           {"valueFrom", SpecValue::map({{"fieldRef", SpecValue::map({{"fieldPath",
                                             "metadata.annotations['batch.kubernetes.io/job-completion-index']"}})}})}})
               .withComment("This worker's index in the Indexed Job: torchrun's --node-rank."),
           SpecValue::map({{"name", "NCCL_NET_PLUGIN"}, {"value", "reduction-server"}}),
           SpecValue::map({{"name", "NCCL_COLLNET_ENABLE"}, {"value", "1"}}),
           SpecValue::map({{"name", "RS_LINK_GBPS"}, {"value", linkGbpsText(plan.workerLinkGbps)}})
               .withComment("Streams paced to the worker machine type's egress (rs-sizer's table)."),
           SpecValue::map({{"name", "RS_REDUCER_LINK_GBPS"}, {"value", linkGbpsText(plan.reducerLinkGbps)}})
               .withComment("And to each reducer's 1/W of the reducer machine type's."),
           SpecValue::map({{"name", "RS_REDUCERS"}, {"value", reducers}})
               .withComment("Every reducer of this JobSet, by its stable DNS name."),
           secretEnv().withComment("This job's secret, the same file as the reducers'."),
       })},
  });
  if (plan.acceleratorCount > 0) {
    container.set("resources", SpecValue::map({{"limits", SpecValue::map({{"nvidia.com/gpu",
                                                                          std::to_string(plan.acceleratorCount)}})}}));
  }
  container.set("volumeMounts", SpecValue::list({SpecValue::map({{"name", "dshm"}, {"mountPath", "/dev/shm"}}),
                                                  secretMount()}));
  return SpecValue::map({
      {"metadata", SpecValue::map({{"labels", SpecValue::map({{"app.kubernetes.io/name", "reduction-server"},
                                                               {"app.kubernetes.io/component", "worker"},
                                                               {"app.kubernetes.io/instance", plan.jobName}})}})},
      {"spec",
       SpecValue::map({
           {"restartPolicy", "Never"},
           {"nodeSelector", SpecValue::map({{"node.kubernetes.io/instance-type", plan.workerMachineType}})},
           {"containers", SpecValue::list({std::move(container)})},
           {"volumes", SpecValue::list({SpecValue::map({{"name", "dshm"},
                                                        {"emptyDir", SpecValue::map({{"medium", "Memory"}})}})
                                            .withComment("NCCL and PyTorch's data loaders need more shared memory "
                                                         "than the default 64 MiB."),
                                        secretVolume(kubernetesJobSecretName(plan), kWorkerSecretMode)
                                            .withComment(fmt::format(
                                                "Secret {} (key {}), the reducers' too; defaultMode {} is mode 0{:o}:\n"
                                                "the training image's user is not known here, and only this pod sees it.",
                                                kubernetesJobSecretName(plan), kSecretKey, kWorkerSecretMode,
                                                kWorkerSecretMode))})},
       })},
  });
}

}  // namespace

Result<std::string> emitKubernetesJobSet(const EmitPlan& plan) {
  RS_RETURN_IF_ERROR(validatePlan(plan));
  const std::string secretName = kubernetesJobSecretName(plan);
  auto reducerPod = reducerPodTemplate(plan, /*restartNever=*/true, secretName,
                                       "This job's secret, from Secret " + secretName + ".");
  if (!reducerPod) return reducerPod.status();
  SpecValue reducersJob = SpecValue::map({{"name", "reducers"},
                                          {"replicas", 1},
                                          {"template", reducersIndexedJob(plan.reducers, std::move(*reducerPod))}});
  SpecValue workersJob = SpecValue::map({
      {"name", "workers"},
      {"replicas", 1},
      {"dependsOn", SpecValue::list({SpecValue::map({{"name", "reducers"}, {"status", "Ready"}})})
                        .withComment("Created once every reducer is Ready (its health check answers SERVING).")},
      {"template", indexedJob(plan.workers, workerPodTemplate(plan))},
  });
  SpecValue jobSet = SpecValue::map({
      {"apiVersion", "jobset.x-k8s.io/v1alpha2"},
      {"kind", "JobSet"},
      {"metadata", SpecValue::map({{"name", plan.jobName}})},
      {"spec",
       SpecValue::map({
           {"successPolicy", SpecValue::map({{"operator", "All"},
                                             {"targetReplicatedJobs", SpecValue::list({"workers"})}})
                                 .withComment("Done when every worker has succeeded; JobSet then deletes the\n"
                                              "reducers (SIGTERM: they drain and exit).")},
           {"failurePolicy", SpecValue::map({{"maxRestarts", 3}})
                                 .withComment("A failed worker restarts the whole set (training resumes from its\n"
                                              "checkpoint), at most this often; so does the reducers' Job once it\n"
                                              "fails (below).")},
           {"network", SpecValue::map({{"enableDNSHostnames", true}, {"publishNotReadyAddresses", true}})},
           {"replicatedJobs", SpecValue::list({std::move(reducersJob), std::move(workersJob)})},
       })},
  });
  return yamlStream(headerText(plan, {"A JobSet (needs the JobSet controller, 0.8 or later). First this job's own",
                                      "random secret, which every pod mounts (deploy/README.md), then the JobSet:",
                                      fmt::format("kubectl create secret generic {} --from-literal={}=$(openssl rand -hex 32)",
                                                  secretName, kSecretKey),
                                      "kubectl apply -f THIS_FILE"}),
                    {jobSet});
}

Result<std::string> emitKubernetesReducerPool(const EmitPlan& plan) {
  RS_RETURN_IF_ERROR(validatePlan(plan));
  const std::string secretName = kubernetesPoolSecretName(plan);
  auto pod = reducerPodTemplate(plan, /*restartNever=*/false, secretName,
                                "The pool's secret, from Secret " + secretName + ": never give it to a job.");
  if (!pod) return pod.status();
  // StatefulSet pod i is <name>-<i>, and the headless Service of the same name its subdomain.
  const std::string reducers =
      reducerList(plan, [&](int i) { return fmt::format("{}-{}.{}", plan.jobName, i, plan.jobName); });
  const SpecValue labels = reducerLabels(plan);
  SpecValue service = poolObject("v1", "Service", plan, SpecValue::map({
      {"clusterIP", SpecValue("None").withComment(
                        "Headless: each reducer keeps its own DNS name, <pod>.<service>.")},
      {"publishNotReadyAddresses", SpecValue(true).withComment(
                                       "The names exist from the start: the worker list is fixed.")},
      {"selector", labels},
      {"ports", SpecValue::list({
                    SpecValue::map({{"name", "data"}, {"port", plan.dataPort}, {"targetPort", "data"}}),
                    SpecValue::map({{"name", "grpc"}, {"port", plan.dataPort + 1}, {"targetPort", "grpc"}}),
                    SpecValue::map({{"name", "metrics"}, {"port", plan.metricsPort}, {"targetPort", "metrics"}}),
                })},
  }));
  SpecValue statefulSet = poolObject("apps/v1", "StatefulSet", plan, SpecValue::map({
      {"serviceName", plan.jobName},
      {"replicas", plan.reducers},
      {"podManagementPolicy", SpecValue("Parallel").withComment(
                                  "Reducers are peers: start and replace them all at once.")},
      {"selector", SpecValue::map({{"matchLabels", labels}})},
      {"template", std::move(*pod)},
  }));
  SpecValue budget = poolObject("policy/v1", "PodDisruptionBudget", plan, SpecValue::map({
      {"maxUnavailable", SpecValue(1).withComment("A reducer that leaves aborts the collectives in flight through it:\n"
                                                  "let node drains take one at a time.")},
      {"selector", SpecValue::map({{"matchLabels", labels}})},
  }));
  return yamlStream(headerText(plan, {"A standing reducer pool. First its random secret, then the pool (deploy/README.md):",
                                      fmt::format("kubectl create secret generic {} --from-literal={}=$(openssl rand -hex 32)",
                                                  secretName, kSecretKey),
                                      "kubectl apply -k THIS_FOLDER (kustomization.yaml)",
                                      "Workers in the same namespace set:",
                                      "RS_REDUCERS=" + reducers,
                                      fmt::format("RS_LINK_GBPS={} ({}'s egress; workers of another type, theirs),",
                                                  linkGbpsText(plan.workerLinkGbps), plan.workerMachineType),
                                      fmt::format("RS_REDUCER_LINK_GBPS={} ({}'s egress),",
                                                  linkGbpsText(plan.reducerLinkGbps), plan.reducerMachineType),
                                      "and RS_JOB (the job's name) and RS_SECRET_FILE (a file of that job's own secret,",
                                      "from reduction-server --derive-job-secret JOB: deploy/README.md)."}),
                    {service, statefulSet, budget});
}

}  // namespace rs::sizer
