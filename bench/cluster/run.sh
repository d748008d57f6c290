#!/usr/bin/env bash
# The reduction server against ring all-reduce peers on the same emulated links, in one run.
# Builds a cluster (cluster.sh: W worker and R reducer namespaces, every link shaped to --rate
# both ways), measures a link with iperf3, starts one reduction-server per reducer host and one
# allreduce_perf per worker host, then runs each peer (Gloo ring / chunked ring / halving-
# doubling, Open MPI default / forced ring) on the same worker hosts and links. Each size's row
# is timestamped as it arrives, so CPU use is attributed per size: machine busy % (/proc/stat,
# and the peak 1 s sample of `mpstat 1`), and for our run the reducers' user+sys CPU seconds and
# received bytes, hence vCPU per 10 Gbit/s. Writes raw outputs, results.csv and report.md.
# Three floors may join the peers: `pingpong` (tcp_pingpong from w0 to r0: the round trip of each
# size, for "ours / floor" in time), `gather` (tcp_pingpong on every reducer host with every
# worker a client: our all-reduce's messages without the reduction) and `relay` (tcp_relay on
# every reducer host, driven from every worker host with our run's bytes per stream: its CPU per
# byte beside the reducers'; paced as ours is, with --pace on).
#
#   bench/cluster/run.sh [-W 4] [-R 4] [--rate 1gbit] [-b 8K] [-e 64M] [-f 2] [-n 10] [-w 2]
#                        [--peers gloo_ring,gloo_chunked,gloo_hd,mpi_default,mpi_ring[,pingpong,gather,relay]]
#                        [--out DIR] [--build build/release] [--budget 1800] [--step-timeout 600]
#                        [--server-io-threads 1] [--streams auto|N] [--link-seconds 2] [--queue 20ms]
#                        [--host-queue 20ms] [--pace on|off] [--backlog PACKETS]
#                        [--server-args "--max-lead 256KiB"] [--perf-args "--iteration-times"]
#                        [--cc reno|bbr] [--host-napi inline|threaded] [--mtu 1500]
#                        [--server-bin P] [--perf-bin P] [--gloo-bin P] [--mpi-bin P]
#                        [--pingpong-bin P] [--relay-bin P]
# Needs root. Bounded by --budget (a `timeout` around the whole script) and --step-timeout per
# implementation; the namespaces and every process in them go on any exit (trap EXIT INT TERM).
# After a kill -9, `bench/cluster/cluster.sh --cleanup` removes the leftovers.
set -euo pipefail
export LC_ALL=C  # EPOCHREALTIME with a '.', mpstat in a known format
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
orig_args=("$@")

W=4 R="" RATE=1gbit MIN=8K MAX=64M FACTOR=2 ITERS=10 WARMUP=2
PEERS=gloo_ring,gloo_chunked,gloo_hd,mpi_default,mpi_ring
OUT="" BUILD=$repo/build/release BUDGET=1800 STEP_TIMEOUT=600 IO_THREADS=1 STREAMS=auto LINK_SECS=2
SERVER_ARGS="" PERF_ARGS=""
# Ours is told the link rate, as a deployment tells it the NIC's (--link-gbps, RS_LINK_GBPS):
# its streams are then paced to an equal share of the link (core/transport/link_share.h).
PACE=on
# net.core.netdev_max_backlog for the run (restored at exit): the per-CPU receive queue that
# every host's veth shares on this machine. Empty: left as it is.
BACKLOG=""
SERVER_BIN="" PERF_BIN="" GLOO_BIN="" MPI_BIN="" PINGPONG_BIN="" RELAY_BIN=""
while (($#)); do
  case $1 in
    -W|--workers) W=$2 ;; -R|--reducers) R=$2 ;; --rate) RATE=$2 ;;
    -b) MIN=$2 ;; -e) MAX=$2 ;; -f) FACTOR=$2 ;; -n) ITERS=$2 ;; -w) WARMUP=$2 ;;
    --peers) PEERS=$2 ;; --out) OUT=$2 ;; --build) BUILD=$2 ;; --budget) BUDGET=$2 ;;
    --step-timeout) STEP_TIMEOUT=$2 ;; --server-io-threads) IO_THREADS=$2 ;;
    --streams) STREAMS=$2 ;; --server-args) SERVER_ARGS=$2 ;; --link-seconds) LINK_SECS=$2 ;; --queue) CLUSTER_TBF_LATENCY=$2 ;; --host-queue) CLUSTER_HOST_TBF_LATENCY=$2 ;;
    --cc) CLUSTER_CC=$2 ;; --perf-args) PERF_ARGS=$2 ;; --pace) PACE=$2 ;; --backlog) BACKLOG=$2 ;;
    --host-napi) CLUSTER_HOST_NAPI=$2 ;; --mtu) CLUSTER_MTU=$2 ;;
    --server-bin) SERVER_BIN=$2 ;; --perf-bin) PERF_BIN=$2 ;; --gloo-bin) GLOO_BIN=$2 ;;
    --mpi-bin) MPI_BIN=$2 ;; --pingpong-bin) PINGPONG_BIN=$2 ;; --relay-bin) RELAY_BIN=$2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option '$1' (--help)" >&2; exit 2 ;;
  esac
  shift 2
