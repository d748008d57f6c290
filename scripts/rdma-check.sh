#!/usr/bin/env bash
# The one-shot RDMA check, for a machine with a verbs (InfiniBand, RoCE) or EFA device and this
# repository (issue 28, item 6). It finds the device (fi_info -p verbs / -p efa, ibv_devices,
# /sys/class/infiniband), picks the libfabric provider, builds the release tree if needed, and:
#   1. fabric-suites   tests/fabric ('[fabric]') on that provider (RS_TEST_FABRIC_PROVIDER/_NODE)
#   2. fabric-bw       bench/fabric_write_bw on that provider: our layer's RMA writes, 4 KiB..64 MiB
#   3. fabric-bw-tcp   the same on libfabric's tcp provider, on this host
#   4. ib_write_bw     perftest's ib_write_bw over the device, loopback, as the hardware's own
#                      figure measured in the same run (if installed: this script installs nothing)
#   5. allreduce-tcp   the TCP all-reduce bench (allreduce_perf --local-pool) at W = 2, 3, 4
#   6. allreduce-fabric  the same all-reduce bench with the reducers offering the fabric on
#                      that provider (RS_FABRIC_PROVIDER) and the workers taking it (RS_FABRIC),
#                      send buffers registered (--register: zero-copy, as NCCL's regMr): a step
#                      fails if any worker fell back to TCP
# and writes one report (markdown): the machine, the devices, the provider's line, each step's
# result, time and key lines; the steps' logs go in a folder beside it. Every step runs under
# `timeout` (build 1800 s, suites 600 s, each bench 300 s), and what a step starts it stops.
#   scripts/rdma-check.sh [--provider verbs|efa|tcp] [--node ADDR] [--report FILE] [--quick]
#                         [--no-build] [--build-dir DIR]
#     --provider P    default: efa if fi_info finds it, else verbs. `tcp` is a dry run of this
#                     script on any machine: everything runs on libfabric's tcp provider over
#                     loopback, and the report says NOT RDMA HARDWARE everywhere.
#     --node ADDR     the local address or interface the provider binds (default: the
#                     provider's first domain; 127.0.0.1 on tcp)
#     --report FILE   default: ./rdma-check-report.md (logs in ./rdma-check-report-logs/)
#     --quick         small sizes and short runs, and of the suites the channel's cases only
#                     (CI's check of the script itself; CI runs the whole suites anyway)
#     --no-build      use the binaries in the build folder as they are
#     --build-dir DIR default: build/release
#   RDMA_CHECK_REDUCERS: reducer processes of the TCP all-reduce's local pool (default 2)
# Exit status: 0 every step that could run passed, 1 a step failed, 2 no verbs or EFA device
# here (and no --provider tcp), or a bad argument.
set -euo pipefail
invoked=$(printf '%s' "$0"; printf ' %s' "$@")
start_dir=$PWD
cd "$(dirname "$0")/.."
repo=$PWD

