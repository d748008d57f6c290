#!/usr/bin/env bash
# A reducer lost inside an all-reduce, on the emulated cluster (cluster.sh): what the all-reduce
# that the loss hit takes, against the same all-reduce before it, and the all-reduces after it
# on the survivors. Per size and loss mode, on one cluster of W worker and R reducer hosts: R
# fresh reducers, W allreduce_perf workers on a fresh group with --iteration-log (every rank
# prints and checks each timed iteration as it ends); when rank 0 reports iteration K done, the
# script waits a fraction of the healthy median (--at, default 0.5) and loses reducer R-1:
#   reset   kill -9 of the reducer process (its host's kernel resets the connections)
#   link    the reducer host's link set down (ip link, inside its namespace): no reset, no
#           reply, as a machine gone; found by the members' loss bound (--bound-ms)
#   stop    SIGSTOP of the reducer process: its kernel still ACKs, the process never answers
# Every worker runs with RS_LOSS_DETECT_MS=--bound-ms in every mode, so the healthy iterations
# of the modes are alike. Per case it reports: the healthy median (iterations 1..K, each the
# slowest worker's), the iteration the loss hit (the first to end after it on rank 0) and
# where in it the loss came, its time and excess over the median (the stall), the time from the
# loss to its end, the median after (R-1 reducers) against the healthy one and R/(R-1). Fails
# when a worker fails or finds a wrong element, or when no iteration was hit.
#
# --restart-after N: when rank 0 reports iteration K+N, the lost reducer is started again under
# its address (same host, port and flags; the old process killed first where it lives on, its
# link back up), as a replica restarted under its name; the workers redial it (RS_REJOIN_MS:
# --rejoin-ms, else the client's default) and take it back at a collective boundary
# (proto/FAILOVER.md, "A reducer comes back"). Then the table above counts as "after" only the
# iterations before the rejoin, and a second table gives per case the degraded median (R-1),
# the restart's time, the rejoin (its chunk and iteration, from the workers' log line "taken
# back at chunk T"; the reducer's "rejoined" line), the rejoin iteration's time, the median after
# it and its ratio to the healthy one. A case where a worker has not taken it back by its last
# iteration is reported so, and the script then exits 1.
#
#   bench/cluster/failover.sh [-W 4] [-R W] [--rate 1gbit] [--sizes 64M:14:5,1M:60:20]
#                             [--modes reset,link] [--bound-ms 1000] [--at 0.5] [-w 2]
#                             [--streams auto|N] [--pace on|off] [--out DIR] [--build build/release]
#                             [--budget 1200] [--step-timeout 300] [--restart-after N] [--rejoin-ms MS]
# A size is SIZE:ITERS:K: ITERS timed iterations, the loss after iteration K. Needs root.
# Bounded: --budget for the whole script, --step-timeout per case; the namespaces and every
# process in them go on any exit (trap EXIT INT TERM).
set -euo pipefail
export LC_ALL=C  # EPOCHREALTIME with a '.'
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
orig_args=("$@")

W=4 R="" RATE=1gbit SIZES=64M:14:5,1M:60:20 MODES=reset,link BOUND_MS=1000 AT=0.5 WARMUP=2
STREAMS=auto PACE=on OUT="" BUILD=$repo/build/release BUDGET=1200 STEP_TIMEOUT=300 RESTART_AFTER=0 REJOIN_MS=""
while (($#)); do
  case $1 in
    -W) W=$2 ;; -R) R=$2 ;; --rate) RATE=$2 ;; --sizes) SIZES=$2 ;; --modes) MODES=$2 ;;
    --bound-ms) BOUND_MS=$2 ;; --at) AT=$2 ;; -w) WARMUP=$2 ;; --streams) STREAMS=$2 ;; --pace) PACE=$2 ;;
    --out) OUT=$2 ;; --build) BUILD=$2 ;; --budget) BUDGET=$2 ;; --step-timeout) STEP_TIMEOUT=$2 ;;
    --restart-after) RESTART_AFTER=$2 ;; --rejoin-ms) REJOIN_MS=$2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "failover.sh: unknown option '$1' (--help)" >&2; exit 2 ;;
  esac
  shift 2
done
R=${R:-$W}
[[ $STREAMS == auto ]] && STREAMS=0  # the client's automatic count

