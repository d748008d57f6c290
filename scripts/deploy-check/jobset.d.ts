// JobSet (jobset.x-k8s.io/v1alpha2) as TypeScript types, so that scripts/check-deploy.sh checks a
// JobSet as strictly as kubernetes-types checks the built-in kinds: a misspelled field, a wrong
// type, a value outside an enum or a missing required field fails to compile.
//
// Written from kubernetes-sigs/jobset v0.12.0: api/jobset/v1alpha2/jobset_types.go and the CRD
// schema it generates (config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml), whose
// `required` lists and enums are kept here. The job template is kubernetes-types' own
// JobTemplateSpec. Fields only the controller writes (status) are left out: a spec has none.
import type { ObjectMeta } from "kubernetes-types/meta/v1";
import type { JobTemplateSpec } from "kubernetes-types/batch/v1";
import type { PersistentVolumeClaim } from "kubernetes-types/core/v1";

export interface JobSet {
  apiVersion?: "jobset.x-k8s.io/v1alpha2";
  kind?: "JobSet";
  metadata?: ObjectMeta;
  spec?: JobSetSpec;
}

export interface JobSetSpec {
  replicatedJobs?: ReplicatedJob[];
  network?: Network;
  successPolicy?: SuccessPolicy;
  failurePolicy?: FailurePolicy;
  /** Deprecated since JobSet 0.8 in favour of replicatedJobs[].dependsOn. */
  startupPolicy?: StartupPolicy;
  suspend?: boolean;
  coordinator?: Coordinator;
  managedBy?: string;
  ttlSecondsAfterFinished?: number;
  volumeClaimPolicies?: VolumeClaimPolicy[];
}

export interface ReplicatedJob {
  name: string;
  /** Defaults to "default". */
  groupName?: string;
  template: JobTemplateSpec;
  /** Defaults to 1. */
  replicas?: number;
  /** JobSet 0.8 and later; not on the first ReplicatedJob; at most 5 (one supported today). */
  dependsOn?: DependsOn[];
}

export interface DependsOn {
  name: string;
  status: "Ready" | "Complete";
}

export interface Network {
  /** Pods are reachable as <jobSet>-<replicatedJob>-<job index>-<pod index>.<subdomain>. */
  enableDNSHostnames?: boolean;
  /** Defaults to the JobSet's name. */
  subdomain?: string;
  publishNotReadyAddresses?: boolean;
}

export interface SuccessPolicy {
  operator: "All" | "Any";
  targetReplicatedJobs?: string[];
}

export interface FailurePolicy {
  maxRestarts?: number;
  restartStrategy?: "Recreate" | "BlockingRecreate" | "InPlaceRestart";
  rules?: FailurePolicyRule[];
}

export interface FailurePolicyRule {
  name: string;
  action: "FailJobSet" | "RestartJobSet" | "RestartJobSetAndIgnoreMaxRestarts" | "RestartJob" |
    "RestartJobAndIgnoreMaxRestarts";
  onJobFailureReasons?: string[];
  onJobFailureMessagePatterns?: string[];
  targetReplicatedJobs?: string[];
}

export interface StartupPolicy {
  startupPolicyOrder: "AnyOrder" | "InOrder";
}

export interface Coordinator {
  replicatedJob: string;
  jobIndex?: number;
  podIndex?: number;
}

export interface VolumeClaimPolicy {
  templates?: PersistentVolumeClaim[];
  retentionPolicy?: VolumeRetentionPolicy;
}

export interface VolumeRetentionPolicy {
  whenDeleted?: "Delete" | "Retain";
}
