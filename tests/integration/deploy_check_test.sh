#!/usr/bin/env bash
# scripts/check-deploy.sh passes deploy/'s files as they are, catches a misspelling planted in
# each kind of file (naming the file and the field), and says "skipped" rather than failing
# where gcloud or kubectl is missing. Offline apart from the one-time npm install; every copy it
# makes lives in one temporary folder removed on exit.
# Then the files rs-sizer --emit writes for a plan unlike deploy/'s pass the same checks.
#   deploy_check_test.sh <rs-sizer binary>
set -euo pipefail
sizer=$1
repo=$(cd "$(dirname "$0")/../.." && pwd)
check=$repo/scripts/check-deploy.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "deploy_check_test: FAIL: $*" >&2; exit 1; }
# run_check <output file> <args...>: the check's exit status, its output in the file.
run_check() {
  local out=$1; shift
  local rc=0
  timeout 300 "$@" >"$out" 2>&1 || rc=$?
  ((rc != 124)) || fail "check-deploy.sh ran past 300 s"
  return $rc
}
expect_line() {  # <output file> <text that a line must hold>
  grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "no line with: $2"; }
}
have_gcloud=0
if command -v gcloud >/dev/null && { [[ $(id -u) -eq 0 ]] && unshare -n true || unshare -r -n true; } 2>/dev/null; then
  have_gcloud=1
fi
have_kubectl=0
command -v kubectl >/dev/null && have_kubectl=1
have_promtool=0
command -v promtool >/dev/null && have_promtool=1

cp -r "$repo/deploy" clean
find clean -name __pycache__ -prune -exec rm -rf {} +
# Beside deploy/'s files: Spot reducers with spares on GKE, as rs-sizer --emit writes them, and
# Vertex AI's Spot, which is the whole job's: a scheduling strategy in the CustomJobSpec (the
# field exists there, and in no worker pool: a planted fault below).
mkdir clean/k8s-spot clean/vertex-spot
spot=(--workers 8 --worker-type a2-megagpu-16g --platform gke --reducer-capacity spot --spare 2
      --worker-image us-docker.pkg.dev/my-project/reduction-server/trainer-rs:latest
      --reducer-image us-docker.pkg.dev/my-project/reduction-server/reduction-server:0.1.0)
"$sizer" "${spot[@]}" --emit k8s >clean/k8s-spot/training-jobset.yaml || fail "rs-sizer --emit k8s (Spot) failed"
"$sizer" "${spot[@]}" --emit k8s-pool --job-name reduction-server >clean/k8s-spot/reducer-pool.yaml ||
  fail "rs-sizer --emit k8s-pool (Spot) failed"
{ cat clean/vertex/custom-job.yaml; printf 'scheduling:\n  strategy: SPOT\n'; } >clean/vertex-spot/custom-job.yaml

# 1. The files as they are pass every check there is.
run_check clean.out "$check" clean || { cat clean.out >&2; fail "deploy/'s own files fail"; }
expect_line clean.out "ok    clean/k8s/reducer-pool/reducer-pool.yaml: document 2 (StatefulSet reduction-server): matches kubernetes-types"
expect_line clean.out "ok    clean/k8s/training-jobset.yaml: document 1 (JobSet rs-train): matches the JobSet v1alpha2 types"
expect_line clean.out "ok    clean/vertex/custom-job.yaml: yamllint"
expect_line clean.out "ok    clean/vertex/submit_job.py: the keywords of"
expect_line clean.out "ok    clean/k8s/training-jobset.yaml: document 1 (JobSet rs-train): replicatedJob reducers: reads its secret from Secret rs-train-rs-secret (RS_SECRET_FILE, read-only)"
expect_line clean.out "ok    clean/k8s/training-jobset.yaml: document 1 (JobSet rs-train): replicatedJob workers: reads its secret from Secret rs-train-rs-secret (RS_SECRET_FILE, read-only)"
expect_line clean.out "ok    clean/k8s/reducer-pool/reducer-pool.yaml: document 2 (StatefulSet reduction-server): pod template: reads its secret from Secret reduction-server-pool-secret"
expect_line clean.out "ok    clean/k8s-spot/training-jobset.yaml: document 1 (JobSet rs-train): matches the JobSet v1alpha2 types"
expect_line clean.out "ok    clean/k8s-spot/reducer-pool.yaml: document 2 (StatefulSet reduction-server): matches kubernetes-types"
expect_line clean.out "ok    clean/k8s-spot/training-jobset.yaml: yamllint"
if ((have_gcloud)); then
  expect_line clean.out "ok    clean/vertex/custom-job.yaml: reads as gcloud's GoogleCloudAiplatformV1CustomJobSpec"
  expect_line clean.out "ok    clean/vertex-spot/custom-job.yaml: reads as gcloud's GoogleCloudAiplatformV1CustomJobSpec"
  expect_line clean.out "ok    clean/vertex/custom-job.json: reads as gcloud's GoogleCloudAiplatformV1CustomJob,"
  expect_line clean.out "ok    clean/vertex/create-job.sh: gcloud parses its arguments"
  expect_line clean.out "ok    clean/vertex/submit_job.py: its CustomJob carries one fresh job secret (RS_SECRET) in all 3 pools"
  expect_line clean.out "ok    clean/vertex/submit_job.py: its CustomJob's worker_pool_specs: reads as gcloud's GoogleCloudAiplatformV1CustomJobSpec"
