#!/usr/bin/env python3
# Made by rs-sizer --emit (sizer/emit) for this plan:
#   workers:  8 x a2-megagpu-16g (16 x NVIDIA_TESLA_A100 each), paced to 100 Gbit/s (RS_LINK_GBPS)
#   reducers: 25 x n1-highcpu-16, paced to 32 Gbit/s (--link-gbps; the workers' RS_REDUCER_LINK_GBPS)
# Capacity: every pool on standard VMs. Vertex AI sets Spot for a whole CustomJob (its
# CustomJobSpec's scheduling.strategy SPOT; a worker pool has no such field), so the reducers
# cannot be Spot while the GPU workers are standard. Spot reducers alone: Kubernetes (rs-sizer
# --platform gke --reducer-capacity spot).
# Change the plan and emit again rather than editing the counts here (deploy/README.md).
#
# Submits the job of custom-job.yaml through the Vertex AI SDK (pip install google-cloud-aiplatform),
# with a fresh random job secret in every pool's RS_SECRET, as create-job.sh does:
#   submit_job.py --project=my-project --staging-bucket=gs://my-bucket
"""Submits a training job with a Reduction Server pool to Vertex AI."""
import argparse
import copy
import secrets

from google.cloud import aiplatform

# custom-job.yaml's pools: 0 the primary worker, 1 the other workers, 2 the reducers.
WORKER_POOL_SPECS = [
  {
    "machine_spec": {
      "machine_type": "a2-megagpu-16g",
      "accelerator_type": "NVIDIA_TESLA_A100",
      "accelerator_count": 16
    },
    "replica_count": 1,
    "disk_spec": {
      "boot_disk_type": "pd-ssd",
      "boot_disk_size_gb": 100
    },
    "container_spec": {
      "image_uri": "us-docker.pkg.dev/my-project/reduction-server/trainer-rs:latest",
      "env": [
        {
          "name": "NCCL_NET_PLUGIN",
          "value": "reduction-server"
        },
        {
          "name": "NCCL_COLLNET_ENABLE",
          "value": "1"
        },
        {
          "name": "RS_LINK_GBPS",
          "value": "100"
        },
        {
          "name": "RS_REDUCER_LINK_GBPS",
          "value": "32"
        }
      ]
    }
  },
  {
    "machine_spec": {
      "machine_type": "a2-megagpu-16g",
      "accelerator_type": "NVIDIA_TESLA_A100",
      "accelerator_count": 16
    },
    "replica_count": 7,
    "disk_spec": {
      "boot_disk_type": "pd-ssd",
      "boot_disk_size_gb": 100
    },
    "container_spec": {
      "image_uri": "us-docker.pkg.dev/my-project/reduction-server/trainer-rs:latest",
      "env": [
        {
          "name": "NCCL_NET_PLUGIN",
          "value": "reduction-server"
        },
        {
          "name": "NCCL_COLLNET_ENABLE",
          "value": "1"
        },
        {
          "name": "RS_LINK_GBPS",
          "value": "100"
        },
        {
          "name": "RS_REDUCER_LINK_GBPS",
          "value": "32"
        }
      ]
    }
  },
  {
    "machine_spec": {
      "machine_type": "n1-highcpu-16"
    },
    "replica_count": 25,
    "disk_spec": {
      "boot_disk_type": "pd-ssd",
      "boot_disk_size_gb": 100
    },
    "container_spec": {
      "image_uri": "us-docker.pkg.dev/my-project/reduction-server/reduction-server:0.1.0",
      "args": [
        "--link-gbps",
        "32"
      ],
      "env": [
        {
          "name": "RS_LOG_FORMAT",
          "value": "json"
        }
      ]
    }
  }
]


def with_secret(pools, secret):
    """The pools, every container given the job secret in RS_SECRET."""
    pools = copy.deepcopy(pools)
    for pool in pools:
        pool["container_spec"].setdefault("env", []).append({"name": "RS_SECRET", "value": secret})
    return pools


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--project", required=True)
    parser.add_argument("--region", default="us-central1")
    parser.add_argument("--staging-bucket", required=True, help="gs:// folder for the job's files")
    args = parser.parse_args()

    # This job's own secret: the reducers accept only workers that hold it. It lives in the
    # job's spec (readable by whoever may view the job) and in no file (deploy/README.md).
    secret = secrets.token_hex(32)
    aiplatform.init(project=args.project, location=args.region, staging_bucket=args.staging_bucket)
    # CustomJob rather than CustomContainerTrainingJob.run(reduction_server_...): that one
    # gives the reducers' pool no environment, so no secret.
    job = aiplatform.CustomJob(
        display_name="rs-train",
        worker_pool_specs=with_secret(WORKER_POOL_SPECS, secret),
    )
    job.run()


if __name__ == "__main__":
    main()
