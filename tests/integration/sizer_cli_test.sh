#!/usr/bin/env bash
# rs-sizer as a user and a script meet it: Vertex AI's two worked examples in text and JSON, a
# CPU-bound pool, --recommend with a prices file, and every bad input refused with a non-zero
# exit and a message that names it.
#   sizer_cli_test.sh <rs-sizer binary>
set -euo pipefail
sizer=$1
command -v jq >/dev/null || { echo "FAILED: jq is needed (scripts/install-deps.sh installs it)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAILED: $*"; exit 1; }

expect_fail() {  # <expected text> <args...>
  local want=$1; shift
  local out code=0
  out=$("$sizer" "$@" 2>&1) || code=$?
  [[ $code -ne 0 ]] || fail "expected a non-zero exit for: $*"
  grep -qF -- "$want" <<<"$out" || { echo "FAILED: '$want' not in the output of $*:"; echo "$out"; exit 1; }
  echo "ok: refused $* ($want)"
}

expect_json() {  # <jq expression that must print true> <args...>
  local expr=$1; shift
  local out
  out=$("$sizer" --json "$@") || fail "exit $? for --json $*"
  [[ $(jq -r "$expr" <<<"$out") == true ]] || { echo "FAILED: $expr on --json $*:"; echo "$out"; exit 1; }
  echo "ok: $* -> $expr"
}

# --version: version, commit, build type, SIMD target.
version=$("$sizer" --version)
grep -qE '^rs-sizer [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12}(-dirty)?|unknown), [A-Za-z+]+, SIMD [A-Z0-9_]+\)$' <<<"$version" \
  || fail "--version printed '$version'"
echo "ok: $version"

# Vertex AI's worked examples: 5 workers at 100 Gbit/s need 16 n1-highcpu-16; 8 a2-megagpu-16g
# need 25.
out=$("$sizer" --workers 5 --worker-gbps 100)
grep -qF "Answer: 16 x n1-highcpu-16 (the bandwidth bound binds)" <<<"$out" || { echo "$out"; fail "example 1 (text)"; }
echo "ok: $(grep Answer <<<"$out")"
expect_json '.reducers == 16 and .reducer_type == "n1-highcpu-16" and .binding_bound == "bandwidth"
             and .bandwidth_bound == 16 and .cpu_bound == 6 and .workers == 5 and .worker_gbps == 100
             and .reducer_gbps == 32 and .reducer_vcpus == 16 and .platform == "vertex" and .tier1 == false
             and .vcpu_per_10gbps == 1.7 and (.vcpu_per_10gbps_source | contains("bench/RESULTS.md"))' \
  --workers 5 --worker-gbps 100
out=$("$sizer" --workers 8 --worker-type a2-megagpu-16g)
grep -qF "Answer: 25 x n1-highcpu-16 (the bandwidth bound binds)" <<<"$out" || { echo "$out"; fail "example 2 (text)"; }
echo "ok: $(grep Answer <<<"$out")"
expect_json '.reducers == 25 and .bandwidth_bound == 25 and .cpu_bound == 9 and .worker_type == "a2-megagpu-16g"
             and .worker_egress_gbps == 100 and .plan.accelerator_type == "NVIDIA_TESLA_A100"
             and .plan.accelerator_count == 16 and .plan.reducer_count == 25
             and .plan.worker_link_gbps == 100 and .plan.reducer_link_gbps == 32' \
  --workers 8 --worker-type a2-megagpu-16g

# The CPU bound binds where a shape has more egress than its vCPUs can serve: at the default
# 1.7 vCPU per 10 Gbit/s no type in the table does (c3-highcpu-4: 23 Gbit/s, its 4 vCPUs carry
# 23.5; the bounds tie at 22, and a tie is the bandwidth's), at 2.2 c3-highcpu-4 does.
expect_json '.reducers == 22 and .binding_bound == "bandwidth" and .cpu_bound == 22' \
  --workers 5 --worker-gbps 100 --reducer-type c3-highcpu-4
expect_json '.reducers == 28 and .binding_bound == "cpu" and .bandwidth_bound == 22 and .cpu_bound == 28' \
  --workers 5 --worker-gbps 100 --reducer-type c3-highcpu-4 --vcpu-per-10gbps 2.2