# shellcheck source=bench/cluster/harness.sh
source "$here/harness.sh"  # and cluster.sh
harness_bound "$BUDGET" "$0" "${orig_args[@]}"
CLUSTER_PREFIX=${RS_CLUSTER_PREFIX:-rsf$$}
SERVER_BIN=$BUILD/server/reduction-server
PERF_BIN=$BUILD/bench/allreduce_perf
OUT=${OUT:-${TMPDIR:-/tmp}/rs-failover/$(date +%Y%m%d-%H%M%S)-W${W}R${R}-$RATE}
log() { echo "failover: $*" >&2; }
die() { log "$*"; exit 1; }

[[ -x $SERVER_BIN && -x $PERF_BIN ]] || die "need $SERVER_BIN and $PERF_BIN (scripts/build.sh release, or --build)"
"$PERF_BIN" --help | grep -q -- --iteration-log || die "$PERF_BIN has no --iteration-log (rebuild it)"
((W >= 2 && R >= 2)) || die "need -W >= 2 and -R >= 2 (one reducer is lost)"
[[ $AT =~ ^0?\.[0-9]+$ ]] || die "--at is a fraction of the healthy median, e.g. 0.5"
[[ $PACE == on || $PACE == off ]] || die "--pace on|off, not '$PACE'"
[[ $RESTART_AFTER =~ ^[0-9]+$ ]] || die "--restart-after is a count of iterations after the loss, not '$RESTART_AFTER'"
[[ -z $REJOIN_MS || $REJOIN_MS =~ ^[0-9]+$ ]] || die "--rejoin-ms is milliseconds, not '$REJOIN_MS'"
why=$(cluster_supported) || die "cannot build an emulated cluster here: $why"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
harness_guard "$OUT"

victim=r$((R - 1))
cluster_create "$W" "$R" "$RATE"
# As run.sh: ours told the link rate paces its streams to a share of it (0: not paced).
link_gbps=0
[[ $PACE == on ]] && link_gbps=$(awk -v b="$(cluster_rate_bits "$RATE")" 'BEGIN { printf "%.6g", b / 1e9 }')
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet HEAD -- 2>/dev/null || echo ' (tree modified)')"
  echo "machine: $(nproc) CPUs, $(uname -r); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "command: $0 ${orig_args[*]}"
  echo "workers $W, reducers $R (reducer $victim is lost), links $RATE (tbf both ends), TCP $CLUSTER_CC; fp32 sum, warm-up $WARMUP, streams $STREAMS (0: automatic), RS_LOSS_DETECT_MS=$BOUND_MS, paced to the link rate: $PACE"
  if ((RESTART_AFTER)); then
    echo "reducer $victim restarted under its address when rank 0 ends iteration K+$RESTART_AFTER; RS_REJOIN_MS=${REJOIN_MS:-unset, the client default}"
  fi
} | tee "$OUT/setup.txt" >&2

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# Loses the victim reducer by the given mode; sets LOST_AT to the moment (epoch us) it was done.
lose() {  # mode pid
  case $1 in
    reset) kill -KILL "$2" ;;
    stop) kill -STOP "$2" ;;
    link) cluster_exec "$victim" ip link set eth0 down ;;
  esac
  LOST_AT=${EPOCHREALTIME/./}
}

# Undoes what lose did to the victim's host, for the next case (its reducer is gone by then).
restore() {  # mode
  [[ $1 == link ]] || return 0
  cluster_exec "$victim" ip link set eth0 up
  cluster_exec "$victim" tc qdisc show dev eth0 | grep -q tbf || die "$victim's tbf did not survive its link going down"
}

# Starts the victim again under its address (--restart-after): the old process killed where it
# lives on (stop, link) before its link comes back, so that only the new one answers there.
restart() {  # mode
  harness_kill_wait "${RED_PIDS[R - 1]}"
  restore "$1"
  harness_restart_reducer $((R - 1))
  RESTARTED_AT=$HARNESS_LISTENING_AT
}

# Bytes each reducer host has received on its link, in index order (a restarted case's share):
# what the switch's port to it sent, read in one call.
reducer_rx() {
  ip -n "$(cluster_ns sw)" -s -o link show | awk -v r="$R" '{
    name = $2; sub(/[@:].*/, "", name)
    n = split($0, seg, "\\\\"); for (i = 1; i < n; i++) if (seg[i] ~ /TX:/) { split(seg[i + 1], f, " "); tx[name] = f[1] }
  } END { for (j = 0; j < r; j++) printf " %s", tx["r" j] + 0 }'
}