done
R=${R:-$W}
# The client's automatic count (ClientOptions::streamsFor), written out for the report and the relay.
if [[ $STREAMS == auto ]]; then
  STREAMS=$((16 / R))
  if ((STREAMS > 4)); then STREAMS=4; elif ((STREAMS < 1)); then STREAMS=1; fi
fi

# shellcheck source=bench/cluster/harness.sh
source "$here/harness.sh"  # and cluster.sh
# The whole run under one deadline: timeout TERMs this script (its trap tears down), and
# KILLs after a grace period; `cluster.sh --cleanup` handles what a KILL leaves.
harness_bound "$BUDGET" "$0" "${orig_args[@]}"
CLUSTER_PREFIX=${RS_CLUSTER_PREFIX:-rsc$$}
SERVER_BIN=${SERVER_BIN:-$BUILD/server/reduction-server}
PERF_BIN=${PERF_BIN:-$BUILD/bench/allreduce_perf}
GLOO_BIN=${GLOO_BIN:-$BUILD/bench/peers/gloo_allreduce}
MPI_BIN=${MPI_BIN:-$BUILD/bench/peers/mpi_allreduce}
PINGPONG_BIN=${PINGPONG_BIN:-$BUILD/bench/tcp_pingpong}
RELAY_BIN=${RELAY_BIN:-$BUILD/bench/tcp_relay}
OUT=${OUT:-${TMPDIR:-/tmp}/rs-cluster/$(date +%Y%m%d-%H%M%S)-W${W}R${R}-$RATE}

log() { echo "run: $*" >&2; }
die() { log "$*"; exit 1; }

[[ -x $SERVER_BIN && -x $PERF_BIN ]] || die "need $SERVER_BIN and $PERF_BIN (scripts/build.sh release, or --build/--server-bin/--perf-bin)"
((W >= 2 && R >= 1)) || die "need -W >= 2 and -R >= 1"
why=$(cluster_supported) || die "cannot build an emulated cluster here: $why"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# --- teardown on every exit path ---------------------------------------------------------------
helpers=()  # root-namespace helpers (mpstat); everything else runs inside the namespaces
harness_cleanup() {
  for p in "${helpers[@]}"; do kill "$p" 2>/dev/null; done
  [[ -n ${saved_backlog:-} ]] && sysctl -q -w "net.core.netdev_max_backlog=$saved_backlog"
}
harness_guard "$OUT"

# --- per-row CPU attribution -------------------------------------------------------------------
RED_PIDS=()
RED_RX_THREADS=()  # the reducer hosts' receive threads (--host-napi threaded)
CLK_TCK=$(getconf CLK_TCK)
# Sets TICKS to the user+sys CPU ticks of the given pids (a pid that is gone counts nothing).
cpu_ticks() {
  local line pid
  local -a f
  TICKS=0
  for pid in "$@"; do
    read -r line 2>/dev/null <"/proc/$pid/stat" || continue
    read -ra f <<<"${line##*) }"  # fields from 3 (state) on: utime is field 14, stime 15
    TICKS=$((TICKS + f[11] + f[12]))
  done
}