# Predictions for R, R/2, R/4; Tier_1 on GKE; an overridden CPU cost.
expect_json '[.predictions[].reducers] == [25, 13, 7] and .predictions[0].speedup > 1.7
             and .predictions[2].speedup < 0.5 and .gradient_bytes == 1073741824' \
  --workers 8 --worker-type a2-megagpu-16g --gradient-bytes 1GiB
expect_json '.reducers == 8 and .reducer_gbps == 100 and .tier1 == true and .platform == "gke"' \
  --workers 8 --worker-gbps 100 --reducer-type c3-highcpu-88 --platform gke --tier1
expect_json '.cpu_bound == 22 and .vcpu_per_10gbps_source == "--vcpu-per-10gbps"' \
  --workers 8 --worker-gbps 100 --vcpu-per-10gbps 4.4
expect_json '.ring_over_gpu_nics_seconds < .predictions[0].pool_seconds and .worker_egress_gbps == 400' \
  --workers 4 --worker-type a3-ultragpu-8g --gradient-bytes 1GiB
# --transport rdma: the same bounds at TCP's CPU cost, said to be unmeasured for RDMA, until a
# measured cost is given (8 x 200 Gbit/s on 16-vCPU, 200 Gbit/s reducers: CPU-bound at 17).
rdma=(--workers 8 --worker-gbps 200 --reducer-gbps 200 --reducer-vcpus 16)
expect_json '.transport == "tcp" and .vcpu_per_10gbps_measured_for_transport and .cpu_bound == 17' "${rdma[@]}"
expect_json '.transport == "rdma" and (.vcpu_per_10gbps_measured_for_transport | not) and .cpu_bound == 17
             and .reducers == 17 and .binding_bound == "cpu" and .vcpu_per_10gbps == 1.7
             and (.vcpu_per_10gbps_source | contains("not measured by this project"))' "${rdma[@]}" --transport rdma
expect_json '.transport == "rdma" and .vcpu_per_10gbps_measured_for_transport and .cpu_bound == 4
             and .reducers == 8 and .binding_bound == "bandwidth"' "${rdma[@]}" --transport rdma --vcpu-per-10gbps 0.4
out=$("$sizer" "${rdma[@]}" --transport rdma)
grep -qF "so the CPU bound is not relaxed" <<<"$out" || { echo "$out"; fail "--transport rdma (text)"; }
echo "ok: --transport rdma says its CPU bound is TCP's, not measured for RDMA"

# --recommend, ranked by vCPUs and, with a prices file, by cost.
cat >"$tmp/prices.csv" <<'EOF'
# dollars per hour, made up for the test
n1-highcpu-16,0.57
c3-highcpu-4, 0.17   # cheap, and the most egress per vCPU
EOF
expect_json '(.recommendations.by_total_vcpus | length) > 100
             and .recommendations.by_cost_per_hour[0].reducer_type == "c3-highcpu-4"
             and .recommendations.by_cost_per_hour[0].binding_bound == "bandwidth"
             and .recommendations.by_cost_per_hour[1].cost_per_hour == 14.25 and .cost_per_hour == 14.25' \
  --workers 8 --worker-type a2-megagpu-16g --recommend --prices "$tmp/prices.csv"
"$sizer" --workers 8 --worker-type a2-megagpu-16g --recommend --prices "$tmp/prices.csv" \
  | grep -F "By cost per hour" >/dev/null || fail "text --recommend --prices"
expect_json '(.machine_types | length) > 100 and all(.machine_types[]; .source != "")' --list-types

# Spares: the pool launched is the bounds' answer and N more, and what it carries as reducers
# are lost (none, one, N, N + 1) is in the report; the bounds themselves do not move.
out=$("$sizer" --workers 8 --worker-type a2-megagpu-16g --spare 2)
grep -qF "Answer: 27 x n1-highcpu-16 (25 for the bandwidth bound, which binds, and 2 spares)" <<<"$out" ||
  { echo "$out"; fail "--spare 2 (text)"; }
grep -qF "The 2 spares keep the pool at its bound through 2 losses: the 25 reducers left carry all 800 Gbit/s." <<<"$out" ||
  { echo "$out"; fail "--spare 2: what the spares buy"; }
