#!/usr/bin/env bash
# Drives libnccl-net-reduction-server.so from several processes exactly as NCCL would, beside
# real reducers on loopback: CollNet and p2p for every exported version (v11, v10, v9, v8), CollNet
# with RS_WIRE_DTYPE=bf16, v11's CollNet with a reducer lost mid-run (killed, stopped; with caller
# progress also killed beside a stalled file system), then misuse (reducers down or hostile, a
# node dying, foreign handles). Bounded in time; cleans up on exit.
#   run_harness.sh <plugin_harness> <libnccl-net-reduction-server.so> <reduction-server>
#   RS_HARNESS_MATRIX=adapter   v11's CollNet run with the smaller matrix too (see below)
#   RS_HARNESS_VERSIONS="11"    the tables whose CollNet and p2p runs are made (default all four)
set -euo pipefail
harness=$1 plugin=$2 server=$3
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

# Two reducers on ephemeral ports (their logs are printed if a step fails), requiring a job
# secret that every plugin process proves: the reducers read it from a file, the plugin from
# RS_SECRET (the two ways a deployment hands it over).
secret=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
printf '%s\n' "$secret" >"$tmp/secret"
# shellcheck source=scripts/lib/local_reducers.sh
source "$(dirname "$0")/../../scripts/lib/local_reducers.sh"
# RS_HARNESS_FABRIC=<provider> (tcp here): every reducer offers the fabric on loopback and every
# plugin process takes it, so CollNet's payloads travel as RMA writes (proto/FABRIC.md); p2p
# stays the plugin's own TCP transport.
fabric_flags=()
if [[ -n ${RS_HARNESS_FABRIC:-} ]]; then
  fabric_flags=(--fabric-provider "$RS_HARNESS_FABRIC" --fabric-node 127.0.0.1)
  export RS_FABRIC=$RS_HARNESS_FABRIC RS_FABRIC_NODE=127.0.0.1 RS_HARNESS_EXPECT_FABRIC=1
fi
start_local_reducers "$server" 2 "$tmp" --io-threads 1 --log-level warn --secret-file "$tmp/secret" \
  ${fabric_flags[@]+"${fabric_flags[@]}"}

export NCCL_RS_IFNAME=lo RS_STREAMS=2 RS_CONNECT_TIMEOUT_MS=10000 NCCL_RS_RENDEZVOUS_TIMEOUT_MS=30000
export RS_SECRET="$secret"

