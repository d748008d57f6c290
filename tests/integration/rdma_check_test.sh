#!/usr/bin/env bash
# scripts/rdma-check.sh's dry run (--provider tcp --quick) on the binaries of this build tree:
# every step that can run here passes (the fabric all-reduce included, on the tcp provider),
# and the report marks itself NOT RDMA HARDWARE. (Whether its reducers are gone is not checked here: other
# tests of this tree may run theirs at the same time.)
#   rdma_check_test.sh <repo> <build tree>
set -euo pipefail
repo=$1 tree=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
timeout 120 bash "$repo/scripts/rdma-check.sh" --provider tcp --quick --no-build \
  --build-dir "$tree" --report "$out/report.md" >"$out/run.log" 2>&1 ||
  { echo "FAILED: rdma-check.sh exited $?"; cat "$out/run.log"; cat "$out/report.md" 2>/dev/null; exit 1; }
expect() {
  grep -qF -- "$1" "$out/report.md" || { echo "FAILED: the report lacks '$1'"; cat "$out/report.md"; exit 1; }
}
expect "# RDMA check: NOT RDMA HARDWARE (tcp provider dry run)"
expect "PASSED: every step that could run passed"
expect "| fabric-suites | passed |"
expect "| fabric-bw | passed |"
expect "each size's final write landed byte-exact"
for w in 2 3 4; do expect "| allreduce-tcp-W$w | passed |"; done
for w in 2 3 4; do expect "| allreduce-fabric-W$w | passed |"; done
echo "ok: rdma-check.sh --provider tcp --quick"
