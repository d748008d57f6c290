#!/usr/bin/env bash
# `reduction-server --health-probe` against a real daemon: SERVING while it serves (the address
# given, or derived from CLUSTER_SPEC as in the image's HEALTHCHECK), no answer within the
# deadline while the daemon is stopped (SIGSTOP), NOT_SERVING once it drains with a group still
# active, and unreachable once it is gone. Every failure exits 1 (Docker reserves 2).
#   health_probe_test.sh <reduction-server binary> <allreduce_perf binary>
set -euo pipefail
server=$1
perf=$2
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() { echo "FAILED: $*"; echo "--- daemon log:"; cat "$tmp/log" 2>/dev/null || true; exit 1; }

# expect_probe <exit code> <text> [VAR=value...] <probe args...>
expect_probe() {
  local want_code=$1 want=$2; shift 2
  local vars=() out code=0
  while [[ $# -gt 0 && $1 =~ ^[A-Z_]+= ]]; do vars+=("$1"); shift; done
  out=$(env "${vars[@]}" "$server" "$@" --health-probe-timeout-ms 60000 2>&1) || code=$?
  [[ $code -eq $want_code ]] || fail "probe exit $code, expected $want_code ($out)"
  grep -qF -- "$want" <<<"$out" || fail "'$want' not in probe output: $out"
  [[ $(wc -l <<<"$out") -eq 1 ]] || fail "the probe printed more than one line: $out"
  echo "ok: $out"
}

wait_for() {  # <description> <command...>: polls a state for at most 120 s
  local what=$1; shift
  for _ in $(seq 1200); do "$@" && return 0; sleep 0.1; done
  fail "timed out waiting for $what"
}

# The daemon as Vertex AI starts it: its data port from CLUSTER_SPEC, gRPC on the next port.
# shellcheck source=scripts/lib/local_reducers.sh
source "$(dirname "$0")/../../scripts/lib/local_reducers.sh"
start_spec_reducer "$server" "$tmp/log" "$tmp/ports" RS_IO_THREADS=1 RS_STATS_INTERVAL=0 \
  || fail "the daemon did not start"
daemon=${pids[-1]}
read -r data grpc _ <"$tmp/ports"
[[ $grpc -eq $((data + 1)) ]] || fail "gRPC port $grpc is not data port $data + 1"

# SERVING: at the address given; derived from the same CLUSTER_SPEC with no flags (the daemon
# listens on 0.0.0.0:<spec port>, probed on loopback at that port + 1); from RS_GRPC_LISTEN.
expect_probe 0 "127.0.0.1:$grpc is SERVING" --health-probe "127.0.0.1:$grpc"
expect_probe 0 "127.0.0.1:$grpc is SERVING" CLUSTER_SPEC="$spec" --health-probe
expect_probe 0 "127.0.0.1:$grpc is SERVING" RS_GRPC_LISTEN="0.0.0.0:$grpc" --health-probe
expect_probe 1 "ephemeral port cannot be probed" --data-listen 127.0.0.1:0 --health-probe

# A hung daemon: the kernel still accepts the connection, nobody answers; the deadline ends it.
kill -STOP "$daemon"
out=$("$server" --health-probe "127.0.0.1:$grpc" --health-probe-timeout-ms 1000 2>&1) && \
  { kill -CONT "$daemon"; fail "a stopped daemon passed the probe: $out"; }
kill -CONT "$daemon"
grep -qF "gave no answer within 1000 ms" <<<"$out" || fail "stopped daemon: $out"
echo "ok: $out"
expect_probe 0 "is SERVING" --health-probe "127.0.0.1:$grpc"

# A group stays active while one of its two members waits for the other; SIGTERM then drains
# (the daemon waits for the group) and the health check turns NOT_SERVING.
"$perf" --reducers "127.0.0.1:$data" --world 2 --rank 0 --group 0123456789abcdef0123456789abcdef \
  -b 4K -e 4K -n 1 -w 0 >"$tmp/worker.log" 2>&1 &
pids+=($!)
worker=${pids[-1]}
wait_for "the worker's group on the reducer" grep -q "rank 0 joined" "$tmp/log"
kill -TERM "$daemon"
wait_for "the drain to start" grep -q "draining: 1 groups active" "$tmp/log"
expect_probe 1 "127.0.0.1:$grpc is NOT_SERVING" CLUSTER_SPEC="$spec" --health-probe

# The member dies, its group closes, the drain ends: exit 0, and then nothing answers.
kill -9 "$worker"
wait "$worker" 2>/dev/null || true
code=0
wait_for "the daemon to exit after the drain" bash -c "! kill -0 $daemon 2>/dev/null"
wait "$daemon" || code=$?
[[ $code -eq 0 ]] || fail "daemon exit code $code after the drain"
echo "ok: the daemon drained and exited 0"
expect_probe 1 "127.0.0.1:$grpc is unreachable" CLUSTER_SPEC="$spec" --health-probe