# Epoch us of a log line's stamp (the project's text format: 2026-11-27T10:49:12.123456 ...).
stamp_us() { date -d "$1" +%s%6N; }

# The rejoin of a restarted case, from the workers' "taken back at chunk T" lines (each the
# switch: the first collective at T) and the restarted reducer's "rejoined" (JOIN_AT sent): a row
# of $OUT/rejoin.md. Sets REJOIN_FIRST, the first iteration (of any worker) at which a worker had
# switched; where one has not, it stays ITERS + 1 and the case counts in REJOIN_MISSING.
rejoin_rows() {  # tag mode size iters hit lost restarted healthy_median
  local tag=$1 mode=$2 size=$3 iters=$4 hit=$5 lost=$6 restarted=$7 mb=$8 i line t it joinat=""
  local -a its=() chunks=() switched=() lostfor=() missing=()
  for ((i = 0; i < W; i++)); do
    line=$(grep -m1 "taken back at chunk" "$OUT/$tag.rank$i.log") || { missing+=("$i"); continue; }
    [[ $line =~ taken\ back\ at\ chunk\ ([0-9]+)\ after\ ([0-9]+)\ ms ]] || die "$tag: rank $i: unexpected rejoin line: $line"
    chunks+=("${BASH_REMATCH[1]}") lostfor+=("${BASH_REMATCH[2]}")
    t=$(stamp_us "${line%% *}")
    switched+=("$t")
    # The switch is inside the first collective at T: the first iteration to end after it.
    it=$(awk -v t="$t" '$1 == "#" && $2 == "iteration" && $5 > t { print $3; exit }' "$OUT/$tag.rank$i.log")
    if [[ -n $it ]]; then its+=("$it"); else missing+=("$i (after its last iteration)"); fi
  done
  line=$(grep -m1 "rejoined: members" "$OUT/$tag.reducer$((R - 1)).restarted.log") && joinat=$(stamp_us "${line%% *}")
  local cancelled_w cancelled_r
  cancelled_w=$(cat "$OUT/$tag".rank*.log | grep -c "rejoin of reducer .* was cancelled") || true
  cancelled_r=$(grep -c "rejoin cancelled" "$OUT/$tag.reducer$((R - 1)).restarted.log") || true
  if ((${#missing[@]})); then
    REJOIN_MISSING=$((REJOIN_MISSING + 1))
    printf '| %s | %s | no rejoin by the last iteration on rank(s) %s; taken back on %d of %d (chunks %s); restarted after iteration %d, %.1f s after the loss; JOIN_AT %s; cancelled %s / %s |\n' \
      "$mode" "$size" "${missing[*]}" "${#its[@]}" "$W" "${chunks[*]:--}" $((k + RESTART_AFTER)) \
      "$(awk -v a="$restarted" -v b="$lost" 'BEGIN { print (a - b) / 1e6 }')" "${joinat:+sent}${joinat:-never}" \
      "$cancelled_w" "$cancelled_r" >>"$OUT/rejoin.md"
    return 0
  fi
  local first last
  first=$(printf '%s\n' "${its[@]}" | sort -n | head -1)
  last=$(printf '%s\n' "${its[@]}" | sort -n | tail -1)
  REJOIN_FIRST=$first
  # The restarted reducer's bytes over the mean of the others', rank 0's iterations after the
  # rejoin one (its home chunks again: about 1), and between the hit one and the rejoin's.
  local share
  share=$(awk -v v=$((R + 1)) -v h="$hit" -v f="$first" -v l="$last" -v n="$iters" '
    { for (j = 2; j <= NF; j++) rx[$1, j] = $j }
    function ratio(a, b,   j, o) { for (j = 2; j < v; j++) o += rx[b, j] - rx[a, j]
      return o > 0 ? sprintf("%.2f", (rx[b, v] - rx[a, v]) * (v - 2) / o) : "-" }
    END { printf "%s / %s", ratio(h, f - 1), ratio(l, n) }' "$OUT/$tag.rx")
  local degraded after
  degraded=$(awk -v h="$hit" -v e="$first" '$1 > h && $1 < e { print $2 }' "$OUT/$tag.iterations" | sort -n | tr '\n' ' ')
  after=$(awk -v e="$last" '$1 > e { print $2 }' "$OUT/$tag.iterations" | sort -n | tr '\n' ' ')
  awk -v mode="$mode" -v size="$size" -v mb="$mb" -v deg="$degraded" -v aft="$after" -v ra=$((RESTART_AFTER + k)) \
      -v lost="$lost" -v restarted="$restarted" -v joinat="${joinat:-0}" -v chunks="${chunks[*]}" \
      -v first="$first" -v last="$last" -v sw="$(printf '%s\n' "${switched[@]}" | sort -n | tail -1)" \
      -v lf="$(printf '%s\n' "${lostfor[@]}" | sort -n | tr '\n' ' ')" -v cw="$cancelled_w" -v cr="$cancelled_r" \
      -v share="$share" -v trj="$(awk -v i="$last" '$1 >= i && $1 < i + 3 { print $2 }' "$OUT/$tag.iterations" | tr '\n' ' ')" 'function med(list, n, v) {
    n = split(list, v, " "); if (!n) return -1
    return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
  BEGIN {
    nd = split(deg, x, " "); na = split(aft, y, " "); md = med(deg); ma = med(aft)
    n = split(chunks, c, " "); same = 1; for (i = 2; i <= n; i++) if (c[i] != c[1]) same = 0
    nl = split(lf, l, " ")
    nr = split(trj, rj, " "); rjs = ""; for (i = 1; i <= nr; i++) rjs = rjs sprintf("%s%.1f", i > 1 ? ", " : "", rj[i] / 1000)
    printf "| %s | %s | %.1f | %s | %s | %d (%.1f s) | %s | %s, %s | %.0f | %s-%s | %s | %s | %s | %s | %s | %d / %d |\n",
      mode, size, mb / 1000, nd ? sprintf("%.1f (%d)", md / 1000, nd) : "-", nd ? sprintf("%.2f", md / mb) : "-",
      ra, (restarted - lost) / 1e6, joinat ? sprintf("%.0f", (joinat - restarted) / 1000) : "none",
      same ? c[1] : "differ: " chunks, first == last ? first : first "-" last, (sw - restarted) / 1000,
      l[1], l[nl], rjs, na ? sprintf("%.1f (%d)", ma / 1000, na) : "-", na ? sprintf("%.2f", ma / mb) : "-",
      na ? sprintf("%.1f", (rj[1] - ma) / 1000) : "-", share, cw, cr }' >>"$OUT/rejoin.md"
}

# One case: fresh reducers and group, W workers, the loss after iteration K. Appends a row to
# $OUT/report.md and the iterations to $OUT/<tag>.iterations (iteration, slowest worker's us).
run_case() {  # mode size iters k
  local mode=$1 size=$2 iters=$3 k=$4 tag="$1-$2" group i rc=0 line lost="" restarted="" victim_pid
  local -a pids=()
  log "$tag: $W workers, $R reducers, $iters iterations of $size, $victim lost ($mode) after iteration $k"
  harness_start_reducers "$SERVER_BIN" "$OUT" --io-threads 1 --link-gbps "$link_gbps" --log-level warn
  for ((i = 0; i < R; i++)); do mv "$OUT/reducer$i.log" "$OUT/$tag.reducer$i.log" 2>/dev/null || true; done
  victim_pid=${RED_PIDS[R - 1]}
  group=$(harness_new_group)
  local -a perf=(env RS_LINK_GBPS="$link_gbps" RS_LOSS_DETECT_MS="$BOUND_MS" ${REJOIN_MS:+RS_REJOIN_MS=$REJOIN_MS}
                 timeout -k 10 "$STEP_TIMEOUT"
                 "$PERF_BIN" --reducers "$HARNESS_REDUCERS" --world "$W" --group "$group" -b "$size" -e "$size"
                 -n "$iters" -w "$WARMUP" -d fp32 -o sum --streams "$STREAMS" --iteration-log)
  # Restarted: the members' rejoin line ("taken back at chunk T") is at info; the hosts' bytes
  # from this case only.
  if ((RESTART_AFTER)); then perf+=(--log-level info); : >"$OUT/$tag.rx"; fi
  for ((i = W - 1; i >= 1; i--)); do
    cluster_exec "w$i" "${perf[@]}" --rank "$i" >"$OUT/$tag.rank$i.log" 2>"$OUT/$tag.rank$i.err" &
    pids+=($!)
  done
  # Rank 0 through this shell: the loss is driven by its iteration lines as they arrive.
  exec {feed}< <(cluster_exec w0 "${perf[@]}" --rank 0 2>"$OUT/$tag.rank0.err" | tee "$OUT/$tag.rank0.log"; echo "# exit ${PIPESTATUS[0]}")
  local -a healthy=()
  local rc0="" delay="" drops0 drops1 drops2
  drops0=$(cluster_loss)
  while IFS= read -r -u "$feed" line; do
    if [[ $line =~ ^#\ iteration\ ([0-9]+)\ [0-9]+\ [0-9]+\ ([0-9]+)\  ]]; then
      healthy+=("${BASH_REMATCH[2]}")
      # Restarted: what each reducer host took in up to the end of each of rank 0's iterations
      # after the loss (after: nothing may stand between iteration K's line and the loss).
      ((RESTART_AFTER && BASH_REMATCH[1] > k)) && echo "${BASH_REMATCH[1]}$(reducer_rx)" >>"$OUT/$tag.rx"
      # Into iteration K+1 by a fraction of rank 0's median of the iterations before K, worked
      # out ahead so that nothing but the wait stands between iteration K's line and the loss.
      if [[ ${BASH_REMATCH[1]} == $((k - 1)) ]]; then
        delay=$(printf '%s\n' "${healthy[@]}" | median | awk -v at="$AT" '{ printf "%.6f", $1 * at / 1e6 }')
      elif [[ ${BASH_REMATCH[1]} == "$k" ]]; then
        sleep "$delay"
        lose "$mode" "$victim_pid"
        lost=$LOST_AT
        log "$tag: $victim lost ($mode) at $lost, ${delay}s after rank 0 ended iteration $k"
        drops1=$(cluster_loss)
      elif ((RESTART_AFTER && BASH_REMATCH[1] == k + RESTART_AFTER)); then
        restart "$mode"
        restarted=$RESTARTED_AT
        mv "$OUT/reducer$((R - 1)).restarted.log" "$OUT/$tag.reducer$((R - 1)).restarted.log"
        log "$tag: $victim restarted under its address, listening at $restarted, $(((restarted - lost) / 1000)) ms after the loss"
      fi
    elif [[ $line =~ ^#\ exit\ ([0-9]+)$ ]]; then
      rc0=${BASH_REMATCH[1]}
    fi
  done
  exec {feed}<&-
  drops2=$(cluster_loss)
  for i in "${pids[@]}"; do wait "$i" || rc=$?; done
  [[ $mode == stop ]] && { kill -CONT "$victim_pid" 2>/dev/null || true; }  # gone if restarted
  harness_stop_reducers
  restore "$mode"
  [[ $rc0 == 0 && $rc == 0 ]] || die "$tag: a worker failed (rank 0 exit ${rc0:-?}, others $rc): see $OUT/$tag.rank*.err"
  [[ -n $lost ]] || die "$tag: rank 0 never reported iteration $k"
  ((RESTART_AFTER == 0)) || [[ -n $restarted ]] || die "$tag: rank 0 never reported iteration $((k + RESTART_AFTER))"
  for ((i = 0; i < W; i++)); do
    grep -q '^# Out of bounds values : 0 OK' "$OUT/$tag.rank$i.log" ||
      die "$tag: rank $i found wrong elements or gave no verdict: see $OUT/$tag.rank$i.log"
    (($(grep -c '^# iteration ' "$OUT/$tag.rank$i.log") == iters)) || die "$tag: rank $i logged $(grep -c '^# iteration ' "$OUT/$tag.rank$i.log") of $iters iterations"
  done
  # Every rank's iterations: k submitted completed us wrong. The slowest worker's time per
  # iteration; the hit iteration is the first that ended after the loss on rank 0.
  cat "$OUT/$tag".rank*.log | awk '$1 == "#" && $2 == "iteration" { print $3, $4, $5, $6, $7 }' >"$OUT/$tag.all"
  awk '$5 != 0 { bad = 1 } END { exit bad }' "$OUT/$tag.all" || die "$tag: an iteration had wrong elements: see $OUT/$tag.all"
  awk '{ if ($4 > t[$1]) t[$1] = $4 } END { for (i in t) print i, t[i] }' "$OUT/$tag.all" | sort -n >"$OUT/$tag.iterations"
  local hit start inside before after t_hit median_before median_after to_end slowest
  read -r hit start _ < <(awk -v l="$lost" '$1 == "#" && $2 == "iteration" && $5 > l { print $3, $4, $5; exit }' "$OUT/$tag.rank0.log") || true  # none: the die below
  [[ -n ${hit:-} ]] || die "$tag: no iteration ended after the loss"
  # Inside on every worker: submitted before the loss, ended after it.
  inside=$(awk -v h="$hit" -v l="$lost" '$1 == h { n++; if ($2 < l && $3 > l) in_++ } END { print (n && in_ == n) ? "yes" : "no (" in_ + 0 " of " n + 0 " workers)" }' "$OUT/$tag.all")
  t_hit=$(awk -v h="$hit" '$1 == h { print $2 }' "$OUT/$tag.iterations")
  # The loss may cost a later iteration instead: a stopped reducer's kernel still delivers the
  # results it had written, so the hit one can end in time and the next wait out the bound.
  slowest=$(awk -v h="$hit" '$1 >= h && $2 > t { t = $2; i = $1 } END { print i, t }' "$OUT/$tag.iterations")
  to_end=$(awk -v h="$hit" -v l="$lost" '$1 == h && $3 - l > m { m = $3 - l } END { print m }' "$OUT/$tag.all")
  median_before=$(awk -v h="$hit" '$1 < h { print $2 }' "$OUT/$tag.iterations" | median)
  # Restarted: "after" ends before the rejoin (rejoin_rows sets REJOIN_FIRST, else ITERS + 1).
  REJOIN_FIRST=$((iters + 1))
  ((RESTART_AFTER)) && rejoin_rows "$tag" "$mode" "$size" "$iters" "$hit" "$lost" "$restarted" "$median_before"
  median_after=$(awk -v h="$hit" -v e="$REJOIN_FIRST" '$1 > h && $1 < e { print $2 }' "$OUT/$tag.iterations" | median)
  before=$(awk -v h="$hit" '$1 < h' "$OUT/$tag.iterations" | wc -l)
  after=$(awk -v h="$hit" -v e="$REJOIN_FIRST" '$1 > h && $1 < e' "$OUT/$tag.iterations" | wc -l)
  local bound="-"
  [[ $mode != reset ]] && bound="$BOUND_MS ms"
  awk -v mode="$mode" -v size="$size" -v mb="$median_before" -v nb="$before" -v hit="$hit" \
      -v into=$((lost - start)) -v inside="$inside" -v th="$t_hit" -v te="$to_end" -v bound="$bound" \
      -v ma="${median_after:-0}" -v na="$after" -v r="$R" -v k="$k" -v slowest="$slowest" 'BEGIN {
    split(slowest, sl, " ")
    printf "| %s | %s | %.1f (%d) | %d (%.1f ms in; %s) | %.1f | %.1f | %.1f | %d: %.1f | %s | %s | %s | %.2f |\n",
      mode, size, mb / 1000, nb, hit, into / 1000, inside, th / 1000, (th - mb) / 1000, te / 1000, sl[1], sl[2] / 1000, bound,
      na ? sprintf("%.1f (%d)", ma / 1000, na) : "-", na ? sprintf("%.2f", ma / mb) : "-", r / (r - 1) }' >>"$OUT/report.md"
  # The links' drops (every host's queues, both ends) and TCP's resent segments per iteration,
  # before the loss and from it on (cluster_loss: the counters at the start, the loss, the end).
  awk -v tag="$tag" -v k="$k" -v n="$iters" -v a="$drops0" -v b="${drops1:-$drops2}" -v c="$drops2" 'BEGIN {
    split(a, x, " "); split(b, y, " "); split(c, z, " ")
    printf "| %s | %.1f | %.1f | %.1f | %.1f |\n", tag, (y[1] + y[2] + y[3] + y[4] - x[1] - x[2] - x[3] - x[4]) / k,
      (y[5] - x[5]) / k, (z[1] + z[2] + z[3] + z[4] - y[1] - y[2] - y[3] - y[4]) / (n - k), (z[5] - y[5]) / (n - k) }' >>"$OUT/drops.md"
  grep -h "lost" "$OUT/$tag".rank*.log | grep -v "taken back" | head -2 | sed "s/^/$tag: /" >>"$OUT/logs.txt" || true
  ((RESTART_AFTER == 0)) || grep -h "taken back\|rejoined: \|rejoin.*cancelled" "$OUT/$tag".rank0.log "$OUT/$tag".reducer*.log |
    head -4 | sed "s/^/$tag: /" >>"$OUT/logs.txt" || true
  log "$tag: $(tail -1 "$OUT/report.md")"
}

{
  echo "# A reducer lost inside an all-reduce: W=$W, R=$R, $RATE links"
  echo
  sed 's/^/- /' "$OUT/setup.txt"
  echo
  echo "| loss | size | healthy median, ms (iterations) | hit iteration (the loss, into it; inside on every worker) | hit, ms | stall: hit - median, ms | loss to its end, ms | slowest from the hit on: iteration: ms | bound | after, median ms (iterations) | after / healthy | R/(R-1) |"
  echo "|---|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|"
} >"$OUT/report.md"
: >"$OUT/logs.txt"
: >"$OUT/drops.md"
: >"$OUT/rejoin.md"
REJOIN_MISSING=0
IFS=, read -ra sizes <<<"$SIZES"
IFS=, read -ra modes <<<"$MODES"
for spec in "${sizes[@]}"; do
  IFS=: read -r size iters k <<<"$spec"
  iters=${iters:-14} k=${k:-5}
  ((k >= 2 && iters >= k + 3)) || die "size $spec: need K >= 2 and ITERS >= K + 3"
  ((RESTART_AFTER == 0 || iters >= k + RESTART_AFTER + 3)) || die "size $spec: need ITERS >= K + --restart-after + 3"
  for mode in "${modes[@]}"; do
    case $mode in reset|link|stop) ;; *) die "unknown mode '$mode' (reset, link, stop)" ;; esac
    run_case "$mode" "$size" "$iters" "$k"
  done
done
{
  echo
  echo "Times per iteration are the slowest worker's (allreduce_perf --iteration-log: submit to"
  echo "completion, the check outside it). Every element of every iteration checked on every worker: 0 wrong."
  echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "Packets the links' queues dropped and segments TCP resent, per iteration (warm-up and"
  echo "iterations 1..K before the loss, counted over K; from the loss to the end over ITERS - K):"
  echo
  echo "| case | drops before | resent before | drops after | resent after |"
  echo "|---|---:|---:|---:|---:|"
  cat "$OUT/drops.md"
  echo
  if ((RESTART_AFTER)); then
    echo "## The lost reducer restarted under its address after iteration K+$RESTART_AFTER (RS_REJOIN_MS=${REJOIN_MS:-unset, the client default})"
    echo
    echo "In the table above, \"after\" is the iterations between the hit one and the rejoin. Here: degraded, the"
    echo "same (R-1 reducers); the restart (after rank 0's iteration, and when its port file was written);"
    echo "JOIN_AT, the restarted reducer's \"rejoined\" line; the rejoin, the chunk T of the workers' \"taken"
    echo "back at chunk T\" lines and the iteration that switch was in (the first to end after it, per worker);"
    echo "the slowest worker's switch; lost for, the workers' own figure (the loss adopted to the switch);"
    echo "after, the iterations after the rejoin one (the two right after it included); its share, the bytes"
    echo "its host received over the mean of the other reducer hosts' (at rank 0's iteration ends) while"
    echo "degraded and after the rejoin iteration;"
    echo "cancelled, the workers' and the reducer's cancel lines."
    echo
    echo "| loss | size | healthy median, ms | degraded: median, ms (iterations) | degraded / healthy | restarted after iteration (s after the loss) | restart to JOIN_AT, ms | rejoin: chunk, iteration | restart to the last switch, ms | lost for, ms (workers) | the rejoin iteration and the two after it, ms | after the rejoin: median, ms (iterations) | after / healthy | rejoin iteration - after median, ms | its share of the bytes: degraded / after | cancelled (workers / reducer) |"
    echo "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|"
    cat "$OUT/rejoin.md"
    echo
  fi
  echo "The workers' log lines of the loss (first two per case)$( ((RESTART_AFTER)) && echo ", and of the rejoin"):"
  echo
  sed 's/^/    /' "$OUT/logs.txt"
} >>"$OUT/report.md"
cat "$OUT/report.md"
((REJOIN_MISSING == 0)) || die "$REJOIN_MISSING case(s) with a worker that did not take the restarted reducer back: see $OUT/report.md"