fi
((have_kubectl)) && expect_line clean.out "ok    clean/k8s/reducer-pool/kustomization.yaml: kubectl kustomize renders 3 object(s)"
# The opt-in RDMA variants (deploy/k8s/rdma/): each Component rendered over every JobSet and pool
# file here (deploy/'s and the Spot ones) changes all of them, and what it renders passes the
# type and secret checks; the pool overlays render the pool with the device requested.
if ((have_kubectl)); then
  for c in infiniband efa; do
    expect_line clean.out "ok    clean/k8s/rdma/$c/kustomization.yaml: kubectl kustomize renders it over the 4 workload file(s) here; it changes 4"
    expect_line clean.out "ok    clean/k8s/rdma/$c/kustomization.yaml: over clean/k8s/training-jobset.yaml, rendered object 1 (JobSet rs-train): matches the JobSet v1alpha2 types"
    expect_line clean.out "ok    clean/k8s/rdma/$c/kustomization.yaml: over clean/k8s/training-jobset.yaml, rendered object 1 (JobSet rs-train): replicatedJob workers: reads its secret"
    expect_line clean.out "ok    clean/k8s/rdma/reducer-pool-$c/kustomization.yaml: rendered object 2 (StatefulSet reduction-server): matches kubernetes-types"
  done
  kubectl kustomize clean/k8s/rdma/reducer-pool-efa | grep -qF 'vpc.amazonaws.com/efa: "1"' ||
    fail "the EFA pool overlay does not request vpc.amazonaws.com/efa"
  kubectl kustomize clean/k8s/rdma/reducer-pool-infiniband | grep -qF 'rdma/rdma_shared_device_a: "1"' ||
    fail "the InfiniBand pool overlay does not request rdma/rdma_shared_device_a"
fi
((have_promtool)) && expect_line clean.out "ok    clean/k8s/prometheus-scrape.yaml: promtool check config"

