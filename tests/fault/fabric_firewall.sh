#!/usr/bin/env bash
# A fabric that TCP's port gets through and RDMA's does not (issue 28: a firewall, an EFA
# security group without its self rule): a fallback to TCP, never a lost reducer. Real
# reduction-server and fault_worker processes, each in a network namespace of its own on one
# bridge (bench/cluster/cluster.sh), 2 reducers offering the fabric (libfabric's tcp provider on
# their namespace's address) and 2 workers asking for it (RS_FABRIC=tcp).
#   1. Open: every worker's payloads go over the fabric (its "data over the fabric" line for each
#      reducer), every all-reduce exact: the set-up itself reaches the fabric.
#   2. On fresh namespaces, nft in each worker's namespace drops every new TCP connection on the
#      cluster's subnet but those to the reducers' data port, both ways, before anything starts:
#      the handshake goes through, the fabric's connections do not. Each stream's probe runs out
#      its own bound (RS_FABRIC_PROBE_TIMEOUT_MS, well inside the connect timeout), the worker
#      declines the fabric after accepting it ("fabric not used (the fabric channel failed its
#      probe: its probe did not complete within ... (RS_FABRIC_PROBE_TIMEOUT_MS))" for each
#      reducer) and runs over TCP: every all-reduce exact, no reducer taken for lost, no
#      failover.
# Root, ip netns, veth, bridge and nft are needed; without them it exits 77 (ctest's
# SKIP_RETURN_CODE) and says why. Everything it made goes on exit (trap).
#
#   fabric_firewall.sh --server <reduction-server> --worker <fault_worker>
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
server="" worker=""
while (($#)); do
  case $1 in
    --server) server=$2; shift 2 ;;
    --worker) worker=$2; shift 2 ;;
    *) echo "fabric_firewall: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x $server && -x $worker ]] || { echo "usage: fabric_firewall.sh --server BIN --worker BIN" >&2; exit 2; }

# shellcheck source=bench/cluster/cluster.sh
source "$here/../../bench/cluster/cluster.sh"
CLUSTER_SUBNET=10.77.28  # a subnet of its own (partition.sh has .27)

if ! why=$(cluster_supported); then echo "fabric_firewall: SKIPPED: $why"; exit 77; fi
command -v nft >/dev/null || { echo "fabric_firewall: SKIPPED: nft not installed (scripts/install-deps.sh)"; exit 77; }

readonly kWorkers=2 kReducers=2 kDataPort=7000
readonly kIters=20                 # checked all-reduces per worker
readonly kCount=$((256 << 10))     # fp32 elements each: 1 MiB, 16 chunks of 64 KiB
readonly kProbeMs=4000             # the probe's bound: what a fabric that does not reach costs
readonly kConnectMs=60000          # the handshake's, a hang guard here
# Hang guards, not timings: far above a healthy run on a loaded 2-core machine.
readonly kStateS=60 kRunS=120

test_name=fabric_firewall
# shellcheck source=tests/fault/netns_run.sh
source "$here/netns_run.sh"

start_reducers() {
  local j
  for ((j = 0; j < kReducers; j++)); do
    cluster_exec "r$j" "$server" --data-listen "$(cluster_addr "r$j"):$kDataPort" \
      --grpc-listen 127.0.0.1:0 --port-file "$dir/r$j.port" --stats-interval 0 --io-threads 1 \
      --secret-file "$dir/secret" --fabric-provider tcp --fabric-node "$(cluster_addr "r$j")" \
      --log-level info >"$dir/r$j.log" 2>&1 &
  done
  for ((j = 0; j < kReducers; j++)); do
    await "reducer $j to listen" "$kStateS" test -s "$dir/r$j.port"
  done
}

