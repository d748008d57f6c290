#!/usr/bin/env bash
# allreduce_perf's verdict does not come from the system it measures: against a reducer that
# answers every element wrong and an all-reduce of the wrong-value counts with 0
# (forging_reducer), the launcher and a lone worker both report every wrong element and fail.
#   perf_verdict_test.sh <allreduce_perf binary> <forging_reducer binary>
set -euo pipefail
perf=$1
forger=$2
dir=$(mktemp -d)
forger_pid=
cleanup() {
  [[ -n $forger_pid ]] && kill "$forger_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

# fp32 sums of 1 KiB, 8 KiB and 64 KiB: 256 + 2048 + 16384 elements checked per worker, every one
# of them wrong.
per_worker=$((256 + 2048 + 16384))
sizes=(-b 1K -e 64K -f 8 -n 1 -w 0 -d fp32 -o sum)

# The local pool: 2 workers through the forger as their only reducer.
rc=0
out=$(timeout 120 "$perf" --local-pool 1 --workers 2 --server-bin "$forger" "${sizes[@]}" 2>&1) ||
  rc=$?
echo "$out"
((rc == 3)) || { echo "FAILED: local pool: exit $rc, wanted 3 (wrong values)"; exit 1; }
grep -q "^# Out of bounds values : $((2 * per_worker)) FAILED$" <<<"$out" ||
  { echo "FAILED: local pool: the verdict is not $((2 * per_worker)) wrong elements"; exit 1; }
echo "ok: the local pool's verdict counts all $((2 * per_worker)) wrong elements"

# A lone worker (worker mode, as on a multi-host job): its own verdict line and exit status.
"$forger" --port-file "$dir/port" &
forger_pid=$!
for _ in $(seq 200); do [[ -s $dir/port ]] && break; sleep 0.1; done
[[ -s $dir/port ]] || { echo "FAILED: the forger wrote no port file"; exit 1; }
rc=0
out=$(timeout 120 "$perf" --reducers "127.0.0.1:$(cut -d' ' -f1 "$dir/port")" --world 1 --rank 0 \
      --group 0123456789abcdef0123456789abcdef "${sizes[@]}" 2>&1) || rc=$?
echo "$out"
((rc == 3)) || { echo "FAILED: worker: exit $rc, wanted 3 (wrong values)"; exit 1; }
grep -q "^# Out of bounds values : $per_worker FAILED$" <<<"$out" ||
  { echo "FAILED: worker: the verdict is not $per_worker wrong elements"; exit 1; }
echo "ok: a worker's own verdict counts all $per_worker wrong elements"
