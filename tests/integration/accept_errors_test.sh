#!/usr/bin/env bash
# A reducer out of file descriptors: its accept loop backs off (no spinning), logs one line per
# 10 s with the count it did not log, counts every failure in rs_accept_errors_total, and serves
# again once descriptors free up. The limit is lowered on the reducer process itself (prlimit
# --pid), never on a test process. Every wait is for a state, bounded.
#   accept_errors_test.sh <allreduce_perf binary> <reduction-server binary>
set -euo pipefail
perf=$1
server=$2
here=$(cd "$(dirname "$0")" && pwd)
for tool in prlimit curl; do
  command -v "$tool" >/dev/null || { echo "FAILED: $tool is not installed"; exit 1; }
done

# shellcheck source=scripts/lib/local_reducers.sh
source "$here/../../scripts/lib/local_reducers.sh"
with_local_pool "$server" 1 --metrics-listen 127.0.0.1:0 --io-threads 1
fail() { echo "FAILED: $*"; tail -20 "$tmp/reducer0.log"; exit 1; }
reducer=${pids[0]}
read -r data_port _ metrics_port <"$tmp/r0.port"
metric() {  # <name>: its value on the reducer's /metrics (0 if absent)
  curl -sf "http://127.0.0.1:$metrics_port/metrics" | awk -v n="$1" '$1 == n {v = $2} END {print v + 0}'
}
wait_for() {  # <what> <command...>: up to 60 s
  local what=$1
  shift
  for _ in $(seq 600); do "$@" && return 0; sleep 0.1; done
  fail "timed out waiting for $what"
}

# Room for a few accepts above what the reducer holds now (the metrics scrape takes one too).
# Only the soft limit moves: raising it back needs no privilege.
open_fds=$(ls /proc/"$reducer"/fd | wc -l)
soft=$(prlimit --pid "$reducer" --nofile --noheadings --output SOFT)
prlimit --pid "$reducer" --nofile=$((open_fds + 8)):
accepted_before=$(metric rs_connections_accepted_total)
peers=200
fds=()
for ((i = 0; i < peers; i++)); do
  exec {fd}<>"/dev/tcp/127.0.0.1/$data_port"
  fds+=("$fd")
done
echo "ok: $peers connections queued on a reducer limited to $((open_fds + 8)) descriptors"

# Twenty failed accepts take a second of retries; without the rate limit, twenty log lines.
# With it, one line per 10 s: the scrape itself needs a descriptor, which on a loaded machine
# it may win only once the handshake timeout (10 s) frees some, so the bound is the time taken.
waited_from=$SECONDS
errors_reached() { (($(metric rs_accept_errors_total) >= 20)); }
wait_for "20 accept errors" errors_reached
errors=$(metric rs_accept_errors_total)
lines=$(grep -c "accept failed" "$tmp/reducer0.log" || true)
most=$((2 + (SECONDS - waited_from) / 10))
((lines >= 1 && lines <= most && lines < errors)) ||
  fail "expected 1 to $most 'accept failed' lines for $errors errors in $((SECONDS - waited_from)) s, got $lines"
echo "ok: $errors accept errors counted, $lines log line(s)"

# Descriptors free up: every queued connection is accepted, then a healthy group works.
for fd in "${fds[@]}"; do exec {fd}>&-; done
prlimit --pid "$reducer" --nofile="$soft":
all_accepted() { (($(metric rs_connections_accepted_total) >= accepted_before + peers)); }
wait_for "the queued connections accepted" all_accepted
group=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
wpids=()
for r in 0 1; do
  timeout 120 "$perf" --reducers "127.0.0.1:$data_port" --world 2 --rank "$r" --group "$group" \
    -d fp32 -o sum -b 64K -e 64K -w 1 -n 2 >"$tmp/worker$r.log" 2>&1 &
  wpids+=($!)
done
for r in 0 1; do wait "${wpids[$r]}" || { cat "$tmp/worker$r.log"; fail "worker $r failed after recovery"; }; done
grep -q "Out of bounds values : 0 OK" "$tmp/worker0.log" || fail "results after recovery not checked OK"
kill -0 "$reducer" || fail "the reducer died"
echo "ok: accepts recovered and a group of 2 got exact sums"