provider="" node="" report=$start_dir/rdma-check-report.md quick=0 build=1 bdir=$repo/build/release
while (($#)); do
  case "$1" in
    --provider) provider=${2:?--provider needs verbs, efa or tcp}; shift 2 ;;
    --node) node=${2:?--node needs an address}; shift 2 ;;
    --report) report=${2:?--report needs a file}; [[ $report == /* ]] || report=$start_dir/$report; shift 2 ;;
    --quick) quick=1; shift ;;
    --no-build) build=0; shift ;;
    --build-dir) bdir=${2:?--build-dir needs a folder}; [[ $bdir == /* ]] || bdir=$start_dir/$bdir; shift 2 ;;
    -h|--help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "rdma-check: unknown argument $1 (--help lists them)" >&2; exit 2 ;;
  esac
done
case "$provider" in
  ""|verbs|efa|tcp) ;;
  *) echo "rdma-check: --provider $provider: verbs, efa or tcp" >&2; exit 2 ;;
esac

began=$SECONDS
say() { echo "rdma-check: [$((SECONDS - began)) s] $*"; }

# --- the device -----------------------------------------------------------------------------
# fi_info exits non-zero (-61, no data) where the provider finds no device.
have_fi_info=0; command -v fi_info >/dev/null && have_fi_info=1
fi_has() { ((have_fi_info)) && timeout 20 fi_info -p "$1" >/dev/null 2>&1; }
sys_devices=$(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ' | sed 's/ $//' || true)
found=""
if fi_has efa; then found=efa
elif fi_has verbs; then found=verbs
elif [[ -n $sys_devices ]]; then found=verbs  # a device libfabric does not see: the suites say why
fi
dry=0
if [[ $provider == tcp ]]; then
  dry=1
elif [[ -z $found ]]; then
  echo "rdma-check: no verbs or EFA device here (fi_info -p verbs and -p efa found none$(
    ((have_fi_info)) || echo ': fi_info is not installed (libfabric-bin)'), /sys/class/infiniband" \
    "is empty or absent); nothing to measure. --provider tcp runs the whole check on libfabric's" \
    "tcp provider as a dry run of this script (NOT RDMA HARDWARE)." >&2
  exit 2
elif [[ -z $provider ]]; then
  provider=$found
elif [[ $provider != "$found" ]] && ! fi_has "$provider"; then
  echo "rdma-check: --provider $provider: fi_info finds no $provider device here (it finds $found)" >&2
  exit 2
fi
[[ $dry == 1 && -z $node ]] && node=127.0.0.1
mark=""; ((dry)) && mark=" (tcp provider: NOT RDMA HARDWARE)"

mkdir -p "$(dirname "$report")"
logs=${report%.md}-logs
rm -rf "$logs"
mkdir -p "$logs"
work=$(mktemp -d)
pids=()
# Whatever a step left running (ib_write_bw's server), and the job secret.
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# --- the machine ----------------------------------------------------------------------------
machine=()
fact() { machine+=("- $1: $2"); }
fact host "$(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)"
fact date "$(date -u '+%Y-%m-%d %H:%M UTC')"
fact OS "$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-unknown}"); kernel $(uname -r)"
fact CPUs "$(nproc) x $(grep -m 1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
fact commit "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
  git -C "$repo" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
if ((have_fi_info)); then
  fact libfabric "$(fi_info --version 2>&1 | grep -m 1 '^libfabric:' | sed 's/^libfabric: *//')"
else
  fact libfabric "fi_info not installed (Debian: libfabric-bin)"
fi
# Registration pins memory: a low limit (containers) fails fabric_write_bw's large sizes on verbs.
fact "locked-memory limit (ulimit -l)" "$(ulimit -l) KiB"
fact "/sys/class/infiniband" "${sys_devices:-none}"
if command -v ibv_devices >/dev/null; then
  fact ibv_devices "$(timeout 10 ibv_devices 2>&1 | tr -s ' \t' ' ' | tr '\n' ';' | sed 's/;$//')"
else
  fact ibv_devices "not installed (ibverbs-utils)"
fi
for p in verbs efa; do
  if fi_has "$p"; then
    fact "fi_info -p $p" "$(timeout 20 fi_info -p "$p" 2>&1 | grep -E '^ *(provider|domain|fabric):' |
      sed 's/^ *//' | paste -sd' ' | cut -c1-300)"
  else
    fact "fi_info -p $p" "none"
  fi
done
fact "provider under test" "$provider${node:+ on $node}$mark"

# --- the steps ------------------------------------------------------------------------------
steps=()       # "name|result|seconds|what it ran"
failed=0
key_lines=()   # "name|lines"
record() {     # name result seconds command [key lines]
  steps+=("$1|$2|$3|$4")
  key_lines+=("$1|${5:-}")
  [[ $2 == passed* || $2 == skipped* || $2 == "not run"* ]] || failed=1
  say "$1: $2 ($3 s)"
}
# name bound log command...: runs it under `timeout` (its whole process group), sets $rc, $took.
run_step() {
  local name=$1 bound=$2 log=$3; shift 3
  local t0=$SECONDS
  say "$name: running (bound $bound s)"
  set +e
  timeout --kill-after=10 "$bound" "$@" >"$log" 2>&1
  rc=$?
  set -e
  took=$((SECONDS - t0))
  ((rc != 124 && rc != 137)) || echo "rdma-check: timed out after $bound s" >>"$log"
}
verdict() { # rc bound
  case "$1" in 0) echo passed ;; 124|137) echo "FAILED: timed out after $2 s" ;; *) echo "FAILED: exit $1" ;; esac
}

