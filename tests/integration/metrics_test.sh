#!/usr/bin/env bash
# The reducers' Prometheus metrics as an operator reads them: real reduction-server processes
# with --metrics-listen, checked all-reduces through them by allreduce_perf worker processes, a
# real Prometheus server (Debian's package) scraping them every second, and the values read
# back through Prometheus's HTTP API and compared with what the workers did. Also
# `promtool check metrics` on the exposition. Every wait is for a state, bounded.
#   metrics_test.sh <allreduce_perf binary> <reduction-server binary>
set -euo pipefail
perf=$1
server=$2
here=$(cd "$(dirname "$0")" && pwd)

# Installed by scripts/install-deps.sh: a machine without them fails here rather than passing.
for tool in prometheus promtool curl; do
  command -v "$tool" >/dev/null || { echo "FAILED: $tool is not installed (scripts/install-deps.sh installs it)"; exit 1; }
done

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAILED: $*"; for f in "$tmp"/*.log; do [[ -s $f ]] && { echo "--- $f"; tail -20 "$f"; }; done; exit 1; }

# --- Reducers ------------------------------------------------------------------------------
R=2
# shellcheck source=scripts/lib/local_reducers.sh
source "$here/../../scripts/lib/local_reducers.sh"
start_local_reducers "$server" "$R" "$tmp" --metrics-listen 127.0.0.1:0 --io-threads 2
reducer_pids=("${pids[@]}")
metrics_ports=()
for ((i = 0; i < R; i++)); do
  read -r _ _ mport <"$tmp/r$i.port"
  [[ -n ${mport:-} ]] || fail "reducer $i wrote no metrics port: $(cat "$tmp/r$i.port")"
  metrics_ports+=("$mport")
done
echo "ok: $R reducers ($reducers), metrics ports ${metrics_ports[*]}"

check_exposition() {  # <when>
  local p out
  for p in "${metrics_ports[@]}"; do
    curl -sf "http://127.0.0.1:$p/metrics" >"$tmp/exposition.txt" || fail "curl of metrics port $p"
    grep -q '^rs_build_info{' "$tmp/exposition.txt" || fail "no rs_build_info on port $p"
    out=$(promtool check metrics <"$tmp/exposition.txt" 2>&1) || fail "promtool check metrics ($1): $out"
    [[ -z $out ]] || fail "promtool check metrics ($1) complained: $out"
  done
  echo "ok: promtool check metrics passes $1"
}
check_exposition "before traffic"

# --- Prometheus ----------------------------------------------------------------------------
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: reducers
    static_configs:
      - targets: [$(printf "'127.0.0.1:%s'," "${metrics_ports[@]}" | sed 's/,$//')]
EOF
promtool check config "$tmp/prometheus.yml" >/dev/null || fail "promtool check config"

# Prometheus cannot pick its own port: try one below the kernel's ephemeral range (where other
# tests' sockets live) and another if it is taken. The server answering must be ours: its flags
# name our storage directory.
prom=""
for attempt in 1 2 3 4 5 6 7 8; do
  port=$((20000 + RANDOM % 12000))
  prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
    --web.listen-address="127.0.0.1:$port" --log.level=warn >"$tmp/prometheus.log" 2>&1 &
  prom_pid=$!
  pids+=("$prom_pid")
  for _ in $(seq 1200); do  # up to 60 s on a loaded machine
    kill -0 "$prom_pid" 2>/dev/null || break
    if curl -sf "http://127.0.0.1:$port/api/v1/status/flags" 2>/dev/null | grep -F "\"$tmp/tsdb\"" >/dev/null; then
      curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1 && { prom="http://127.0.0.1:$port"; break; }
    fi
    sleep 0.05
  done
  [[ -n $prom ]] && break
  if kill -0 "$prom_pid" 2>/dev/null; then fail "Prometheus did not become ready"; fi
  grep -q "address already in use" "$tmp/prometheus.log" || fail "Prometheus exited"
  echo "port $port taken (attempt $attempt), trying another"
done
[[ -n $prom ]] || fail "no free port for Prometheus"
echo "ok: Prometheus $(prometheus --version 2>&1 | head -1 | awk '{print $3}') at $prom"

query() {  # <promql>: the single value of an instant query, or "" if it has none
  curl -sf --get --data-urlencode "query=$1" "$prom/api/v1/query" |
    sed -n 's/.*"value":\[[^,]*,"\([^"]*\)"\].*/\1/p'
}
wait_for() {  # <promql> <expected number>: until Prometheus reports it (60 s at most)
  local got=""
  for _ in $(seq 600); do
    got=$(query "$1")
    [[ -n $got ]] && awk -v a="$got" -v b="$2" 'BEGIN { exit !(a + 0 == b + 0) }' && {
      echo "ok: $1 = $got"
      return 0
    }
    sleep 0.1
  done
  fail "$1 is '${got}', expected $2"
}

