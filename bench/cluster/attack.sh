#!/usr/bin/env bash
# What each attack costs a healthy job on the same reducers: an emulated cluster (cluster.sh) of
# W worker hosts, R reducer hosts and one attacker host, every link shaped to --rate. The
# reducers hold a pool secret; the healthy job and the attacker are tenants of that standing
# pool, each with its own job key (RS_JOB, --derive-job-secret). The modes that attack the
# victim (no-proof, bad-proof, other-job, garbage) aim at the healthy job's group id. Per mode,
# alternating --rounds times: the healthy job (allreduce_perf, W workers, checked results)
# alone, then the same beside rs_attacker running that mode from the attacker host. Prints, per
# mode, the healthy job's time alone and beside the attack (median of the rounds), their ratio,
# wrong elements, and what the attacker got.
#
#   bench/cluster/attack.sh [-W 2] [-R 2] [--rate 1gbit] [-s 16M] [-n 20] [--rounds 3]
#                           [--modes silent,no-proof,bad-proof,other-job,garbage,stall,no-read,conn-flood]
#                           [--server-args "..."] [--out DIR] [--build build/release]
# The attacker runs at nice 19: the cluster's hosts share this machine's cores, and the cost
# measured should be the reducers' work for the attacker, not the attacker's own CPU.
# Needs root. Bounded: a `timeout` around the whole script (--budget, default 1800 s); the
# namespaces and every process in them go on any exit.
set -euo pipefail
export LC_ALL=C
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
orig_args=("$@")

W=2 R="" RATE=1gbit SIZE=16M ITERS=20 ROUNDS=3 BUDGET=1800 STREAMS=4
MODES=silent,no-proof,bad-proof,other-job,garbage,stall,no-read,conn-flood
OUT="" BUILD=$repo/build/release SERVER_ARGS=""
while (($#)); do
  case $1 in
    -W) W=$2 ;; -R) R=$2 ;; --rate) RATE=$2 ;; -s) SIZE=$2 ;; -n) ITERS=$2 ;;
    --rounds) ROUNDS=$2 ;; --modes) MODES=$2 ;; --out) OUT=$2 ;; --build) BUILD=$2 ;;
    --budget) BUDGET=$2 ;; --server-args) SERVER_ARGS=$2 ;; --streams) STREAMS=$2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "attack.sh: unknown option '$1' (--help)" >&2; exit 2 ;;
  esac
  shift 2
done
R=${R:-$W}
# shellcheck source=bench/cluster/harness.sh
source "$here/harness.sh"  # and cluster.sh
harness_bound "$BUDGET" "$0" "${orig_args[@]}"
CLUSTER_PREFIX=${RS_CLUSTER_PREFIX:-rsa$$}
SERVER_BIN=$BUILD/server/reduction-server
PERF_BIN=$BUILD/bench/allreduce_perf
ATTACK_BIN=$BUILD/bench/rs_attacker
OUT=${OUT:-${TMPDIR:-/tmp}/rs-attack/$(date +%Y%m%d-%H%M%S)-W${W}R${R}-$RATE}
log() { echo "attack: $*" >&2; }
die() { log "$*"; exit 1; }
for b in "$SERVER_BIN" "$PERF_BIN" "$ATTACK_BIN"; do
  [[ -x $b ]] || die "need $b (scripts/build.sh release)"
done
why=$(cluster_supported) || die "cannot build an emulated cluster here: $why"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

harness_guard "$OUT"

A=$W  # the attacker host is worker host number W
cluster_create $((W + 1)) "$R" "$RATE"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$OUT/secret"
chmod 600 "$OUT/secret"
for job in healthy attacker; do
  "$SERVER_BIN" --derive-job-secret "$job" --secret-file "$OUT/secret" >"$OUT/$job.key"
  chmod 600 "$OUT/$job.key"
done
# shellcheck disable=SC2086  # a list of flags
harness_start_reducers "$SERVER_BIN" "$OUT" --secret-file "$OUT/secret" --collective-timeout-ms 5000 \
  --log-level warn --metrics-listen '{addr}:2224' $SERVER_ARGS
reducers=$HARNESS_REDUCERS
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet HEAD -- 2>/dev/null || echo ' (tree modified)')"
  echo "command: $0 ${orig_args[*]}"
  echo "workers $W, reducers $R, attacker host 1, links $RATE; healthy job: $SIZE fp32 sum x $ITERS (+2 warm-up), $STREAMS streams"
  echo "reducers: --secret-file (a pool secret) --collective-timeout-ms 5000 $SERVER_ARGS; jobs 'healthy' and 'attacker' with derived keys"
} | tee "$OUT/setup.txt"

