#!/usr/bin/env bash
# What the loss bound's heartbeats cost a healthy job: the HEARTBEAT frames that reducers and
# members send during checked allreduce_perf runs on loopback, at each loss bound given. Streams
# that move data should send none; a stream that waits for other members' contributions and is
# quiet for a third of the bound sends one (proto/WIRE.md, "Heartbeats and the loss bound").
# Counted by the reducers (rs_heartbeats_sent_total: to members; rs_heartbeats_received_total:
# from members), scraped from their metrics endpoints after each run.
#   bench/heartbeats.sh <build tree> [bound ms ...]          (default bounds: 10000 1000 300)
#   HB_WORKERS, HB_REDUCERS, HB_ARGS   (default 4, 2, "-b 8K -e 32M -f 2 -n 5 -w 1")
set -euo pipefail
tree=${1:?usage: bench/heartbeats.sh <build tree> [bound ms ...]}
shift
bounds=("$@")
((${#bounds[@]})) || bounds=(10000 1000 300)
W=${HB_WORKERS:-4} R=${HB_REDUCERS:-2}
read -r -a perf_args <<<"${HB_ARGS:--b 8K -e 32M -f 2 -n 5 -w 1}"
server=$tree/server/reduction-server perf=$tree/bench/allreduce_perf
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
# shellcheck source=scripts/lib/local_reducers.sh
source "$(dirname "$0")/../scripts/lib/local_reducers.sh"

# metric <name>: its value summed over its labels and the reducers' metrics endpoints.
metric() {
  local sum=0 i port value
  for ((i = 0; i < R; i++)); do
    port=$(cut -d' ' -f3 "$tmp/r$i.port")
    value=$(timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port
      printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3" | awk -v m="$1" '$1 == m || index($1, m "{") == 1 {s += $2} END {printf "%d", s}')
    sum=$((sum + value))
  done
  echo "$sum"
}

echo "# $W workers, $R reducers on loopback, allreduce_perf ${perf_args[*]} (every result checked)"
echo "# bound_ms  chunks_reduced  heartbeats_from_reducers  heartbeats_from_members  wrong"
for bound in "${bounds[@]}"; do
  pids=()
  rm -f "$tmp"/r*.port
  start_local_reducers "$server" "$R" "$tmp" --io-threads 1 --log-level warn \
    --loss-detect-ms "$bound" --metrics-listen 127.0.0.1:0
  group=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  workers=()
  for ((r = 0; r < W; r++)); do
    RS_LOSS_DETECT_MS=$bound "$perf" --reducers "$reducers" --world "$W" --rank "$r" \
      --group "$group" --wrong-file "$tmp/wrong$r" "${perf_args[@]}" >"$tmp/perf$r.log" 2>&1 &
    workers+=($!)
  done
  for ((r = 0; r < W; r++)); do
    wait "${workers[$r]}" || { cat "$tmp/perf$r.log"; echo "heartbeats: worker $r failed" >&2; exit 1; }
  done
  wrong=0
  for ((r = 0; r < W; r++)); do wrong=$((wrong + $(cat "$tmp/wrong$r"))); done
  printf '%9s  %14s  %24s  %23s  %5s\n' "$bound" "$(metric rs_chunks_reduced_total)" \
    "$(metric rs_heartbeats_sent_total)" "$(metric rs_heartbeats_received_total)" "$wrong"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait "${pids[@]}" 2>/dev/null || true
done