# launch <label> <mode> <world> <version> [VAR=value ...]: starts W harness processes (their
# pids in `procs`, their shared folder `dir`); finish <label> waits for them: all must pass.
launch() {
  local label=$1 mode=$2 world=$3 version=$4 rank; shift 4
  dir="$tmp/$label" procs=() started=$SECONDS
  mkdir -p "$dir"
  for ((rank = 0; rank < world; rank++)); do
    env RS_REDUCERS="$reducers" "$@" timeout 300 "$harness" --plugin "$plugin" \
      --version "$version" --mode "$mode" --rank "$rank" --world "$world" --dir "$dir" &
    procs+=($!)
  done
}
# settle <label>: the same, false (the reducers' logs printed) where one failed.
settle() {
  local p failed=0
  for p in "${procs[@]}"; do wait "$p" || failed=1; done
  if ((failed)); then
    echo "FAILED: $1"
    tail -n 20 "$tmp"/reducer*.log "$tmp"/*/reducer*.log 2>/dev/null
    return 1
  fi
  echo "ok: $1 ($((SECONDS - started)) s)"
}
finish() { settle "$1" || exit 1; }
run() { launch "$@"; finish "$1"; }

# RS_HARNESS_INNER_DIR=<dir>: point-to-point delegated to an inner net plugin instead (the
# fixtures of tests/nccl_plugin/CMakeLists.txt in <dir>: this plugin's TCP transport built as
# RsInnerNetFixture, one library per table version). Each inner version carries the p2p run
# under our v11 table, as NCCL 2.28 drives it; our v9 and v8 tables (older NCCLs) over a v11 and
# a v10 inner; CollNet to the reducers beside a delegated net, the inner found by its bare name
# as NCCL finds NCCL_NET_PLUGIN; then what is refused. Each run checks the delegation's log line
# and the inner's own version line (plugin_harness.cc, checkDelegation).
if [[ -n ${RS_HARNESS_INNER_DIR:-} ]]; then
  fixture() { echo "$RS_HARNESS_INNER_DIR/libnccl-net-rs-inner-fixture-v$1.so"; }
  inner_env() { echo "NCCL_RS_INNER_NET=$2" RS_HARNESS_INNER=RsInnerNetFixture:$1 \
    RS_HARNESS_INNER_LIBRARY=libnccl-net-rs-inner-fixture; }
  for iv in 11 10 9 8; do
    # shellcheck disable=SC2046
    run "p2p-inner-v$iv" p2p 3 11 $(inner_env "$iv" "$(fixture "$iv")")
  done
  # shellcheck disable=SC2046
  run "p2p-v9-over-inner-v11" p2p 3 9 $(inner_env 11 "$(fixture 11)")
  # shellcheck disable=SC2046
  run "p2p-v8-over-inner-v10" p2p 3 8 $(inner_env 10 "$(fixture 10)")
  # shellcheck disable=SC2046
  run "collnet-beside-inner-v10" collnet-adapter 3 11 $(inner_env 10 rs-inner-fixture-v10) \
    LD_LIBRARY_PATH="$RS_HARNESS_INNER_DIR"
  run "inner-missing" inner-refused 1 11 NCCL_RS_INNER_NET=/nonexistent/libnccl-net-ib.so \
    RS_HARNESS_EXPECT_WARN="NCCL_RS_INNER_NET=/nonexistent/libnccl-net-ib.so did not load"
  run "inner-is-this-plugin" inner-refused 1 11 NCCL_RS_INNER_NET="$plugin" \
    RS_HARNESS_EXPECT_WARN="is this plugin itself"
  run "inner-without-tables" inner-refused 1 11 NCCL_RS_INNER_NET=libm.so.6 \
    RS_HARNESS_EXPECT_WARN="exports no ncclNetPlugin_v11"
  echo "all plugin harness runs passed (point-to-point delegated to an inner plugin)"
  exit 0
fi

# v11 with every (type, op) and size; the older tables reach the same code through their own
# argument lists, so each sends every type once and every op once. RS_HARNESS_MATRIX=adapter
# does the same for v11 (a sanitizer tree, where the full matrix takes minutes, and a second
# progress mode, which the types and ops do not meet).
read -r -a versions <<<"${RS_HARNESS_VERSIONS:-11 10 9 8}"
for v in "${versions[@]}"; do
  mode=collnet-adapter
  ((v == 11)) && [[ ${RS_HARNESS_MATRIX:-full} == full ]] && mode=collnet
  run "collnet-v$v" "$mode" 3 "$v"
  # p2p is the plugin's own TCP transport, fabric or not: the other runs have it.
  [[ -n ${RS_HARNESS_FABRIC:-} ]] || run "p2p-v$v" p2p 3 "$v"
done
# Wire compression: fp32 sums and averages travel as bf16 (the check expects bf16 rounding).
run "collnet-wire-bf16" collnet-adapter 3 11 RS_WIRE_DTYPE=bf16
# A reducer lost mid-run is not an error (proto/FAILOVER.md): 2 ranks loop all-reduces over 3
# fresh reducers; once each has completed 24, the third reducer gets <signal>; once each has
# completed 32 more (the 8 in flight at the loss among them), the loop stops at a round they
# agree on. Every all-reduce must come back exact with ncclSuccess, and each rank prints the
# loss's stall (its slowest all-reduce of those in flight when it found the loss) against the
# median. KILL: the streams reset and the loss is found at once, whatever the loss bound;
# STOP: a silent reducer, found within the loss bound, 5 s here (RS_LOSS_DETECT_MS and the
# reducers' --loss-detect-ms: the stream's bound is the lower), 10 s by default. Not 1 or 3 s: a CI
# machine loaded past its cores stalls a live reducer that long now and then, and a member
# that takes it for lost is a partition of one path (proto/FAILOVER.md, "The race left").
# A member in caller progress does its I/O only while its rank calls test(): a rank that waited
# for a CPU for half the bound (heartbeats go after a third of it) may have been silent to its
# reducers for all of it, which they rightly take for a loss. Such a failure shows nothing about
# the plugin: the case runs again, with twice the bound, up to 3 times (each rank reports its
# longest wait for a CPU between two test() calls; a rank blocked anywhere else is no excuse).
#   reducer_lost <label> <signal> <loss bound in ms, 0: the default> [VAR=value ...]
reducer_lost() {
  local label=$1 signal=$2 bound=$3 try name
  shift 3
  for try in 1 2 3; do
    name=$label
    ((try == 1)) || name="$label-try$try"
    reducer_lost_once "$name" "$signal" "$bound" "$@" && return 0
    starved "$bound" || exit 1
    echo "$label: a rank waited $starved_ms ms for a CPU between two test() calls, past half" \
         "the loss bound: starved, not failed; again with twice the bound"
    bound=$((2 * (bound ? bound : 10000)))
  done
  echo "FAILED: $label: starved in every try"
  exit 1
}
# starved <loss bound in ms, 0: the default>: a rank of the last launch reported a wait for a
# CPU within one stretch between test() calls of at least half the bound (starved_ms: the longest).
starved() {
  local bound=$1 r waited longest
  ((bound)) || bound=10000
  starved_ms=0
  for r in "${!procs[@]}"; do
    read -r waited longest 2>/dev/null <"$dir/attendance-$r" || continue
    ((waited > starved_ms)) && starved_ms=$waited
  done
  ((2 * starved_ms >= bound))
}
reducer_lost_once() {
  local label=$1 signal=$2 bound=$3 pool="$tmp/$1-pool" all=$reducers at flags=()
  shift 3
  ((bound)) && flags=(--loss-detect-ms "$bound")
  mkdir -p "$pool"
  # The job secret from RS_SECRET, exported above.
  start_local_reducers "$server" 3 "$pool" --io-threads 1 --log-level warn ${flags[@]+"${flags[@]}"} \
    ${fabric_flags[@]+"${fabric_flags[@]}"}
  local trio=("${pids[@]: -3}")
  launch "$label" collnet-reducer-lost 2 11 RS_LOSS_DETECT_MS="$bound" "$@"
  reducers=$all
  local ok=1
  if ! progress_at_least 24; then
    stuck "$label" "no 24 all-reduces before the loss"; ok=0
  else
    read -r at <"$dir/progress-0"
    kill "-$signal" "${trio[2]}"
    echo "$label: reducer 2 got SIG$signal with $at all-reduces completed on rank 0"
    if ! progress_at_least $((at + 32)); then
      stuck "$label" "no 32 more all-reduces after the loss"; ok=0
    else
      touch "$dir/stop"
      settle "$label" || ok=0
    fi
  fi
  kill -9 "${trio[@]}" 2>/dev/null || true
  wait "${trio[@]}" 2>/dev/null || true
  ((ok))
}
# progress_at_least N: every rank of the last launch has completed N all-reduces (false if one
# exited, or after 120 s: a hang guard, as the ranks' own).
progress_at_least() {
  local deadline=$((SECONDS + 120)) r n
  for r in "${!procs[@]}"; do
    until read -r n 2>/dev/null <"$dir/progress-$r" && ((n >= $1)); do
      kill -0 "${procs[r]}" 2>/dev/null && ((SECONDS < deadline)) || return 1
      sleep 0.01
    done
  done
}
# stuck <label> <why>: ends the last launch's ranks (timeout passes the TERM on) and prints
# the failure.
stuck() {
  echo "$1: $2"
  kill "${procs[@]}" 2>/dev/null || true
  settle "$1" || true
}
reducer_lost collnet-reducer-killed KILL 0
reducer_lost collnet-reducer-stopped STOP 5000
# Caller progress: the killed case with every file the ranks write 2.5 s late, as a machine's
# other writers stall a file system. The thread that calls test() must not wait on one (NCCL's
# proxy thread never does): a harness whose driving thread wrote them left its member silent
# for 10 s and the reducers took it for lost (two back to back at a round's end, 5 s unread).
if [[ ${RS_CLIENT_PROGRESS:-} == caller ]]; then
  reducer_lost collnet-reducer-killed-slow-files KILL 0 RS_HARNESS_SLOW_FILES_MS=2500
fi
# Over the fabric: the loss steps above are the fabric's; what follows (misuse, handles, the
# version line) is the plugin's own, the same fabric or not, and the other runs have it.
if [[ -n ${RS_HARNESS_FABRIC:-} ]]; then
  echo "all plugin harness runs passed (CollNet over the fabric: $RS_HARNESS_FABRIC)"
  exit 0
fi
# Reducers down: a port where nothing listens; connect must fail on every node, promptly.
dead=$(( $(cut -d' ' -f1 "$tmp/r0.port") ))
kill -9 "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true
run "collnet-reducers-down" collnet-down 2 11 RS_CONNECT_TIMEOUT_MS=1500 \
    RS_REDUCERS="127.0.0.1:$dead"
# A reducer that accepts and then never speaks: connect must fail, not hang, within
# RS_CONNECT_TIMEOUT_MS; then one whose ERROR reason holds terminal escapes and forged lines:
# NCCL's log gets it escaped (the harness is its own reducer and sets RS_REDUCERS).
run "collnet-hostile-reducer" collnet-hostile-reducer 1 11 RS_CONNECT_TIMEOUT_MS=1500
reducers=${reducers#*,}  # the surviving reducer
run "collnet-node-dies" collnet-die 3 11
run "p2p-peer-dies" p2p-die 2 11
run "bad-handles" bad-handle 1 11
# The plugin announces its build through NCCL's logger at init (NCCL_DEBUG=INFO shows it).
RS_HARNESS_VERBOSE=1 timeout 60 "$harness" --plugin "$plugin" --version 11 --mode bad-handle \
  --rank 0 --world 1 --dir "$tmp" >"$tmp/verbose.log" 2>&1 || true
grep -E "libnccl-net-reduction-server [0-9.]+ \(commit [^,]+, [^,]+, SIMD [A-Z0-9_]+\)" \
  "$tmp/verbose.log" || { echo "FAILED: no version line in the plugin's INFO log"; cat "$tmp/verbose.log"; exit 1; }
# The reducers required the secret (an open one warns at start).
if grep -q "is OPEN" "$tmp"/reducer*.log "$tmp"/*-pool/reducer*.log; then echo "FAILED: a reducer ran without the job secret"; exit 1; fi
echo "all plugin harness runs passed"