grep -qF "the collectives in flight complete" <<<"$out" || { echo "$out"; fail "--spare 2: the report does not say what failover does"; }
echo "ok: $(grep Answer <<<"$out")"
expect_json '.reducers == 25 and .spares == 2 and .pool_reducers == 27 and .bandwidth_bound == 25
             and .total_reducer_vcpus == 432 and .plan.reducer_count == 27 and .plan.spare_reducers == 2
             and [.losses[].lost] == [0, 1, 2, 3] and [.losses[].live] == [27, 26, 25, 24]
             and .losses[2].carried_fraction == 1 and .losses[3].carried_gbps == 768
             and .reducer_capacity == "standard" and .plan.spot_reducers == false' \
  --workers 8 --worker-type a2-megagpu-16g --spare 2
expect_json '.spares == 0 and .pool_reducers == 16 and (.losses | length) == 2 and .losses[1].carried_gbps == 480' \
  --workers 5 --worker-gbps 100
expect_json '.reducer_capacity == "spot" and .plan.spot_reducers == true and .pool_reducers == 26' \
  --workers 8 --worker-type a2-megagpu-16g --platform gke --reducer-capacity spot --spare 1
out=$("$sizer" --workers 8 --worker-type a2-megagpu-16g)
grep -qF "Capacity:  standard VMs: Vertex AI sets Spot for a whole CustomJob" <<<"$out" ||
  { echo "$out"; fail "the Vertex AI report does not say Spot is set for the whole job"; }
echo "ok: the Vertex AI report says Spot is job-wide"

# Bad inputs: each a non-zero exit and a message naming the input.
expect_fail "--spare must be 0..1000 (reducers launched beyond what the bounds call for), got -1" \
  --workers 8 --worker-type a2-megagpu-16g --spare -1
expect_fail "--spare must be 0..1000" --workers 8 --worker-type a2-megagpu-16g --spare 1001
expect_fail "--spare must be 0..1000" --workers 8 --worker-type a2-megagpu-16g --spare 9223372036854775807
expect_fail "--spare: '2.5' is not a whole number" --workers 8 --worker-type a2-megagpu-16g --spare 2.5
expect_fail "--spare: 'two' is not a whole number" --workers 8 --worker-type a2-megagpu-16g --spare two
expect_fail "--spare: '99999999999999999999' is not a whole number" --workers 8 --worker-type a2-megagpu-16g \
  --spare 99999999999999999999
expect_fail "--reducer-capacity spot with --platform vertex: Vertex AI sets Spot for a whole CustomJob (its CustomJobSpec's scheduling.strategy SPOT" \
  --workers 8 --worker-type a2-megagpu-16g --reducer-capacity spot
expect_fail "--reducer-capacity: 'preemptible' is not one of standard, spot" --workers 8 --worker-type a2-megagpu-16g \
  --platform gke --reducer-capacity preemptible
