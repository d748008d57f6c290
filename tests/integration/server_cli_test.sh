#!/usr/bin/env bash
# The reduction-server daemon as an operator meets it: flag errors, CLUSTER_SPEC, port files,
# graceful drain on SIGTERM.
#   server_cli_test.sh <reduction-server binary>
set -euo pipefail
server=$1
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

expect_fail() {  # <expected text> <env assignments and args...>
  local want=$1; shift
  local out code=0
  out=$(env "$@" 2>&1) || code=$?
  [[ $code -ne 0 ]] || { echo "FAILED: expected a non-zero exit for: $*"; exit 1; }
  grep -qF -- "$want" <<<"$out" || { echo "FAILED: '$want' not in output of $*:"; echo "$out"; exit 1; }
  echo "ok: refused ($want)"
}

# --version: version, commit, build type and the SIMD target the kernels dispatch to.
version=$("$server" --version)
grep -qE '^reduction-server [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12}(-dirty)?|unknown), [A-Za-z+]+, SIMD [A-Z0-9_]+\)$' <<<"$version" \
  || { echo "FAILED: --version printed '$version'"; exit 1; }
echo "ok: $version"

expect_fail "--memory-limit" "$server" --memory-limit 1K --data-listen 127.0.0.1:0
expect_fail "log-format" "$server" --log-format xml
expect_fail "is not a byte size" "$server" --max-chunk lots
expect_fail "CLUSTER_SPEC" CLUSTER_SPEC='{"cluster": ' "$server"
expect_fail "task.index 3" CLUSTER_SPEC='{"cluster":{"workerpool2":["a:2222"]},"task":{"type":"workerpool2","index":3}}' "$server"
expect_fail "cannot listen" "$server" --data-listen 203.0.113.1:0 --grpc-listen 127.0.0.1:0
expect_fail "--metrics-listen must be HOST:PORT" "$server" --metrics-listen 2224
expect_fail "metrics endpoint cannot listen on 203.0.113.1:0" "$server" --data-listen 127.0.0.1:0 \
  --grpc-listen 127.0.0.1:0 --metrics-listen 203.0.113.1:0

# CLUSTER_SPEC names this task's port; RS_* variables set the rest. The port is picked below
# the kernel's ephemeral range (where other tests' sockets live), and another is tried if it
# is taken anyway.
# shellcheck source=scripts/lib/local_reducers.sh
source "$(dirname "$0")/../../scripts/lib/local_reducers.sh"
start_spec_reducer "$server" "$tmp/log" "$tmp/ports" \
  RS_GRPC_LISTEN=127.0.0.1:0 RS_IO_THREADS=1 RS_LOG_FORMAT=json || exit 1
read -r data grpc <"$tmp/ports"
[[ $data == "$port" ]] || { echo "FAILED: data port $data, CLUSTER_SPEC said $port"; exit 1; }
echo "ok: CLUSTER_SPEC port $port, gRPC port $grpc"
grep -q '"severity":"INFO"' "$tmp/log" || { echo "FAILED: JSON log lines expected"; cat "$tmp/log"; exit 1; }
grep -q 'io_threads=1' "$tmp/log" || { echo "FAILED: effective config not logged"; cat "$tmp/log"; exit 1; }

# SIGTERM: drain (no groups active), then exit 0.
kill -TERM "${pids[-1]}"
code=0
for _ in $(seq 100); do kill -0 "${pids[-1]}" 2>/dev/null || break; sleep 0.05; done
wait "${pids[-1]}" || code=$?
[[ $code -eq 0 ]] || { echo "FAILED: exit code $code after SIGTERM"; cat "$tmp/log"; exit 1; }
grep -q "draining" "$tmp/log" || { echo "FAILED: no drain on SIGTERM"; cat "$tmp/log"; exit 1; }
echo "ok: drained and stopped on SIGTERM"