# 0. build
tests_bin=$bdir/tests/fabric_tests bw_bin=$bdir/bench/fabric_write_bw
perf_bin=$bdir/bench/allreduce_perf server_bin=$bdir/server/reduction-server
if ((build)); then
  run_step build 1800 "$logs/build.log" scripts/build.sh release
  if ((rc == 0)); then record build passed "$took" "scripts/build.sh release"
  else record build "$(verdict $rc 1800)" "$took" "scripts/build.sh release" "$(tail -n 15 "$logs/build.log")"
  fi
fi
for b in "$tests_bin" "$bw_bin" "$perf_bin"; do
  [[ -x $b ]] || { echo "rdma-check: $b is missing (the release tree was built without libfabric?)" >&2; failed=1; }
done

export RS_TEST_FABRIC_PROVIDER=$provider RS_TEST_FABRIC_NODE=$node

# 1. the fabric suites
if [[ -x $tests_bin ]]; then
  suites='[fabric]'
  ((quick)) && suites='[fabric][channel]'
  run_step fabric-suites 600 "$logs/fabric-suites.log" "$tests_bin" "$suites"
  record fabric-suites "$(verdict $rc 600)" "$took" \
    "RS_TEST_FABRIC_PROVIDER=$provider RS_TEST_FABRIC_NODE=$node fabric_tests '$suites'" \
    "$(grep -E '^(All tests passed|test cases:|assertions:)|FAILED|provider ' "$logs/fabric-suites.log" | tail -n 12)"
fi

# 2, 3. our layer's RMA writes: on the provider, and on tcp beside it
if ((quick)); then bw_args=(--sizes 4K,64K,1M --seconds 0.2 --window 4)
else bw_args=(--sizes 4K,16K,64K,256K,1M,4M,16M,64M --seconds 1 --window 8)
fi
bw_step() { # name provider node
  local args=(--provider "$2" "${bw_args[@]}")
  [[ -n $3 ]] && args+=(--node "$3")
  run_step "$1" 300 "$logs/$1.log" "$bw_bin" "${args[@]}"
  record "$1" "$(verdict $rc 300)" "$took" "fabric_write_bw ${args[*]}" \
    "$(grep -vE '^$' "$logs/$1.log" | tail -n 20)"
}
if [[ -x $bw_bin ]]; then
  bw_step fabric-bw "$provider" "$node"
  if ((dry)); then
    record fabric-bw-tcp "skipped: the provider under test is tcp (step fabric-bw)" 0 "-"
  else
    bw_step fabric-bw-tcp tcp 127.0.0.1
  fi
fi

# 4. the hardware's own figure: perftest's ib_write_bw, server and client on this host
ib_dev=$(timeout 10 ibv_devices 2>/dev/null | awk 'NR > 2 && NF { print $1; exit }' || true)
[[ -n $ib_dev ]] || ib_dev=${sys_devices%% *}
if ((dry)); then
  record ib_write_bw "skipped: NOT RDMA HARDWARE (tcp dry run)" 0 "-"
elif ! command -v ib_write_bw >/dev/null; then
  record ib_write_bw "not run: perftest's ib_write_bw is not installed (this script installs nothing)" 0 "-"
elif [[ -z $ib_dev ]]; then
  record ib_write_bw "not run: no verbs device name (ibv_devices, /sys/class/infiniband)" 0 "-"
else
  ib_args=(-d "$ib_dev" -a -F --report_gbits -p 18515)
  ((quick)) && ib_args+=(-n 200)
  timeout 300 ib_write_bw "${ib_args[@]}" >"$logs/ib_write_bw-server.log" 2>&1 &
  pids+=($!)
  sleep 1
  run_step ib_write_bw 300 "$logs/ib_write_bw.log" ib_write_bw "${ib_args[@]}" 127.0.0.1
  record ib_write_bw "$(verdict $rc 300)" "$took" "ib_write_bw ${ib_args[*]} (server and client on this host)" \
    "$(grep -E '^ *[0-9]+ +[0-9]+ ' "$logs/ib_write_bw.log" | tail -n 24)"
fi