# Sets SNAP_T (us), SNAP_BUSY/SNAP_TOTAL (machine ticks), SNAP_RED_TICKS (reducers' user+sys),
# SNAP_RED_RX (bytes the reducers' interfaces received, headers included), SNAP_RED_KTICKS (the
# reducer hosts' receive threads' CPU).
snapshot() {
  # No forks here: rows are stamped as they arrive, and a slow reader would lag behind them.
  local user nice sys idle iowait irq soft steal line pid
  local -a f
  SNAP_T=${EPOCHREALTIME/./}
  read -r _ user nice sys idle iowait irq soft steal _ </proc/stat
  SNAP_TOTAL=$((user + nice + sys + idle + iowait + irq + soft + steal))
  SNAP_BUSY=$((SNAP_TOTAL - idle - iowait))
  cpu_ticks "${RED_PIDS[@]}"; SNAP_RED_TICKS=$TICKS
  cpu_ticks "${RED_RX_THREADS[@]}"; SNAP_RED_KTICKS=$TICKS
  SNAP_RED_RX=0
  for pid in "${RED_PIDS[@]}"; do
    # The reducer's own namespace: /proc/<pid>/net/dev shows eth0 of its host.
    while read -r line; do
      if [[ $line == eth0:* ]]; then
        read -ra f <<<"${line#eth0:}"
        SNAP_RED_RX=$((SNAP_RED_RX + f[0]))
      fi
    done 2>/dev/null <"/proc/$pid/net/dev" || true
  done
}