expect_fail "Vertex AI's MachineSpec" --workers 5 --worker-gbps 100 --tier1
expect_fail "n1 series offers no Tier_1" --workers 5 --worker-gbps 100 --tier1 --platform gke
expect_fail "at least 30 vCPUs, this type has 16" --workers 5 --worker-gbps 100 --tier1 --platform gce --reducer-type n2-highcpu-16
expect_fail "unknown machine type 'a2-megagpu-16'" --workers 8 --worker-type a2-megagpu-16
expect_fail "a2-megagpu-16g" --workers 8 --worker-type a2-megagpu-16
expect_fail "--reducer-type: unknown machine type 'n1-highcpu16'" --workers 5 --worker-gbps 100 --reducer-type n1-highcpu16
expect_fail "reducers are CPU VMs" --workers 5 --worker-gbps 100 --reducer-type a2-highgpu-1g
expect_fail "--workers must be 1.." --workers 0 --worker-gbps 100
expect_fail "got -2" --workers -2 --worker-gbps 100
expect_fail "--workers: 'five' is not a whole number" --workers five --worker-gbps 100
expect_fail "--workers is required" --worker-gbps 100
expect_fail "--worker-gbps must be a positive number of Gbit/s, got -100" --workers 5 --worker-gbps -100
expect_fail "--worker-gbps must be a positive number of Gbit/s, got 0" --workers 5 --worker-gbps 0
expect_fail "--worker-gbps: '100Gbps' is not a number" --workers 5 --worker-gbps 100Gbps
expect_fail "--reducer-gbps must be a positive number of Gbit/s, got 0" --workers 5 --worker-gbps 100 --reducer-gbps 0 --reducer-vcpus 16
expect_fail "--reducer-gbps must be a positive number of Gbit/s, got -32" --workers 5 --worker-gbps 100 --reducer-gbps -32 --reducer-vcpus 16
expect_fail "--reducer-vcpus must be at least 1, got 0" --workers 5 --worker-gbps 100 --reducer-gbps 32 --reducer-vcpus 0
expect_fail "--transport: 'ib' is not one of tcp, rdma" --workers 5 --worker-gbps 100 --transport ib
expect_fail "--vcpu-per-10gbps must be a positive number, got 0" --workers 5 --worker-gbps 100 --vcpu-per-10gbps 0
expect_fail "--vcpu-per-10gbps: 'nan' is not a number" --workers 5 --worker-gbps 100 --vcpu-per-10gbps nan
# Rates beyond any host's NIC (8 x 1e308 overflowed to infinity and sized one reducer), and
# products that would overflow.
expect_fail "--worker-gbps must be 0.001..10000 Gbit/s (1 Mbit/s to 10 Tbit/s a host), got 1e+308" --workers 8 --worker-gbps 1e308
expect_fail "--worker-gbps must be 0.001..10000 Gbit/s" --workers 8 --worker-gbps 1e-300
expect_fail "--reducer-gbps must be 0.001..10000 Gbit/s" --workers 8 --worker-gbps 100 --reducer-gbps 1e308 --reducer-vcpus 16
expect_fail "--reducer-vcpus must be 1..100000" --workers 8 --worker-gbps 100 --reducer-gbps 32 --reducer-vcpus 4611686018427387904
expect_fail "--vcpu-per-10gbps must be at most 1000" --workers 8 --worker-gbps 100 --vcpu-per-10gbps 1e308
printf 'n1-highcpu-16,1e300\n' >"$tmp/huge.csv"
expect_fail "$tmp/huge.csv:1: price must be at most 100000 dollars per hour" --workers 5 --worker-gbps 100 --recommend --prices "$tmp/huge.csv"
expect_fail "--worker-type and --worker-gbps exclude each other" --workers 5 --worker-gbps 100 --worker-type a2-highgpu-8g
expect_fail "--reducer-gbps needs --reducer-vcpus" --workers 5 --worker-gbps 100 --reducer-gbps 32
expect_fail "--reducer-type excludes --reducer-gbps" --workers 5 --worker-gbps 100 --reducer-type n1-highcpu-16 --reducer-gbps 32 --reducer-vcpus 16
expect_fail "--gradient-bytes: 'lots' is not a byte size" --workers 5 --worker-gbps 100 --gradient-bytes lots
expect_fail "--platform: 'aws'" --workers 5 --worker-gbps 100 --platform aws
printf 'n1-highcpu-16,0.57\nn1-highcpu-32;1.1\nn1-highcpu-64,-3\n' >"$tmp/bad.csv"
expect_fail "$tmp/bad.csv:2: expected 'type,dollars_per_hour'" --workers 5 --worker-gbps 100 --recommend --prices "$tmp/bad.csv"
expect_fail "$tmp/bad.csv:3: price must be more than 0" --workers 5 --worker-gbps 100 --recommend --prices "$tmp/bad.csv"
expect_fail "--prices: cannot read '$tmp/none.csv'" --workers 5 --worker-gbps 100 --prices "$tmp/none.csv"
expect_fail "--no-such-flag" --workers 5 --worker-gbps 100 --no-such-flag
# --emit: the launch files for the pool just sized. deploy/'s files are this output for
# Vertex AI's two documented plans, through the real command line.
repo=$(cd "$(dirname "$0")/../.." && pwd)
images=(--worker-image us-docker.pkg.dev/my-project/reduction-server/trainer-rs:latest
        --reducer-image us-docker.pkg.dev/my-project/reduction-server/reduction-server:0.1.0)
