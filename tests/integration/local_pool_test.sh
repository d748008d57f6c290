#!/usr/bin/env bash
# Multi-process all-reduce on loopback: real reduction-server processes and allreduce_perf
# worker processes (the README's main job, smaller), every result checked.
#   local_pool_test.sh <allreduce_perf binary> <reduction-server binary>
set -euo pipefail
perf=$1
server=$2

run() {  # <description> <args...>
  local what=$1; shift
  local out
  if ! out=$(timeout 300 "$perf" --server-bin "$server" "$@" 2>&1); then
    echo "FAILED: $what"; echo "$out"; exit 1
  fi
  echo "$out"
  grep -q "Out of bounds values : 0 OK" <<<"$out" || { echo "FAILED: $what: results not checked OK"; exit 1; }
  # One table row per size, each with #wrong 0.
  local rows
  rows=$(grep -cE '^ +[0-9]+ +[0-9]+ ' <<<"$out" || true)
  [[ $rows -ge 3 ]] || { echo "FAILED: $what: expected at least 3 rows, got $rows"; exit 1; }
  echo "ok: $what"
}

run "fp32 sum, 3 reducers, 4 workers" --local-pool 3 --workers 4 -b 1K -e 4M -f 8 -n 3 -w 1
run "bf16 avg, 2 reducers, 3 workers, 8 streams, depth 4" --local-pool 2 --workers 3 -d bf16 -o avg \
    -b 4K -e 1M -f 4 -n 4 -w 1 --streams 8 --depth 4
run "int64 max, 1 reducer, 2 workers" --local-pool 1 --workers 2 -d int64 -o max -b 8 -e 64K -f 16 -n 2 -w 1
run "fp8e4m3 sum, 2 reducers, 3 workers" --local-pool 2 --workers 3 -d fp8e4m3 -b 1K -e 1M -f 8 -n 2 -w 1
run "fp8e5m2 avg, 1 reducer, 2 workers" --local-pool 1 --workers 2 -d fp8e5m2 -o avg -b 8 -e 64K -f 16 -n 2 -w 1

# A partner that joins and then never sends: a worker reads RS_TIMEOUT_MS (as the library does)
# and ends with a timeout error, not after the 300 s default. Bounded by `timeout`, not timed.
dir=$(mktemp -d)
partner=
reducer=
cleanup() {
  [[ -n $partner ]] && { kill -CONT "$partner"; kill "$partner"; } 2>/dev/null || true
  [[ -n $reducer ]] && kill "$reducer" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
"$server" --data-listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --port-file "$dir/port" \
    --log-level info --stats-interval 0 >"$dir/reducer.log" 2>&1 &
reducer=$!
for _ in $(seq 200); do [[ -s $dir/port ]] && break; sleep 0.1; done
[[ -s $dir/port ]] || { echo "FAILED: reducer wrote no port file"; cat "$dir/reducer.log"; exit 1; }
endpoint=127.0.0.1:$(cut -d' ' -f1 "$dir/port")
group=0123456789abcdef0123456789abcdef
"$perf" --reducers "$endpoint" --world 2 --rank 1 --group "$group" -b 8 -e 8 -n 100000000 -w 0 \
    >"$dir/partner.log" 2>&1 &
partner=$!
# The partner's HELLO created the group: it has joined. From now on it sends nothing.
for _ in $(seq 200); do grep -q "created" "$dir/reducer.log" && break; sleep 0.1; done
grep -q "created" "$dir/reducer.log" || { echo "FAILED: the partner never joined"; cat "$dir/reducer.log"; exit 1; }
kill -STOP "$partner"
rc=0
out=$(RS_TIMEOUT_MS=1000 timeout 60 "$perf" --reducers "$endpoint" --world 2 --rank 0 \
      --group "$group" -b 8 -e 8 -n 100000000 -w 0 2>&1) || rc=$?
echo "$out"
[[ $rc -ne 0 && $rc -ne 124 ]] || { echo "FAILED: a silent partner: exit $rc, wanted a timeout error"; exit 1; }
grep -qiE "timed out|timeout" <<<"$out" || { echo "FAILED: a silent partner: no timeout error named"; exit 1; }
echo "ok: a silent partner fails the worker within RS_TIMEOUT_MS"