# Starts the healthy job's W workers on group $2 in the background (pids in HEALTHY_PIDS).
healthy_start() {  # tag group
  local tag=$1 group=$2 i
  HEALTHY_PIDS=()
  for ((i = W - 1; i >= 0; i--)); do
    cluster_exec "w$i" env RS_JOB=healthy RS_SECRET_FILE="$OUT/healthy.key" timeout -k 5 300 "$PERF_BIN" \
      --reducers "$reducers" --world "$W" --rank "$i" --group "$group" --streams "$STREAMS" \
      -b "$SIZE" -e "$SIZE" -n "$ITERS" -w 2 -d fp32 -o sum >"$OUT/$tag.rank$i.log" 2>&1 &
    HEALTHY_PIDS+=($!)
  done
}
# Waits for the healthy job started by healthy_start; prints "time_us busbw wrong".
healthy_wait() {  # tag
  local tag=$1 p rc=0
  for p in "${HEALTHY_PIDS[@]}"; do wait "$p" || rc=$?; done
  ((rc == 0)) || die "the healthy job failed ($tag, exit $rc): see $OUT/$tag.rank0.log"
  awk '/^ +[0-9]+ +[0-9]+ / { print $5, $7, $8; exit }' "$OUT/$tag.rank0.log"
}
healthy() {  # tag
  healthy_start "$1" "$(harness_new_group)"
  healthy_wait "$1"
}
# Groups reducer 0 serves now (its metrics, read from the attacker's host).
groups_on_r0() {
  cluster_exec "w$A" curl -sf "http://$(cluster_addr r0):2224/metrics" |
    awk '$1 == "rs_groups" { print $2 + 0 }'
}

# Starts the attacker in its host and waits until it made its first attempt.
attacker_start() {  # mode tag victim-group
  local mode=$1 tag=$2 victim=$3
  : >"$OUT/$tag.attacker.log"
  cluster_exec "w$A" env RS_JOB=attacker RS_SECRET_FILE="$OUT/attacker.key" nice -n 19 \
    timeout -k 5 600 "$ATTACK_BIN" \
    --mode "$mode" --reducers "$reducers" --group "$victim" --world "$W" \
    --duration 600 --connections 600 >"$OUT/$tag.attacker.log" 2>&1 &
  ATTACKER=$!
  for ((t = 0; t < 300; t++)); do
    grep -q "first attempt done" "$OUT/$tag.attacker.log" && return 0
    kill -0 "$ATTACKER" 2>/dev/null || die "the attacker exited: $(cat "$OUT/$tag.attacker.log")"
    sleep 0.1
  done
  die "the attacker made no attempt in 30 s"
}
attacker_stop() {
  local pid
  for pid in $(ip netns pids "$(cluster_ns "w$A")"); do kill -TERM "$pid" 2>/dev/null || true; done
  wait "$ATTACKER" 2>/dev/null || true
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '| attack | healthy alone (ms) | beside the attack (ms) | beside / alone | wrong | what the attacker got |\n' >"$OUT/report.md"
printf '|---|---|---|---|---|---|\n' >>"$OUT/report.md"
healthy warmup >/dev/null
IFS=, read -ra modes <<<"$MODES"
for mode in "${modes[@]}"; do
  : >"$OUT/$mode.alone"; : >"$OUT/$mode.beside"
  wrong=0
  for ((k = 1; k <= ROUNDS; k++)); do
    read -r t _ w < <(healthy "$mode-alone-$k")
    echo "$t" >>"$OUT/$mode.alone"; wrong=$((wrong + w))
    group=$(harness_new_group)
    case $mode in
      no-proof|bad-proof|other-job|garbage)
        # Aimed at the victim's group: it exists first (the attacker learns a live group's id;
        # an id is random and known only to its members until then).
        healthy_start "$mode-beside-$k" "$group"
        for ((t = 0; t < 600; t++)); do (($(groups_on_r0) >= 1)) && break; sleep 0.05; done
        attacker_start "$mode" "$mode-$k" "$group" ;;
      *)
        attacker_start "$mode" "$mode-$k" "$group"
        healthy_start "$mode-beside-$k" "$group" ;;
    esac
    healthy_wait "$mode-beside-$k" >"$OUT/$mode-beside-$k.row"  # here: the workers are this shell's
    read -r t _ w <"$OUT/$mode-beside-$k.row"
    echo "$t" >>"$OUT/$mode.beside"; wrong=$((wrong + w))
    attacker_stop
    log "$mode round $k: alone $(tail -1 "$OUT/$mode.alone") us, beside $t us"
  done
  alone=$(median <"$OUT/$mode.alone")
  beside=$(median <"$OUT/$mode.beside")
  got=$(grep -h "^attack\|refused\|sent " "$OUT/$mode-$ROUNDS.attacker.log" | sed 's/^ *//' | paste -sd ';' | sed 's/;/; /g')
  printf '| %s | %.1f | %.1f | %.3f | %d | %s |\n' "$mode" "$(echo "$alone / 1000" | bc -l)" \
    "$(echo "$beside / 1000" | bc -l)" "$(echo "$beside / $alone" | bc -l)" "$wrong" "$got" >>"$OUT/report.md"
done
{
  echo
  echo "Times: the healthy job's mean all-reduce time (allreduce_perf, slowest rank), median of $ROUNDS rounds;"
  echo "alone and beside alternate. The attacker's line is from its last round."
} >>"$OUT/report.md"
cat "$OUT/report.md"
