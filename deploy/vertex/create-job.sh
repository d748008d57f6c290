#!/usr/bin/env bash
# Made by rs-sizer --emit (sizer/emit) for this plan:
#   workers:  8 x a2-megagpu-16g (16 x NVIDIA_TESLA_A100 each)
#   reducers: 25 x n1-highcpu-16
# Change the plan and emit again rather than editing the counts here (deploy/README.md).
#
# Creates the Vertex AI custom job of custom-job.yaml (the same plan, rs-sizer --emit vertex-yaml).
#   create-job.sh [CONFIG.yaml] [more gcloud flags, e.g. --project=my-project]
set -euo pipefail
config=${1:-$(dirname "$0")/custom-job.yaml}
if (($# > 0)); then shift; fi
exec gcloud ai custom-jobs create \
  --region=us-central1 \
  --display-name=rs-train \
  --config="$config" \
  "$@"
