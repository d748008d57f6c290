#!/usr/bin/env bash
# Made by rs-sizer --emit (sizer/emit) for this plan:
#   workers:  8 x a2-megagpu-16g (16 x NVIDIA_TESLA_A100 each), paced to 100 Gbit/s (RS_LINK_GBPS)
#   reducers: 25 x n1-highcpu-16, paced to 32 Gbit/s (--link-gbps; the workers' RS_REDUCER_LINK_GBPS)
# Capacity: every pool on standard VMs. Vertex AI sets Spot for a whole CustomJob (its
# CustomJobSpec's scheduling.strategy SPOT; a worker pool has no such field), so the reducers
# cannot be Spot while the GPU workers are standard. Spot reducers alone: Kubernetes (rs-sizer
# --platform gke --reducer-capacity spot).
# Change the plan and emit again rather than editing the counts here (deploy/README.md).
#
# Creates the Vertex AI custom job of custom-job.yaml (the same plan, rs-sizer --emit vertex-yaml)
# with a fresh random job secret in every pool's RS_SECRET: the reducers accept only this job's
# workers. The secret is in the job's spec, which whoever may view the job can read, and in no
# file here (deploy/README.md, "The job secret").
#   create-job.sh [CONFIG.yaml] [more gcloud flags, e.g. --project=my-project]
set -euo pipefail
config=$(dirname "$0")/custom-job.yaml
if (($# > 0)) && [[ $1 != -* ]]; then config=$1; shift; fi  # a first argument that is no flag
umask 077
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
gcloud ai custom-jobs create \
  --region=us-central1 \
  --display-name=rs-train \
  --config="$job" \
  "$@"