# Copies rank 0's output to $2 and, for each table row, appends to $ROWS the row and the
# counters' change since the previous row: each size's window holds its warm-up, timed
# iterations and check. The first window starts at the table header when the header arrives
# on its own (the peers flush it), else at the start (allreduce_perf's header comes with its
# first row, so that window also holds connecting to the reducers).
stamp_rows() {  # impl raw-file
  local impl=$1 raw=$2 line t0 b0 n0 k0 x0 q0
  snapshot; t0=$SNAP_T b0=$SNAP_BUSY n0=$SNAP_TOTAL k0=$SNAP_RED_TICKS x0=$SNAP_RED_RX q0=$SNAP_RED_KTICKS
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$raw"
    if [[ $line =~ ^#.*\(B\) ]] && ! read -t 0; then
      snapshot; t0=$SNAP_T b0=$SNAP_BUSY n0=$SNAP_TOTAL k0=$SNAP_RED_TICKS x0=$SNAP_RED_RX q0=$SNAP_RED_KTICKS
    elif [[ $line =~ ^\ +[0-9]+\ +[0-9]+\  ]]; then
      snapshot
      read -r size _ _ _ time_us algbw busbw wrong _ <<<"$line"
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$impl" "$size" "$time_us" \
        "$algbw" "$busbw" "$wrong" "$t0" "$SNAP_T" $((SNAP_BUSY - b0)) $((SNAP_TOTAL - n0)) \
        $((SNAP_RED_TICKS - k0)) $((SNAP_RED_RX - x0)) $((SNAP_RED_KTICKS - q0)) >>"$ROWS"
      t0=$SNAP_T b0=$SNAP_BUSY n0=$SNAP_TOTAL k0=$SNAP_RED_TICKS x0=$SNAP_RED_RX q0=$SNAP_RED_KTICKS
    fi
  done
}

# Stops whatever an implementation left in the worker hosts (the reducers live elsewhere).
clear_workers() {
  local i pids
  for ((i = 0; i < W; i++)); do
    pids=$(ip netns pids "$(cluster_ns "w$i")" 2>/dev/null | tr '\n' ' ')
    # shellcheck disable=SC2086
    if [[ -n ${pids// /} ]]; then kill -9 $pids 2>/dev/null || true; fi
  done
}

failed=()
wait_port_file() {  # file what: a floor's "<port> <pid>" once it listens
  local t
  for ((t = 0; t < 200; t++)); do [[ -s $1 ]] && return 0; sleep 0.1; done
  die "$2 did not start (no $1)"
}
# A floor's server on every reducer host: "$@" --listen <host>:PORT --port-file
# $OUT/NAME<j>.port (log NAME<j>.log), each waited for. Sets FLOOR_SERVERS (host:port,...) and
# FLOOR_PIDS.
start_floor_servers() {  # name port cmd...
  local name=$1 port=$2 j a
  shift 2
  FLOOR_SERVERS="" FLOOR_PIDS=()
  for ((j = 0; j < R; j++)); do
    a=$(cluster_addr "r$j")
    cluster_exec "r$j" "$@" --listen "$a:$port" --port-file "$OUT/$name$j.port" >"$OUT/$name$j.log" 2>&1 &
    FLOOR_SERVERS+="${FLOOR_SERVERS:+,}$a:$port"
  done
  for ((j = 0; j < R; j++)); do
    wait_port_file "$OUT/$name$j.port" "$name $j"
    FLOOR_PIDS+=("$(cut -d' ' -f2 "$OUT/$name$j.port")")
  done
}

# Runs one implementation: rank r's command line is "$@" with {rank} and {addr} substituted,
# one process per worker host; or, with W=0 given as $2, one launcher in w0 (mpirun).
run_impl() {  # impl per-host|launcher cmd...
  local impl=$1 mode=$2; shift 2
  local -a pids=()
  local i rc=0 loss0 loss1
  log "$impl: start"
  loss0=$(cluster_loss)
  if [[ $mode == launcher ]]; then
    { cluster_exec w0 timeout -k 10 "$STEP_TIMEOUT" "$@" 2>"$OUT/$impl.err" |
        stamp_rows "$impl" "$OUT/$impl.log"; } &
    pids+=($!)
  else
    for ((i = W - 1; i >= 0; i--)); do
      local -a cmd=("${@//\{rank\}/$i}")
      cmd=("${cmd[@]//\{addr\}/$(cluster_addr "w$i")}")
      if ((i == 0)); then
        { cluster_exec w0 timeout -k 10 "$STEP_TIMEOUT" "${cmd[@]}" 2>"$OUT/$impl.err" |
            stamp_rows "$impl" "$OUT/$impl.log"; } &
      else
        cluster_exec "w$i" timeout -k 10 "$STEP_TIMEOUT" "${cmd[@]}" >"$OUT/$impl.rank$i.log" 2>&1 &
      fi
      pids+=($!)
    done
  fi
  for i in "${pids[@]}"; do wait "$i" || rc=$?; done
  clear_workers
  loss1=$(cluster_loss)
  # shellcheck disable=SC2086  # two lists of five counters
  paste -d' ' <(tr ' ' '\n' <<<"$loss0") <(tr ' ' '\n' <<<"$loss1") |
    awk -v impl="$impl" '{ d[NR] = $2 - $1 } END { printf "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", impl, d[1], d[2], d[3], d[4], d[5], d[6] }' >>"$OUT/loss.tsv"
  if ((rc != 0)); then
    failed+=("$impl(exit $rc)")
    log "$impl: FAILED with exit $rc (see $OUT/$impl.err, $OUT/$impl.rank*.log)"
  else
    log "$impl: done"
  fi
}

# --- the run -----------------------------------------------------------------------------------
sweep=(-b "$MIN" -e "$MAX" -f "$FACTOR" -n "$ITERS" -w "$WARMUP")
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet HEAD -- 2>/dev/null || echo ' (tree modified)')"
  echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -r)"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "command: $0 ${orig_args[*]}"
  echo "workers: $W, reducers: $R, link rate: $RATE (tbf, both ends, latency $CLUSTER_TBF_LATENCY, host end ${CLUSTER_HOST_TBF_LATENCY:-$CLUSTER_TBF_LATENCY}), TCP congestion control $CLUSTER_CC, MTU $CLUSTER_MTU, host receive work $CLUSTER_HOST_NAPI, netdev_max_backlog ${BACKLOG:-$(sysctl -n net.core.netdev_max_backlog)}"
  echo "sweep: ${sweep[*]}, fp32 sum; reducers: --io-threads $IO_THREADS $SERVER_ARGS; workers: --streams $STREAMS $PERF_ARGS; ours paced to the link rate: $PACE"
} >"$OUT/setup.txt"
: >"$OUT/rows.tsv"
: >"$OUT/loss.tsv"
ROWS=$OUT/rows.tsv  # where stamp_rows writes: the relay's rows go to floors.tsv instead

if [[ -n $BACKLOG ]]; then
  [[ $BACKLOG =~ ^[0-9]+$ ]] || die "--backlog takes a packet count, not '$BACKLOG'"
  saved_backlog=$(sysctl -n net.core.netdev_max_backlog)
  sysctl -q -w "net.core.netdev_max_backlog=$BACKLOG"
fi
cluster_create "$W" "$R" "$RATE"
cluster_measure_link w0 r0 "$LINK_SECS" || true
echo "link measured (iperf3 --bidir w0<->r0, Mbit/s each way at once): ${LINK_MBPS:-not measured}" >>"$OUT/setup.txt"

if command -v mpstat >/dev/null; then
  # Every mpstat line stamped with the epoch in microseconds, to match the rows' windows. The
  # count ends it by itself even if this script is killed with -9.
  (exec env S_TIME_FORMAT=ISO stdbuf -oL mpstat 1 "$BUDGET") > >(while IFS= read -r l; do
    printf '%s %s\n' "${EPOCHREALTIME/./}" "$l"; done >"$OUT/mpstat.log") 2>/dev/null &
  helpers+=($!)
else
  log "mpstat (sysstat) not installed: no 1 s CPU samples"
fi

[[ $PACE == on || $PACE == off ]] || die "--pace on|off, not '$PACE'"
link_gbps=0
if [[ $PACE == on ]]; then
  link_gbps=$(awk -v b="$(cluster_rate_bits "$RATE")" 'BEGIN { printf "%.6g", b / 1e9 }')
fi
# shellcheck disable=SC2086  # --server-args is a list of flags, split on purpose
harness_start_reducers "$SERVER_BIN" "$OUT" --io-threads "$IO_THREADS" --link-gbps "$link_gbps" \
  $SERVER_ARGS --log-level warn
reducers=$HARNESS_REDUCERS
for ((j = 0; j < R; j++)); do
  # shellcheck disable=SC2206  # a list of pids
  RED_RX_THREADS+=(${CLUSTER_NAPI_PIDS[r$j]:-})
done
[[ $CLUSTER_HOST_NAPI != threaded || ${#RED_RX_THREADS[@]} -gt 0 ]] ||
  die "--host-napi threaded: no receive threads found for the reducer hosts"
log "$R reducers up: $reducers"

group=$(harness_new_group)
# shellcheck disable=SC2086  # --perf-args is a list of flags, split on purpose
run_impl ours per-host env RS_LINK_GBPS="$link_gbps" "$PERF_BIN" --reducers "$reducers" --world "$W" --rank '{rank}' \
  --group "$group" "${sweep[@]}" -d fp32 -o sum --streams "$STREAMS" $PERF_ARGS

IFS=, read -ra peer_list <<<"$PEERS"
for peer in "${peer_list[@]}"; do
  case $peer in
    gloo_ring|gloo_chunked|gloo_hd)
      [[ -x $GLOO_BIN ]] || { log "$peer: skipped, no $GLOO_BIN (apt: libgloo-dev)"; continue; }
      store=$OUT/gloo-store-${peer#gloo_}
      rm -rf "$store"; mkdir -p "$store"
      run_impl "$peer" per-host "$GLOO_BIN" --rank '{rank}' --world "$W" --addr '{addr}' \
        --store "$store" --algo "${peer#gloo_}" --run-id "$group" "${sweep[@]}" ;;
    mpi_default|mpi_ring)
      if [[ ! -x $MPI_BIN ]] || ! command -v mpirun >/dev/null; then
        log "$peer: skipped, no $MPI_BIN or mpirun (apt: libopenmpi-dev openmpi-bin)"; continue
      fi
      : >"$OUT/mpi-hosts"; : >"$OUT/mpi-hostmap"
      for ((i = 0; i < W; i++)); do
        echo "$(cluster_addr "w$i") slots=1" >>"$OUT/mpi-hosts"
        echo "$(cluster_addr "w$i") $(cluster_ns "w$i")" >>"$OUT/mpi-hostmap"
      done
      algo=()
      [[ $peer == mpi_ring ]] &&
        algo=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4)
      # mpirun in w0 (from the root namespace it could not reach the ranks); the agent starts
      # orted in each host's namespace; TCP only, on the emulated subnet only. Every rank
      # thinks it has a host to itself and would busy-poll, but here all hosts share the
      # machine's cores: yield when idle, as Gloo's blocking waits and our client do.
      export RS_CLUSTER_HOSTMAP=$OUT/mpi-hostmap OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
      run_impl "$peer" launcher mpirun -np "$W" --hostfile "$OUT/mpi-hosts" --map-by node \
        --mca plm_rsh_agent "$here/netns_rsh.sh" --mca plm_rsh_no_tree_spawn 1 \
        --mca pml ob1 --mca btl tcp,self --mca mpi_yield_when_idle 1 \
        --mca btl_tcp_if_include "$CLUSTER_SUBNET.0/24" --mca oob_tcp_if_include "$CLUSTER_SUBNET.0/24" \
        "${algo[@]}" "$MPI_BIN" --label "$peer" "${sweep[@]}" ;;
    pingpong)
      [[ -x $PINGPONG_BIN ]] || { log "pingpong: skipped, no $PINGPONG_BIN"; continue; }
      a=$(cluster_addr r0)
      cluster_exec r0 "$PINGPONG_BIN" --listen "$a:2225" --port-file "$OUT/pingpong.port" \
        >"$OUT/pingpong-server.log" 2>&1 &
      wait_port_file "$OUT/pingpong.port" pingpong
      log "pingpong: start"
      rc=0
      cluster_exec w0 timeout -k 10 "$STEP_TIMEOUT" "$PINGPONG_BIN" --connect "$a:2225" \
        "${sweep[@]}" >"$OUT/pingpong.log" 2>"$OUT/pingpong.err" || rc=$?
      kill "$(cut -d' ' -f2 "$OUT/pingpong.port")" 2>/dev/null || true
      if ((rc != 0)); then failed+=("pingpong(exit $rc)"); log "pingpong: FAILED with exit $rc"; else log "pingpong: done"; fi ;;
    gather)
      # The gather floor: our all-reduce's messages without the reduction (tcp_pingpong --members
      # on every reducer host, every worker a client cutting S into the client's chunks).
      [[ -x $PINGPONG_BIN ]] || { log "gather: skipped, no $PINGPONG_BIN"; continue; }
      start_floor_servers gather-server 2226 "$PINGPONG_BIN" --members "$W"
      log "gather: start"
      rc=0 clients=()
      for ((i = 0; i < W; i++)); do
        cluster_exec "w$i" timeout -k 10 "$STEP_TIMEOUT" "$PINGPONG_BIN" --connect "$FLOOR_SERVERS" --chunks \
          "${sweep[@]}" >"$OUT/gather.rank$i.log" 2>&1 &
        clients+=($!)
      done
      for c in "${clients[@]}"; do wait "$c" || rc=$?; done
      mv "$OUT/gather.rank0.log" "$OUT/gather.log"
      kill "${FLOOR_PIDS[@]}" 2>/dev/null || true
      if ((rc != 0)); then failed+=("gather(exit $rc)"); log "gather: FAILED with exit $rc"; else log "gather: done"; fi ;;
    relay)
      [[ -x $RELAY_BIN ]] || { log "relay: skipped, no $RELAY_BIN"; continue; }
      start_floor_servers relay 2224 "$RELAY_BIN" --threads "$IO_THREADS" --link-gbps "$link_gbps"
      # The same attribution as ours, with the relays' CPU in place of the (idle) reducers'.
      saved_pids=("${RED_PIDS[@]}")
      RED_PIDS=("${FLOOR_PIDS[@]}") ROWS=$OUT/floors.tsv
      run_impl relay per-host "$RELAY_BIN" --relays "$FLOOR_SERVERS" --streams "$STREAMS" \
        --world "$W" --rank '{rank}' --link-gbps "$link_gbps" "${sweep[@]}"
      RED_PIDS=("${saved_pids[@]}") ROWS=$OUT/rows.tsv
      kill "${FLOOR_PIDS[@]}" 2>/dev/null || true ;;
    *) log "unknown peer '$peer' (gloo_ring, gloo_chunked, gloo_hd, mpi_default, mpi_ring, pingpong, gather, relay)" ;;
  esac
done

for p in "${helpers[@]}"; do kill "$p" 2>/dev/null || true; done
helpers=()
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/setup.txt"
rate_bits=$(cluster_rate_bits "$RATE")
"$here/report.sh" "$OUT" "$W" "$R" "$rate_bits" "${LINK_MBPS:-}" "$CLK_TCK" "$(nproc)" \
  "${failed[*]:-}" "$CLUSTER_HOST_NAPI" >"$OUT/report.md"
cat "$OUT/report.md"

wrong=$(awk -F'\t' '$6 != 0 { n++ } END { print n + 0 }' "$OUT/rows.tsv")
ours_rows=$(awk -F'\t' '$1 == "ours" { n++ } END { print n + 0 }' "$OUT/rows.tsv")
((${#failed[@]} == 0 && wrong == 0 && ours_rows > 0)) ||
  die "FAILED: ${failed[*]:-} ${wrong} rows with #wrong > 0, $ours_rows rows of ours"
