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