# 2. One planted fault per file, all checked in one run: <name> <source file> <old> <new>.
mkdir planted planted/kustomize
plant() {
  local name=$1 source=$2 old=$3 new=$4 dest=planted/$1
  [[ $name == kustomize/* ]] && cp clean/k8s/reducer-pool/reducer-pool.yaml planted/kustomize/
  python3 - "clean/$source" "$dest" "$old" "$new" <<'EOF' || fail "could not plant $name"
import sys
source, dest, old, new = sys.argv[1:]
text = open(source).read()
if old not in text:
    sys.exit("%s does not hold %r" % (source, old))
open(dest, "w").write(text.replace(old, new, 1))
EOF
}
plant replicaCont.yaml vertex/custom-job.yaml "replicaCount: 25" "replicaCont: 25"
plant acceleratorTyp.json vertex/custom-job.json '"acceleratorType"' '"acceleratorTyp"'
plant enum.json vertex/custom-job.json '"NVIDIA_TESLA_A100"' '"NVIDIA_TESLA_A10"'
plant pool0.yaml vertex/custom-job.yaml "replicaCount: 1" "replicaCount: 2"
plant duplicate.yaml vertex/custom-job.yaml "replicaCount: 25" $'replicaCount: 25\n    replicaCount: 26'
plant prot.yaml k8s/reducer-pool/reducer-pool.yaml $'grpc:\n              port: 2223' $'grpc:\n              prot: 2223'
plant noname.yaml k8s/reducer-pool/reducer-pool.yaml $'- name: reduction-server\n          image:' $'- image:'
plant replicas.yaml k8s/reducer-pool/reducer-pool.yaml "replicas: 16" 'replicas: "16"'
plant kind.yaml k8s/reducer-pool/reducer-pool.yaml "kind: PodDisruptionBudget" "kind: PodDisruptionBudgett"
plant successPolicy.yaml k8s/training-jobset.yaml "targetReplicatedJobs:" "targetReplicatedJob:"
plant dependsOn.yaml k8s/training-jobset.yaml "status: Ready" "status: Redy"
plant completionMode.yaml k8s/training-jobset.yaml "completionMode: Indexed" "completionMod: Indexed"
plant kustomize/kustomization.yaml k8s/reducer-pool/kustomization.yaml "resources:" "resourcs:"
plant create-job.sh vertex/create-job.sh "--display-name=" "--display-nam="
plant submit_job.py vertex/submit_job.py "worker_pool_specs=" "worker_pool_spec="
# The job secret's wiring: a pod without RS_SECRET_FILE, a secret written into a manifest, a
# writable mount, reducers and workers on different Secrets, an SDK script with a fixed secret.
plant nosecretfile.yaml k8s/training-jobset.yaml "- name: RS_SECRET_FILE" "- name: RS_SECRET_FIL"
plant literal.yaml k8s/reducer-pool/reducer-pool.yaml \
  $'- name: RS_SECRET_FILE\n              value: /var/run/secrets/reduction-server/secret' \
  $'- name: RS_SECRET\n              value: not-a-secret-but-the-check-cannot-know'
plant writable.yaml k8s/reducer-pool/reducer-pool.yaml "readOnly: true" "readOnly: false"
plant twosecrets.yaml k8s/training-jobset.yaml "secretName: rs-train-rs-secret" "secretName: other-rs-secret"
plant fixed_secret.py vertex/submit_job.py "secrets.token_hex(32)" '"not-a-secret-but-the-same-every-time"'
plant unknown.yaml vertex/custom-job.yaml "workerPoolSpecs:" "workerPools:"
plant scrape.yaml k8s/prometheus-scrape.yaml "port: 2224" "prot: 2224"
# Spot: a misspelled toleration field, a node selector that is not a string, and Spot asked for
# one worker pool of a Vertex AI job (it has no such field: Spot is the whole job's).
plant spot-toleration.yaml k8s-spot/training-jobset.yaml "effect: NoSchedule" "efect: NoSchedule"
plant spot-selector.yaml k8s-spot/reducer-pool.yaml 'cloud.google.com/gke-spot: "true"' "cloud.google.com/gke-spot: true"
plant poolspot.yaml vertex/custom-job.yaml "replicaCount: 25" $'replicaCount: 25\n    scheduling:\n      strategy: SPOT'

rc=0
run_check planted.out "$check" planted || rc=$?
((rc == 1)) || { cat planted.out >&2; fail "planted faults: exit $rc, not 1"; }
expect_line planted.out "FAIL  planted/duplicate.yaml: yamllint: line"
expect_line planted.out 'duplication of key "replicaCount"'
expect_line planted.out "FAIL  planted/prot.yaml: document 2 (StatefulSet reduction-server): spec.template.spec.containers[0].readinessProbe.grpc.prot: TS2353"
expect_line planted.out "FAIL  planted/noname.yaml: document 2 (StatefulSet reduction-server): spec.template.spec.containers[0]: TS2741: Property 'name' is missing"
expect_line planted.out "FAIL  planted/replicas.yaml: document 2 (StatefulSet reduction-server): spec.replicas: TS2322"
expect_line planted.out "FAIL  planted/kind.yaml: document 3 (PodDisruptionBudgett reduction-server): kind PodDisruptionBudgett is not a kind of policy/v1"
expect_line planted.out "FAIL  planted/successPolicy.yaml: document 1 (JobSet rs-train): spec.successPolicy.targetReplicatedJob: TS2561"
expect_line planted.out "FAIL  planted/dependsOn.yaml: document 1 (JobSet rs-train): spec.replicatedJobs[1].dependsOn[0].status: TS2820"
expect_line planted.out "FAIL  planted/completionMode.yaml: document 1 (JobSet rs-train): spec.replicatedJobs[0].template.spec.completionMod: TS2561"
expect_line planted.out "FAIL  planted/submit_job.py: line 138: aiplatform.CustomJob() has no parameter 'worker_pool_spec'"
expect_line planted.out "FAIL  planted/nosecretfile.yaml: document 1 (JobSet rs-train): replicatedJob reducers: container reduction-server: no RS_SECRET_FILE"
expect_line planted.out "FAIL  planted/literal.yaml: document 2 (StatefulSet reduction-server): pod template: container reduction-server: RS_SECRET holds the secret itself"
expect_line planted.out "FAIL  planted/writable.yaml: document 2 (StatefulSet reduction-server): pod template: container reduction-server: the Secret volume holding RS_SECRET_FILE is not mounted readOnly"
expect_line planted.out "FAIL  planted/twosecrets.yaml: document 1 (JobSet rs-train): its pods mount different Secrets"
expect_line planted.out "FAIL  planted/unknown.yaml: it is neither a Vertex AI CustomJobSpec/CustomJob"
expect_line planted.out "FAIL  planted/spot-toleration.yaml: document 1 (JobSet rs-train): spec.replicatedJobs[0].template.spec.template.spec.tolerations[0].efect: TS2561"
expect_line planted.out "FAIL  planted/spot-selector.yaml: document 2 (StatefulSet reduction-server): spec.template.spec.nodeSelector"
if ((have_kubectl)); then
  expect_line planted.out 'FAIL  planted/kustomize/kustomization.yaml: kubectl kustomize: invalid Kustomization: json: unknown field "resourcs"'
fi
if ((have_promtool)); then
  expect_line planted.out "FAIL  planted/scrape.yaml: promtool check config: FAILED: parsing YAML file"
  expect_line planted.out "field prot not found"
fi
if ((have_gcloud)); then
  expect_line planted.out "FAIL  planted/replicaCont.yaml: workerPoolSpecs[2].replicaCont: not a field of the API"
  expect_line planted.out "FAIL  planted/acceleratorTyp.json: jobSpec.workerPoolSpecs[0].machineSpec.acceleratorTyp: not a field"
  expect_line planted.out "FAIL  planted/enum.json: jobSpec.workerPoolSpecs[0].machineSpec.acceleratorType: not a field of the API, or a value it does not accept"
  expect_line planted.out "FAIL  planted/pool0.yaml: workerPoolSpecs[0].replicaCount is 2: pool 0 holds the one primary replica"
  expect_line planted.out "FAIL  planted/create-job.sh: --display-nam is not a flag of gcloud ai custom-jobs create"
  expect_line planted.out "FAIL  planted/create-job.sh: gcloud refused the command (exit 2): ERROR: (gcloud.ai.custom-jobs.create) unrecognized arguments: --display-nam=rs-train"
  expect_line planted.out "FAIL  planted/fixed_secret.py: its CustomJob: two runs gave the same RS_SECRET"
  expect_line planted.out "FAIL  planted/poolspot.yaml: workerPoolSpecs[2].scheduling: not a field of the API"
fi
# No planted file may pass: each must have a FAIL line of its own.
for f in $(cd planted && find . -type f ! -name reducer-pool.yaml | sed 's|^\./||'); do
  grep -qF "FAIL  planted/$f:" planted.out || {
    if [[ $have_gcloud -eq 0 && $f =~ ^(replicaCont.yaml|acceleratorTyp.json|enum.json|pool0.yaml|create-job.sh|fixed_secret.py|poolspot.yaml)$ ]] ||
       [[ $have_kubectl -eq 0 && $f == kustomize/kustomization.yaml ]] ||
       [[ $have_promtool -eq 0 && $f == scrape.yaml ]]; then
      continue  # its check needs a tool this machine lacks: the skip is checked below
    fi
    cat planted.out >&2; fail "planted/$f passed"
  }
done

# 2b. Faults in an RDMA Component, rendered over deploy/'s JobSet and pool: targets that match
# nothing (silent in kustomize itself), a misspelled field in what a patch adds, and the JobSet's
# replicated jobs not where the patch's tests expect them.
if ((have_kubectl)); then
  mkdir -p rdma/nomatch rdma/field rdma/order
  cp clean/k8s/training-jobset.yaml clean/k8s/reducer-pool/reducer-pool.yaml rdma/
  component=clean/k8s/rdma/infiniband/kustomization.yaml
  sed 's/kind: JobSet$/kind: JobSett/; s/component=reducer$/component=reducers/' $component >rdma/nomatch/kustomization.yaml
  sed 's/^          capabilities:$/          capabilites:/' $component >rdma/field/kustomization.yaml
  sed 's/^        value: workers$/        value: worker/' $component >rdma/order/kustomization.yaml
  for f in nomatch field order; do
    ! cmp -s $component rdma/$f/kustomization.yaml || fail "could not plant rdma/$f"
  done
  rc=0
  run_check rdma.out "$check" rdma || rc=$?
  ((rc == 1)) || { cat rdma.out >&2; fail "planted Component faults: exit $rc, not 1"; }
  expect_line rdma.out "FAIL  rdma/nomatch/kustomization.yaml: its patches change none of rdma/reducer-pool.yaml, rdma/training-jobset.yaml"
  expect_line rdma.out "FAIL  rdma/field/kustomization.yaml: over rdma/training-jobset.yaml, rendered object 1 (JobSet rs-train): spec.replicatedJobs[1].template.spec.template.spec.containers[0].securityContext.capabilites: TS2561"
  expect_line rdma.out "FAIL  rdma/order/kustomization.yaml: kubectl kustomize over rdma/training-jobset.yaml:"
  expect_line rdma.out "testing value /spec/replicatedJobs/1/name failed"
fi

# 3. Without gcloud and kubectl the Vertex and kustomize checks say they were skipped and why,
# and the rest still runs: a PATH holding only what the other checks need.
mkdir bin
for tool in bash dirname yamllint node npm unshare; do
  ln -s "$(command -v "$tool")" "bin/$tool"
done
# The interpreter itself, not a version manager's shim that needs its own PATH.
ln -s "$(python3 -c 'import sys; print(sys.executable)')" bin/python3
run_check bare.out env PATH="$work/bin" "$check" clean/vertex clean/k8s/reducer-pool/kustomization.yaml ||
  { cat bare.out >&2; fail "without gcloud and kubectl: not a pass"; }
expect_line bare.out "skip  clean/vertex/custom-job.yaml: gcloud message classes: skipped: gcloud is not installed"
expect_line bare.out "skip  clean/vertex/create-job.sh: gcloud ai custom-jobs create flags: skipped: gcloud is not installed"
expect_line bare.out "skip  clean/k8s/reducer-pool/kustomization.yaml: kubectl kustomize: skipped: kubectl is not installed"
expect_line bare.out "ok    clean/vertex/custom-job.yaml: yamllint"
expect_line bare.out "ok    clean/vertex/submit_job.py: py_compile"

# 4. What rs-sizer --emit writes for another plan (GKE, Tier_1 C3 reducers, A3 workers, its own
# names and images) passes every check, as deploy/'s files do.
mkdir emitted
plan=(--workers 4 --worker-type a3-highgpu-8g --platform gke --tier1 --reducer-type c3-highcpu-88
      --job-name llm-finetune --region europe-west4 --train-script /app/finetune.py
      --worker-image europe-docker.pkg.dev/acme/ml/trainer-rs:2.1
      --reducer-image europe-docker.pkg.dev/acme/ml/reduction-server:0.1.0)
for pair in vertex-yaml:job.yaml vertex-json:job.json gcloud:create.sh vertex-python:submit.py \
            k8s:jobset.yaml k8s-pool:pool.yaml; do
  "$sizer" "${plan[@]}" --emit "${pair%%:*}" >"emitted/${pair#*:}" || fail "rs-sizer --emit ${pair%%:*} failed"
done
grep -q "replicas: 8" emitted/pool.yaml || fail "the emitted pool is not the 8 reducers rs-sizer sized"
run_check emitted.out "$check" emitted || { cat emitted.out >&2; fail "rs-sizer --emit's files fail the checks"; }
expect_line emitted.out "ok    emitted/jobset.yaml: document 1 (JobSet llm-finetune): matches the JobSet v1alpha2 types"
echo "ok: rs-sizer --emit's files for another plan pass: $(grep -c '^ *ok ' emitted.out) checks"

# 5. The secret at submission: create-job.sh gives all three pools one fresh 64-hex-digit secret,
# a new one each run, in a config only its owner can read and that is gone afterwards; the spec
# it reads holds none, and one that sets RS_SECRET itself is refused. A stand-in gcloud keeps
# the config it is given.
mkdir fakebin saw
cat >fakebin/gcloud <<'EOF'
#!/usr/bin/env bash
for arg; do [[ $arg == --config=* ]] && config=${arg#--config=}; done
n=0; [[ -f $SAW/paths ]] && n=$(wc -l <"$SAW/paths")
cp "$config" "$SAW/config.$n"
stat -c %a "$config" >>"$SAW/modes"
echo "$config" >>"$SAW/paths"
echo "$@" >>"$SAW/args"
EOF
chmod +x fakebin/gcloud
# The second run starts with a gcloud flag: the config is then the one beside the script.
for flags in "" --project=my-project; do
  SAW=$work/saw PATH="$work/fakebin:$PATH" bash clean/vertex/create-job.sh $flags >/dev/null ||
    fail "create-job.sh $flags with a stand-in gcloud failed"
done
grep -q -- "--region=us-central1 --display-name=rs-train --config=.* --project=my-project$" saw/args ||
  { cat saw/args >&2; fail "create-job.sh --project=my-project did not pass the flag on to gcloud"; }
secrets_of() { grep -A1 -- "- name: RS_SECRET$" "$1" | sed -n 's/^ *value: "\(.*\)"$/\1/p'; }
for config in saw/config.0 saw/config.1; do
  (($(secrets_of $config | wc -l) == 3)) || fail "create-job.sh did not give each of the 3 pools RS_SECRET"
done
first=$(secrets_of saw/config.0 | sort -u) second=$(secrets_of saw/config.1 | sort -u)
[[ $first =~ ^[0-9a-f]{64}$ && $second =~ ^[0-9a-f]{64}$ ]] ||
  fail "create-job.sh's pools do not share one 64-hex-digit secret: '$first' / '$second'"
[[ $first != "$second" ]] || fail "two runs of create-job.sh gave the same secret"
[[ $(sort -u saw/modes) == 600 ]] || fail "the config with the secret was readable by others: $(cat saw/modes)"
while read -r path; do [[ ! -e $path ]] || fail "create-job.sh left its config with the secret: $path"; done <saw/paths
! grep -q "name: RS_SECRET" clean/vertex/custom-job.yaml || fail "custom-job.yaml holds RS_SECRET"
sed '0,/- name: RS_LOG_FORMAT/s//- name: RS_SECRET\n          value: x\n        - name: RS_LOG_FORMAT/' \
  clean/vertex/custom-job.yaml >taken.yaml
rc=0
SAW=$work/saw PATH="$work/fakebin:$PATH" bash clean/vertex/create-job.sh taken.yaml >/dev/null 2>taken.err || rc=$?
((rc != 0)) && grep -q "sets RS_SECRET itself" taken.err || { cat taken.err >&2; fail "create-job.sh took a config that sets RS_SECRET"; }
echo "ok: create-job.sh gives every pool one fresh secret per run, in a private file it removes"

echo "deploy_check_test: clean files pass; $(grep -c '^  FAIL' planted.out) failures from the planted faults;" \
  "gcloud=$have_gcloud kubectl=$have_kubectl promtool=$have_promtool"