# 5. the TCP all-reduce at W = 2, 3, 4 on this host, with a job secret as run.sh does
umask 077
od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$work/job-secret"
export RS_SECRET_FILE=$work/job-secret
if ((quick)); then ar_args=(-b 4K -e 256K -f 4 -n 3 -w 1)
else ar_args=(-b 4K -e 64M -f 4 -n 10 -w 2)
fi
reducers=${RDMA_CHECK_REDUCERS:-2}
if [[ -x $perf_bin ]]; then
  for w in 2 3 4; do
    run_step "allreduce-tcp-W$w" 300 "$logs/allreduce-tcp-W$w.log" \
      "$perf_bin" --local-pool "$reducers" --workers "$w" --server-bin "$server_bin" "${ar_args[@]}"
    record "allreduce-tcp-W$w" "$(verdict $rc 300)" "$took" \
      "allreduce_perf --local-pool $reducers --workers $w ${ar_args[*]}" \
      "$(grep -E '^# raw loopback|^ +[0-9]+ +[0-9]+ |^# Avg bus|Out of bounds' "$logs/allreduce-tcp-W$w.log")"
  done
fi

# 6. the same all-reduce with its payloads over the fabric: the reducers offer it on the provider
# (their RS_FABRIC_PROVIDER), the workers take it (RS_FABRIC); a worker that fell back to TCP
# says so in one line, which fails the step (the figure would be TCP's).
if [[ -x $perf_bin ]]; then
  for w in 2 3 4; do
    run_step "allreduce-fabric-W$w" 300 "$logs/allreduce-fabric-W$w.log" \
      env RS_FABRIC_PROVIDER="$provider" RS_FABRIC_NODE="$node" RS_FABRIC="$provider" \
      RS_FABRIC_NODE="$node" \
      "$perf_bin" --local-pool "$reducers" --workers "$w" --server-bin "$server_bin" \
      --register "${ar_args[@]}"
    result=$(verdict $rc 300)
    if [[ $result == passed ]] && grep -q "fabric not used" "$logs/allreduce-fabric-W$w.log"; then
      result="FAILED: a worker fell back to TCP ($(grep -m1 -o 'fabric not used.*' "$logs/allreduce-fabric-W$w.log"))"
    fi
    record "allreduce-fabric-W$w" "$result" "$took" \
      "RS_FABRIC_PROVIDER=$provider RS_FABRIC=$provider RS_FABRIC_NODE=$node allreduce_perf --local-pool $reducers --workers $w --register ${ar_args[*]}" \
      "$(grep -E '^# raw loopback|^ +[0-9]+ +[0-9]+ |^# Avg bus|^# Fabric|Out of bounds' "$logs/allreduce-fabric-W$w.log")"
  done
fi

# --- the report -----------------------------------------------------------------------------
verdict_line="PASSED: every step that could run passed"
((failed)) && verdict_line="FAILED: a step failed (below)"
{
  if ((dry)); then
    echo "# RDMA check: NOT RDMA HARDWARE (tcp provider dry run)"
    echo
    echo "**NOT RDMA HARDWARE.** Everything below ran on libfabric's tcp provider over loopback, as a"
    echo "check of this script and of the fabric layer's correctness; no figure here is an RDMA figure."
  else
    echo "# RDMA check: $provider"
  fi
  echo
  echo "$verdict_line. Command: \`$invoked\`; $((SECONDS - began)) s in all; logs in \`$logs\`."
  echo
  echo "## Machine"
  echo
  printf '%s\n' "${machine[@]}"
  echo
  echo "## Steps"
  echo
  echo "| step | result | s | command |"
  echo "|---|---|---|---|"
  for s in "${steps[@]}"; do
    IFS='|' read -r name result secs cmd <<<"$s"
    echo "| $name | $result | $secs | \`$cmd\` |"
  done
  echo
  echo "The fabric all-reduce is NOT measured: the reducer and the client do not use the fabric yet;"
  echo "the all-reduce rows above are TCP's, on this host, for comparison once it is wired."
  for k in "${key_lines[@]}"; do
    name=${k%%|*} lines=${k#*|}
    [[ -n $lines ]] || continue
    echo
    # The fabric's steps carry the dry run's mark; TCP's all-reduce is TCP's either way.
    [[ $name == fabric* ]] && echo "### $name$mark" || echo "### $name"
    echo
    echo '```'
    echo "$lines"
    echo '```'
  done
} >"$report"
say "$verdict_line; report: $report"
((failed)) && exit 1
exit 0