run_workers() {
  local i list="" group pids=()
  for ((i = 0; i < kReducers; i++)); do list+="${list:+,}$(cluster_addr "r$i"):$kDataPort"; done
  group=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  for ((i = 0; i < kWorkers; i++)); do
    cluster_exec "w$i" env RS_REDUCERS="$list" RS_SECRET_FILE="$dir/secret" \
      RS_CONNECT_TIMEOUT_MS="$kConnectMs" RS_FABRIC_PROBE_TIMEOUT_MS="$kProbeMs" RS_STREAMS=2 RS_CLIENT_IO_THREADS=1 RS_MAX_CHUNK=64KiB \
      RS_FABRIC=tcp RS_FABRIC_NODE="$(cluster_addr "w$i")" \
      timeout "$kRunS" "$worker" --group "$group" --world "$kWorkers" --rank "$i" \
      --count "$kCount" --iters "$kIters" >"$dir/w$i.out" 2>"$dir/w$i.log" &
    pids+=($!)
  done
  for ((i = 0; i < kWorkers; i++)); do
    wait "${pids[i]}" || fail "worker $i exited with $?"
    grep -q '^finished' "$dir/w$i.out" || fail "worker $i did not finish its loop"
    (($(grep -c '^done ' "$dir/w$i.out") == kIters)) || fail "worker $i: not $kIters all-reduces done"
    ! grep -q '^wrong \|^error ' "$dir/w$i.out" || fail "worker $i: $(grep -m1 '^wrong \|^error ' "$dir/w$i.out")"
  done
}

# Every worker logged <pattern> for each reducer (its once-per-reducer line; the client logs to
# stdout, beside fault_worker's own lines).
each_reducer_said() {
  local pattern=$1 i j line
  for ((i = 0; i < kWorkers; i++)); do
    for ((j = 0; j < kReducers; j++)); do
      line="reducer $j ($(cluster_addr "r$j"):$kDataPort): $pattern"
      grep -qF "$line" "$dir/w$i.out" || fail "worker $i never logged \"$line\""
    done
  done
}

# Drops, in worker namespace <h>, every new TCP connection on the subnet but the data port's.
firewall() {
  cluster_exec "$1" nft -f - <<EOF
table inet rs_fabric_firewall {
  chain out {
    type filter hook output priority 0; policy accept;
    ip daddr $CLUSTER_SUBNET.0/24 tcp dport != $kDataPort ct state new drop
  }
  chain in {
    type filter hook input priority 0; policy accept;
    ip saddr $CLUSTER_SUBNET.0/24 tcp dport != $kDataPort ct state new drop
  }
}
EOF
}

one_run() {  # <open|firewalled>
  local kind=$1 i
  cluster_create "$kWorkers" "$kReducers" 1gbit 2>/dev/null || fail "could not create the namespaces"
  rm -f "$dir"/*.out "$dir"/*.log "$dir"/*.port
  od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$dir/secret"
  chmod 600 "$dir/secret"
  if [[ $kind == firewalled ]]; then
    for ((i = 0; i < kWorkers; i++)); do firewall "w$i" || fail "nft could not set the firewall"; done
  fi
  start_reducers
  run_workers
  if [[ $kind == open ]]; then
    each_reducer_said "data over the fabric ("
    ! grep -q "fabric not used" "$dir"/w*.out || fail "open: a stream declined the fabric: $(grep -m1 -h "fabric not used" "$dir"/w*.out)"
  else
    each_reducer_said "fabric not used (the fabric channel failed its probe: its probe did not complete within $kProbeMs ms (RS_FABRIC_PROBE_TIMEOUT_MS)"
    echo "fabric_firewall: worker 0 said: $(grep -m1 -o "reducer 0 .*fabric not used.*" "$dir/w0.out")"
    ! grep -q "data over the fabric" "$dir"/w*.out || fail "firewalled: a stream used the fabric"
  fi
  local lost="reducer lost|reducers [0-9, ]+ of [0-9]+ lost"
  ! grep -qE "$lost" "$dir"/w*.out || fail "$kind: a reducer was taken for lost: $(grep -m1 -hE "$lost" "$dir"/w*.out)"
  cluster_destroy >/dev/null 2>&1 || true
}

echo "fabric_firewall: $kWorkers workers, $kReducers reducers in namespaces on $CLUSTER_SUBNET.0/24," \
  "fabric: libfabric's tcp provider; probe bound $kProbeMs ms"
one_run open
echo "fabric_firewall: open: every worker's payloads over the fabric to every reducer, $kIters all-reduces exact each"
one_run firewalled
echo "fabric_firewall: firewalled (new TCP connections dropped but the data port's): every stream's" \
  "probe failed, the fabric declined for each reducer, $kIters all-reduces exact over TCP, no reducer lost"