wait_for 'sum(up{job="reducers"})' "$R"
version=$("$server" --version | awk '{print $2}')
wait_for "count(rs_build_info{version=\"$version\",simd!=\"\",commit!=\"\"})" "$R"

# --- Traffic: two jobs, each a group of workers with checked results -------------------------
streams=4
workers_run() {  # <world> <allreduce_perf args...>
  local world=$1 r group
  shift
  group=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
  local wpids=()
  for ((r = 0; r < world; r++)); do
    timeout 120 "$perf" --reducers "$reducers" --world "$world" --rank "$r" --group "$group" \
      --streams "$streams" "$@" >"$tmp/worker$r.log" 2>&1 &
    wpids+=($!)
    pids+=($!)
  done
  for ((r = 0; r < world; r++)); do
    wait "${wpids[$r]}" || fail "worker $r of '$*' exited with $?"
  done
  grep -q "Out of bounds values : 0 OK" "$tmp/worker0.log" || fail "results of '$*' not checked OK"
  echo "ok: $world workers: $*"
}
# Per size, allreduce_perf runs warmup + iters + 1 checked collectives of its type, then one
# fp64 max of 8 bytes (the slowest time; each member counts its wrong values itself).
W1=3 W2=2
workers_run $W1 -d fp32 -o sum -b 4K -e 1M -f 16 -w 1 -n 3   # sizes 4K 64K 1M, 5 each
workers_run $W2 -d bf16 -o avg -b 8K -e 512K -f 8 -w 1 -n 2  # sizes 8K 64K 512K, 4 each
sizes1=$((4096 + 65536 + 1048576))
sizes2=$((8192 + 65536 + 524288))
payload=$((W1 * (sizes1 * 5 + 3 * 8) + W2 * (sizes2 * 4 + 3 * 8)))

# Each collective's first chunk is reduced by exactly one reducer, so the pool's sum counts it once.
wait_for 'sum(rs_collectives_reduced_total{dtype="fp32",op="sum"})' 15
wait_for 'sum(rs_collectives_reduced_total{dtype="bf16",op="avg"})' 12
wait_for 'sum(rs_collectives_reduced_total{dtype="fp64",op="max"})' 6
wait_for 'sum(rs_collectives_reduced_total)' 33
# Every worker sent S and got S back per collective: the pool received and sent W * S.
wait_for 'sum(rs_received_bytes_total)' "$payload"
wait_for 'sum(rs_sent_bytes_total)' "$payload"
# Each worker opened `streams` connections to every reducer.
wait_for 'sum(rs_streams_joined_total)' $((R * streams * (W1 + W2)))
wait_for 'sum(rs_connections_accepted_total)' $((R * streams * (W1 + W2)))
# Every reducer reduced chunks of the big fp32 collectives, and timed every chunk it reduced.
wait_for 'count(rs_chunks_reduced_total{dtype="fp32",op="sum"} > 0)' "$R"
wait_for 'sum(rs_reduce_latency_seconds_count) - sum(rs_chunks_reduced_total)' 0
wait_for 'sum(rs_reduce_latency_seconds_bucket{le="+Inf"}) - sum(rs_reduce_latency_seconds_count)' 0
wait_for 'sum(rs_reduce_latency_seconds_count) >= bool 33' 1
# The workers are gone: no connection, group or member is left, and nothing failed.
wait_for 'sum(rs_connections_open)' 0
wait_for 'sum(rs_groups)' 0
wait_for 'sum(rs_group_members)' 0
wait_for 'sum(rs_slots_in_use)' 0
wait_for 'sum(rs_frames_rejected_total) + sum(rs_group_aborts_total) + sum(rs_handshake_failures_total)' 0
wait_for 'sum(rs_draining)' 0

# --- A connection that sends garbage instead of a HELLO: refused and counted as malformed ------
read -r data_port _ <"$tmp/r0.port"
exec 3<>"/dev/tcp/127.0.0.1/$data_port"
head -c 200 /dev/zero | tr '\0' 'x' >&3
timeout 60 cat <&3 >/dev/null || true  # the reducer answers with an ERROR frame and closes
exec 3<&-
wait_for 'sum(rs_handshake_failures_total{reason="malformed"})' 1
wait_for 'sum(rs_connections_accepted_total)' $((R * streams * (W1 + W2) + 1))

check_exposition "after traffic"

# --- SIGTERM: the reducers stop their metrics endpoint and exit 0 --------------------------
for p in "${reducer_pids[@]}"; do kill -TERM "$p"; done
for p in "${reducer_pids[@]}"; do
  code=0
  wait "$p" || code=$?
  [[ $code -eq 0 ]] || fail "reducer $p exited with $code after SIGTERM"
done
echo "ok: reducers exited 0 on SIGTERM"