for pair in vertex-yaml:vertex/custom-job.yaml vertex-json:vertex/custom-job.json \
            gcloud:vertex/create-job.sh vertex-python:vertex/submit_job.py k8s:k8s/training-jobset.yaml; do
  "$sizer" --workers 8 --worker-type a2-megagpu-16g --emit "${pair%%:*}" "${images[@]}" >"$tmp/emitted" ||
    fail "--emit ${pair%%:*} failed"
  cmp -s "$tmp/emitted" "$repo/deploy/${pair#*:}" || fail "deploy/${pair#*:} is not what --emit ${pair%%:*} writes"
  echo "ok: --emit ${pair%%:*} writes deploy/${pair#*:}"
done
"$sizer" --workers 5 --worker-type a2-highgpu-8g --emit k8s-pool --job-name reduction-server "${images[@]}" \
  >"$tmp/emitted" || fail "--emit k8s-pool failed"
cmp -s "$tmp/emitted" "$repo/deploy/k8s/reducer-pool/reducer-pool.yaml" ||
  fail "deploy/k8s/reducer-pool/reducer-pool.yaml is not what --emit k8s-pool writes"
grep -q "replicas: 16" "$tmp/emitted" || fail "the pool of 5 x 100 Gbps workers is not 16 reducers"
echo "ok: --emit k8s-pool writes deploy/k8s/reducer-pool/reducer-pool.yaml (16 reducers)"
# The launch files carry the pool with its spares; Spot reducers on GKE go to Spot nodes, and a
# Vertex AI file refuses them.
"$sizer" --workers 8 --worker-type a2-megagpu-16g --platform gke --reducer-capacity spot --spare 2 --emit k8s \
  "${images[@]}" >"$tmp/spot.yaml" || fail "--emit k8s with Spot reducers failed"
grep -q "completions: 27" "$tmp/spot.yaml" || fail "the emitted JobSet does not launch the 27 reducers"
grep -q 'cloud.google.com/gke-spot: "true"' "$tmp/spot.yaml" || fail "the Spot reducers select no Spot node"
grep -q -- "- key: cloud.google.com/gke-spot" "$tmp/spot.yaml" || fail "the Spot reducers tolerate no Spot taint"
echo "ok: --emit k8s --reducer-capacity spot --spare 2: 27 reducers on GKE Spot nodes"
"$sizer" --workers 8 --worker-type a2-megagpu-16g --spare 2 --emit vertex-json "${images[@]}" >"$tmp/spare.json" ||
  fail "--emit vertex-json --spare 2 failed"
[[ $(jq '.jobSpec.workerPoolSpecs[2].replicaCount' "$tmp/spare.json") == 27 ]] ||
  fail "the emitted CustomJob does not launch the 27 reducers"
echo "ok: --emit vertex-json --spare 2: 27 reducers in pool 2"
expect_fail "Spot reducers in a Vertex AI file: Vertex AI sets Spot for a whole CustomJob" --workers 8 \
  --worker-type a2-megagpu-16g --platform gke --reducer-capacity spot --emit vertex-yaml "${images[@]}"
expect_fail "--emit needs --worker-type" --workers 8 --worker-gbps 100 --emit k8s "${images[@]}"
expect_fail "--emit needs --reducer-type" --workers 8 --worker-type a2-megagpu-16g --reducer-gbps 32 \
  --reducer-vcpus 16 --emit k8s "${images[@]}"
expect_fail "--emit needs --worker-image" --workers 8 --worker-type a2-megagpu-16g --emit k8s \
  --reducer-image r/i:1
expect_fail "--emit needs --reducer-image" --workers 8 --worker-type a2-megagpu-16g --emit k8s \
  --worker-image w/i:1
expect_fail "--emit 'helm' is not one of" --workers 8 --worker-type a2-megagpu-16g --emit helm "${images[@]}"
expect_fail "--worker-image requires --emit" --workers 8 --worker-type a2-megagpu-16g --worker-image w/i:1
expect_fail "job name 'Big_Job' is not a DNS-1035 label" --workers 8 --worker-type a2-megagpu-16g \
  --emit k8s --job-name Big_Job "${images[@]}"
echo "sizer_cli: all checks passed"
