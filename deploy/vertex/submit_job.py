#!/usr/bin/env python3
# Made by rs-sizer --emit (sizer/emit) for this plan:
#   workers:  8 x a2-megagpu-16g (16 x NVIDIA_TESLA_A100 each)
#   reducers: 25 x n1-highcpu-16
# Change the plan and emit again rather than editing the counts here (deploy/README.md).
#
# Submits the job of custom-job.yaml through the Vertex AI SDK (pip install google-cloud-aiplatform):
#   submit_job.py --project=my-project --staging-bucket=gs://my-bucket
"""Submits a training job with a Reduction Server pool to Vertex AI."""
import argparse

from google.cloud import aiplatform


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--project", required=True)
    parser.add_argument("--region", default="us-central1")
    parser.add_argument("--staging-bucket", required=True, help="gs:// folder for the job's files")
    args = parser.parse_args()

    aiplatform.init(project=args.project, location=args.region, staging_bucket=args.staging_bucket)
    job = aiplatform.CustomContainerTrainingJob(
        display_name="rs-train",
        container_uri="us-docker.pkg.dev/my-project/reduction-server/trainer-rs:latest",
    )
    # replica_count counts every worker: the SDK puts 1 in pool 0 and the rest in pool 1.
    job.run(
        replica_count=8,
        machine_type="a2-megagpu-16g",
        accelerator_type="NVIDIA_TESLA_A100",
        accelerator_count=16,
        boot_disk_type="pd-ssd",
        boot_disk_size_gb=100,
        environment_variables={"NCCL_NET_PLUGIN": "reduction-server", "NCCL_COLLNET_ENABLE": "1"},
        reduction_server_replica_count=25,
        reduction_server_machine_type="n1-highcpu-16",
        reduction_server_container_uri="us-docker.pkg.dev/my-project/reduction-server/reduction-server:0.1.0",
    )


if __name__ == "__main__":
    main()
