#!/usr/bin/env bash
# The one-shot GPU check (scripts/gpu-check.sh) where a GPU machine's registry-less, tool-less
# conditions are kept but there is no GPU: a Debian 11 (bullseye) minbase container with no
# network, none of Debian 12's libraries (glibc 2.31, GCC 10's libstdc++), no python3, no torch.
# Makes the bundle and its tarball (scripts/make-gpu-check-bundle.sh) from the given builds,
# checks its size and that its copies of the scripts are this tree's, then in the container:
#   - the Debian 12 reducer on its own does not start there (the bundle is what makes it run);
#   - the bundle's own scripts/gpu-check.sh, unpacked from the tarball and given nothing,
#     refuses: exit status 2 and "no GPU here";
#   - this tree's scripts (mounted read-only) run gpu-check.sh --bundle ... --cpu-standin, and
#     the report must pass every step, be marked as a CPU stand-in at the top, in the verdict
#     and on each stand-in step, and show the bundled reducers serving the groups.
# The container is removed on every exit path; the Debian root is cached by scripts/lib/podman.sh.
#   gpu_check_test.sh <portable out dir> <reduction-server (Debian 12 release build)>
set -euo pipefail
out=$(cd "$1" && pwd) server=$(readlink -f "$2")
cd "$(dirname "$0")/../.."
repo=$PWD
root=${BUILD_ROOT:-build}
start=$SECONDS
max_bundle_mib=60  # the bundle travels to the GPU machine; the device tool carries 64 MiB
standin="CPU STAND-IN: plumbing only, not a GPU result"
[[ $(id -u) -eq 0 ]] || { echo "gpu_check_test: needs root (podman, mmdebstrap)" >&2; exit 2; }

# shellcheck source=scripts/lib/podman.sh
source scripts/lib/podman.sh
podman_setup "$root/images"
tmp=$(mktemp -d)
name="rs-gpu-check-$$"
cleanup() {
  local code=$?
  podman rm -f -i -t 0 "$name" >/dev/null 2>&1 || true
  rm -rf "$tmp"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
step() { echo "gpu_check_test: [$((SECONDS - start)) s] $*"; }
fail() { echo "gpu_check_test: FAILED: $*" >&2; exit 1; }

# --- the bundle --------------------------------------------------------------------------------
scripts/make-gpu-check-bundle.sh --out "$tmp/gpu-check" --server "$server" --portable "$out"
mib=$(du -sm "$tmp/gpu-check" | cut -f1)
((mib <= max_bundle_mib)) || fail "the bundle is $mib MiB, over $max_bundle_mib MiB"
while read -r _ path; do
  [[ $path == scripts/* || $path == tests/* ]] || continue
  cmp -s "$path" "$tmp/gpu-check/$path" || fail "the bundle's $path differs from this tree's"
done < <(grep -E '^[0-9a-f]{64}  ' "$tmp/gpu-check/MANIFEST")
step "bundle: $mib MiB, $(du -h "$tmp/gpu-check.tar.gz" | cut -f1) as .tar.gz; its scripts are this tree's"

# --- in a Debian 11 container ------------------------------------------------------------------
debian_image "$root/images" bullseye minbase
mkdir -p "$tmp/out"
# shellcheck disable=SC2016  # the container's shell expands these
# RS_HARNESS_MATRIX=adapter and RS_HARNESS_VERSIONS=11: the harness step sends each type and op
# once through v11's table; this test is about the bundle's plumbing, and the release tree's
# ctest sends the whole matrix through every table of the plugin.
timeout 600 podman run --rm --name "$name" --network none -e RS_HARNESS_MATRIX=adapter \
  -e RS_HARNESS_VERSIONS=11 \
  -v "$tmp/gpu-check.tar.gz:/in/gpu-check.tar.gz:ro" -v "$repo/scripts:/src/scripts:ro" \
  -v "$repo/tests:/src/tests:ro" -v "$tmp/out:/out" "$image" bash -c '
    tar -xzf /in/gpu-check.tar.gz -C /tmp
    getconf GNU_LIBC_VERSION >/out/glibc
    if command -v python3; then echo yes; else echo no; fi >/out/python3
    /tmp/gpu-check/libexec/reduction-server --version >/out/alone.log 2>&1; echo $? >/out/alone.rc
    cd /out
    /tmp/gpu-check/scripts/gpu-check.sh >/out/refusal.log 2>&1; echo $? >/out/refusal.rc
    /src/scripts/gpu-check.sh --bundle /tmp/gpu-check --cpu-standin --report /out/report.md \
      >/out/standin.log 2>&1; echo $? >/out/standin.rc' \
  || fail "the container did not finish (exit status $?)"
o=$tmp/out
[[ $(cat "$o/python3") == no ]] || fail "the container has python3"

[[ $(cat "$o/alone.rc") != 0 ]] || fail "the Debian 12 reducer started without the bundle's libraries"
step "$(cat "$o/glibc"), no python3: the Debian 12 reducer alone does not start: $(head -n 1 "$o/alone.log")"

cat "$o/refusal.log"
[[ $(cat "$o/refusal.rc") == 2 ]] || fail "without --cpu-standin gpu-check.sh exited $(cat "$o/refusal.rc"), not 2"
grep -q "no GPU here" "$o/refusal.log" || fail "the refusal does not say there is no GPU"
step "the bundle's own gpu-check.sh, given nothing: exit status 2, no GPU here"

cat "$o/standin.log"
report=$o/report.md
[[ $(cat "$o/standin.rc") == 0 ]] || { cat "$report" 2>/dev/null; fail "gpu-check.sh --cpu-standin exited $(cat "$o/standin.rc")"; }
# The stand-in marking: above the verdict, in it, and on each step that stood in for PyTorch.
head -n 3 "$report" | grep -qF "**$standin.**" || fail "the report is not headed as a stand-in"
grep -qxF "Result: **PASS: 4 of 4 steps passed ($standin)**" "$report" || fail "the verdict: $(grep '^Result' "$report")"
for s in bundle plugin-harness; do
  grep -qE "^\| $s \| PASS \| [0-9]+ s \|$" "$report" || fail "step $s did not pass"
done
for s in gpu-e2e ddp-e2e; do
  grep -qE "^\| $s \| PASS \($standin\) \| [0-9]+ s \|$" "$report" || fail "step $s: not PASS marked as a stand-in"
  grep -qxF "### $s: PASS ($standin)" "$report" || fail "step $s's section is not marked as a stand-in"
done
rows=$(grep -cE '^\| [a-z0-9-]+ \| .* \| [0-9]+ s \|$' "$report")
((rows == 4)) || fail "the report lists $rows steps, not 4: $(grep '^| ' "$report")"
grep -q "^- glibc: glibc 2.31" "$report" || fail "the report does not record the container's glibc"
grep -q "^bundled reducer: reduction-server [0-9]" "$report" || fail "the bundled reducer's version is missing"
served=$(sed -n '/^### gpu-e2e/,/^### ddp-e2e/p' "$report" | grep -c "closed: [1-9][0-9]* reductions")
((served >= 4)) || fail "the bundled reducers logged $served closed groups in gpu-e2e, fewer than 4"
[[ -z $(find "$o/report-logs" -name job-secret) ]] || fail "a job secret was left in the logs"
step "passed: the stand-in report passes all 4 steps, marked as a stand-in; the bundled reducers served $served groups in gpu-e2e"
