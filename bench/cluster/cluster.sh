#!/usr/bin/env bash
# An emulated multi-host cluster on one machine. Each host is a network namespace with one veth
# link to a bridge; the bridge lives in a "switch" namespace of its own, so nothing at all is
# created in the root namespace and deleting the namespaces removes every trace. Each link is
# limited with tc tbf on both ends: the host's end shapes what it sends, the switch port's end
# what it receives, so every host gets the rate in both directions at once (full duplex).
#
# Names: namespaces <prefix>-sw, <prefix>-w<i> (workers), <prefix>-r<j> (reducers); the prefix
# is rsc<pid> of the process that created them, which is how --cleanup tells a leftover (its
# creator is gone) from a live run. Addresses: <subnet>.<10+i> for workers, <subnet>.<100+j>
# for reducers, on a private subnet (default 10.77.0.0/24) that exists only inside these
# namespaces; separate runs have separate switches, so they never see each other.
#
# As a library (source it; set CLUSTER_PREFIX first to override the default rsc$$):
#   cluster_create W R RATE        e.g. cluster_create 4 4 1gbit
#   cluster_exec HOST CMD...       e.g. cluster_exec w0 ip addr
#   cluster_addr HOST              the host's address
#   cluster_measure_link A B SECS  iperf3 both ways at once between two hosts; sets LINK_MBPS
#   cluster_destroy [PREFIX]       kill what runs in the namespaces, delete them
# As a command (root):
#   cluster.sh create -w 4 -r 4 --rate 1gbit   leaves the cluster up, prints its prefix
#   cluster.sh exec PREFIX HOST CMD...
#   cluster.sh destroy PREFIX
#   cluster.sh check [--rate 1gbit]            1 worker + 1 reducer, measure the link, destroy
#   cluster.sh --cleanup [--all]               remove clusters whose creator is gone (--all: every
#                                              rsc* cluster, live or not)
#   cluster.sh list

CLUSTER_PREFIX=${CLUSTER_PREFIX:-rsc$$}
CLUSTER_SUBNET=${CLUSTER_SUBNET:-10.77.0}          # first three octets of a /24
# tbf queue: 20 ms of traffic at the link rate. With 5 ms, incast into one host's link (4 workers
# x 4 streams into a reducer, and Open MPI's forced ring too) hit tail drops and 200 ms
# retransmission timeouts: 8 MiB at W=4, 1 Gbit/s took 500 ms (ours) and 206 ms (MPI ring)
# against 144 and 139 ms at 20 ms, while Gloo's chunked ring was the same (107 ms) at 5, 20
# and 50 ms. Bursts are at most max(64 KiB, 1 ms at the rate), so short transfers stay near it.
CLUSTER_TBF_LATENCY=${CLUSTER_TBF_LATENCY:-20ms}
# The host's own end (what it sends) may get a queue of its own: a NIC's transmit queue is
# deeper than a switch port's. Default: the same as the switch port's.
CLUSTER_HOST_TBF_LATENCY=${CLUSTER_HOST_TBF_LATENCY:-$CLUSTER_TBF_LATENCY}
# Congestion control inside every host. This VM's default is BBR, and with it 64 KiB-1 MiB
# all-reduces stalled for 30-140 ms at random with no retransmissions, and not with Reno
# (bench/RESULTS.md; a likely cause is BBR's ProbeRTT, which cuts a flow to 4 packets for
# 200 ms whenever its min-RTT is 10 s old). Linux's usual default, cubic, is not in this VM's
# tcp_allowed_congestion_control, so a namespace may not select it; Reno is what cubic does at
# these sub-ms RTTs (its TCP-friendly region). Every implementation runs on the same setting.
CLUSTER_CC=${CLUSTER_CC:-reno}
# Where a host's receive work runs. inline (default): veth hands a packet to the receiving
# namespace's stack inside the sender's system call, so this kernel (no IRQ time accounting)
# charges the receiver's TCP, the bridge and the far tbf to the sending process. threaded: each
# veth end gets its own NAPI kernel thread (GRO on, which veth only uses for segments the
# sender did not offload, hence TSO off), so a host's receive processing runs in a thread of
# its own, napi/eth0-<id>, that can be counted as that host's, as a NIC interrupt's would be.
CLUSTER_HOST_NAPI=${CLUSTER_HOST_NAPI:-inline}
CLUSTER_MTU=${CLUSTER_MTU:-1500}
declare -A CLUSTER_NAPI_PIDS=()  # host -> pids of its receive threads (threaded mode)
CLUSTER_WORKERS=0
CLUSTER_REDUCERS=0
CLUSTER_RATE=""
LINK_MBPS=""

cluster_log() { echo "cluster: $*" >&2; }

# "1gbit" -> bits per second; tc's own units (bit, kbit, mbit, gbit; decimal).
cluster_rate_bits() {
  local r=${1,,} n unit
  [[ $r =~ ^([0-9]+)([kmg]?bit)$ ]] || { cluster_log "bad rate '$1' (e.g. 500mbit, 1gbit)"; return 1; }
  n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]}
  case $unit in
    bit) echo "$n" ;; kbit) echo $((n * 1000)) ;; mbit) echo $((n * 1000000)) ;;
    gbit) echo $((n * 1000000000)) ;;
  esac
}

cluster_ns() { echo "${CLUSTER_PREFIX}-$1"; }

cluster_addr() {
  local h=$1
  case $h in
    w*) echo "${CLUSTER_SUBNET}.$((10 + ${h#w}))" ;;
    r*) echo "${CLUSTER_SUBNET}.$((100 + ${h#r}))" ;;
    *) cluster_log "unknown host '$h'"; return 1 ;;
  esac
}

cluster_hosts() {  # every host of the current cluster, workers first
  local i
  for ((i = 0; i < CLUSTER_WORKERS; i++)); do echo "w$i"; done
  for ((i = 0; i < CLUSTER_REDUCERS; i++)); do echo "r$i"; done
}

cluster_exec() {
  local h=$1; shift
  ip netns exec "$(cluster_ns "$h")" "$@"
}

# Adds one host: namespace, veth to the switch, address, tbf on both ends.
cluster_add_host() {
  local h=$1 rate=$2 burst=$3 ns sw
  ns=$(cluster_ns "$h") sw=$(cluster_ns sw)
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip netns exec "$ns" sysctl -q -w "net.ipv4.tcp_congestion_control=$CLUSTER_CC"
  # Created inside the switch namespace with the peer moved straight into the host's: the
  # interface names never exist in the root namespace, so parallel runs cannot collide.
  ip -n "$sw" link add "$h" type veth peer name eth0 netns "$ns"
  ip -n "$sw" link set "$h" master br0 up
  ip -n "$ns" addr add "$(cluster_addr "$h")/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set eth0 mtu "$CLUSTER_MTU"
  ip -n "$sw" link set "$h" mtu "$CLUSTER_MTU"
  tc -n "$ns" qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency "$CLUSTER_HOST_TBF_LATENCY"
  tc -n "$sw" qdisc add dev "$h" root tbf rate "$rate" burst "$burst" latency "$CLUSTER_TBF_LATENCY"
  if [[ $CLUSTER_HOST_NAPI == threaded ]]; then
    local before
    before=$(pgrep -d ' ' '^napi/' || true)
    cluster_thread_rx "$ns" eth0 || return 1
    CLUSTER_NAPI_PIDS[$h]=$(pgrep '^napi/' | grep -vxF -f <(tr ' ' '\n' <<<"$before") | tr '\n' ' ' || true)
    cluster_thread_rx "$sw" "$h" || return 1
  fi
}

# Where the links dropped packets, and how often TCP resent: one line of cumulative counters,
# "worker_out worker_in reducer_out reducer_in retrans backlog", summed over the hosts of each
# kind (out: the host's own tbf; in: its switch port's tbf, the queue an incast fills), and the
# packets the kernel dropped from its per-CPU receive backlog (/proc/net/softnet_stat; the
# whole machine: every veth of every host hands its packets through the same two backlogs of
# net.core.netdev_max_backlog each, where a real host has its NIC's queues to itself). Two
# snapshots around a run say which queue overflowed.
cluster_loss() {
  local h ns sw wo=0 wi=0 ro=0 ri=0 rt=0 bl=0 a b t
  sw=$(cluster_ns sw)
  for h in $(cluster_hosts); do
    ns=$(cluster_ns "$h")
    a=$(tc -s -n "$ns" qdisc show dev eth0 | awk '/dropped/ { gsub(/[(),]/, ""); for (i = 1; i <= NF; i++) if ($i == "dropped") { print $(i + 1); exit } }')
    b=$(tc -s -n "$sw" qdisc show dev "$h" | awk '/dropped/ { gsub(/[(),]/, ""); for (i = 1; i <= NF; i++) if ($i == "dropped") { print $(i + 1); exit } }')
    t=$(ip netns exec "$ns" awk '/^Tcp:/ { if (!n++) { for (i = 1; i <= NF; i++) if ($i == "RetransSegs") c = i } else print $c }' /proc/net/snmp)
    case $h in
      w*) wo=$((wo + ${a:-0})) wi=$((wi + ${b:-0})) ;;
      r*) ro=$((ro + ${a:-0})) ri=$((ri + ${b:-0})) ;;
    esac
    rt=$((rt + ${t:-0}))
  done
  while read -r _ a _; do bl=$((bl + 16#$a)); done </proc/net/softnet_stat
  echo "$wo $wi $ro $ri $rt $bl"
}

# veth uses NAPI only with GRO requested and only for packets not offloaded by TSO; toggling
# GRO makes veth set NAPI up on a link that already has it on by default.
cluster_thread_rx() {  # namespace device
  command -v ethtool >/dev/null || { cluster_log "CLUSTER_HOST_NAPI=threaded needs ethtool"; return 1; }
  ip netns exec "$1" ethtool -K "$2" tso off gro off >/dev/null
  ip netns exec "$1" ethtool -K "$2" gro on >/dev/null
  ip netns exec "$1" sh -c "echo 1 > /sys/class/net/$2/threaded"
}

cluster_create() {  # W R RATE
  local w=$1 r=$2 rate=$3 bits burst h
  ((w >= 1 && w <= 90 && r >= 0 && r <= 150)) || { cluster_log "need 1 <= W <= 90, 0 <= R <= 150"; return 1; }
  bits=$(cluster_rate_bits "$rate") || return 1
  [[ $CLUSTER_HOST_NAPI == inline || $CLUSTER_HOST_NAPI == threaded ]] ||
    { cluster_log "host receive work must be inline or threaded, not '$CLUSTER_HOST_NAPI'"; return 1; }
  burst=$((bits / 8 / 1000))
  ((burst < 65536)) && burst=65536
  CLUSTER_WORKERS=$w CLUSTER_REDUCERS=$r CLUSTER_RATE=$rate
  ip netns add "$(cluster_ns sw)"
  ip -n "$(cluster_ns sw)" link add br0 type bridge
  ip -n "$(cluster_ns sw)" link set br0 mtu "$CLUSTER_MTU" up
  for h in $(cluster_hosts); do cluster_add_host "$h" "$rate" "$burst" || return 1; done
  cluster_fit_neigh_table
  cluster_log "$CLUSTER_PREFIX: $w workers + $r reducers on ${CLUSTER_SUBNET}.0/24, tbf $rate" \
    "burst ${burst}B latency $CLUSTER_TBF_LATENCY (host end $CLUSTER_HOST_TBF_LATENCY) on both ends of every link, TCP $CLUSTER_CC"
}

# The kernel keeps one ARP table for every namespace, and its garbage-collection thresholds
# (net.ipv4.neigh.default.gc_thresh1..3, set only in the root namespace) count all namespaces'
# entries together. Real hosts each have a table of their own; here H hosts that all talk to each
# other hold up to H*(H-1) entries, and at W=R=32 (64 hosts, 2048 entries for our all-to-all
# alone) the default limit of 1024 refused new ones ("neighbor table overflow" in dmesg): SYNs
# never left and connections died when their entry went stale. So while clusters exist the
# thresholds are raised to fit all of their hosts (never lowered), and the last cluster to go
# puts back what the first one found.
CLUSTER_NEIGH_SAVED=${CLUSTER_NEIGH_SAVED:-/run/rs-cluster-neigh-thresholds}
cluster_all_hosts() { ip netns list 2>/dev/null | awk '$1 ~ /^rsc[0-9a-z]+-[wr][0-9]+$/' | wc -l; }

cluster_fit_neigh_table() {
  local hosts need i key
  # Below thresh1 nothing is collected, above thresh2 collection is forced, thresh3 is the hard
  # limit: 1, 2 and 4 times what the hosts may hold.
  local -a times=(0 1 2 4)
  hosts=$(cluster_all_hosts)
  need=$((hosts * hosts))
  ((need > $(sysctl -n net.ipv4.neigh.default.gc_thresh1))) || return 0
  [[ -e $CLUSTER_NEIGH_SAVED ]] ||
    sysctl -n net.ipv4.neigh.default.gc_thresh{1,2,3} | paste -sd' ' >"$CLUSTER_NEIGH_SAVED"
  for i in 1 2 3; do
    key=net.ipv4.neigh.default.gc_thresh$i
    (($(sysctl -n "$key") >= need * times[i])) || sysctl -q -w "$key=$((need * times[i]))"
  done
  cluster_log "ARP table limits (shared by all namespaces) raised for $hosts hosts:" \
    "$(sysctl -n net.ipv4.neigh.default.gc_thresh{1,2,3} | paste -sd/)"
}

cluster_restore_neigh_table() {
  local t1 t2 t3
  [[ -e $CLUSTER_NEIGH_SAVED ]] || return 0
  (($(cluster_all_hosts) == 0)) || return 0
  read -r t1 t2 t3 <"$CLUSTER_NEIGH_SAVED"
  sysctl -q -w net.ipv4.neigh.default.gc_thresh1="$t1" net.ipv4.neigh.default.gc_thresh2="$t2" \
    net.ipv4.neigh.default.gc_thresh3="$t3"
  rm -f "$CLUSTER_NEIGH_SAVED"
  cluster_log "ARP table limits put back: $t1/$t2/$t3"
}

# Namespaces of one cluster (prefix), whatever its size.
cluster_namespaces() {
  ip netns list 2>/dev/null | awk -v p="$1-" 'index($1, p) == 1 { print $1 }'
}

cluster_destroy() {  # [PREFIX]
  local p=${1:-$CLUSTER_PREFIX} ns pids try sig
  local -a spaces
  mapfile -t spaces < <(cluster_namespaces "$p")
  ((${#spaces[@]})) || return 0
  # Processes keep a namespace alive after `ip netns del`: stop what runs inside first (only
  # processes started in namespaces this script created). TERM, up to 2 s, then KILL.
  for try in $(seq 40); do
    pids=""
    for ns in "${spaces[@]}"; do pids+=" $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"; done
    [[ -z ${pids// /} ]] && break
    case $try in 1) sig=TERM ;; 20) sig=KILL ;; *) sig="" ;; esac
    # shellcheck disable=SC2086
    [[ -n $sig ]] && { kill -s "$sig" $pids 2>/dev/null || true; }
    sleep 0.1
  done
  for ns in "${spaces[@]}"; do ip netns del "$ns" || cluster_log "ip netns del $ns failed"; done
  cluster_log "$p: destroyed ${#spaces[@]} namespaces"
  cluster_restore_neigh_table
}

# Running and not a zombie (a killed creator can linger as one until it is reaped).
cluster_pid_alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != Z ]]
}

# Leftovers of killed runs: clusters whose creating pid is gone (or every rsc* with --all).
cluster_cleanup() {
  local mode=${1:-} p pid
  for p in $(ip netns list 2>/dev/null | awk '{ print $1 }' | sed -nE 's/^(rsc[0-9]+)-.*/\1/p' | sort -u); do
    pid=${p#rsc}
    if [[ $mode != --all ]] && cluster_pid_alive "$pid"; then
      cluster_log "$p: creator $pid still running, kept (--all removes it)"
      continue
    fi
    cluster_destroy "$p"
  done
}

# Can this machine build a cluster? (root, ip netns, veth, bridge and tbf in the kernel.)
cluster_supported() {
  local p=rsc$$probe
  [[ $(id -u) -eq 0 ]] || { echo "not root"; return 1; }
  if ! command -v ip >/dev/null || ! command -v tc >/dev/null; then echo "ip/tc (iproute2) not installed"; return 1; fi
  if ! ip netns add "$p" 2>/dev/null; then echo "ip netns unavailable (no CAP_SYS_ADMIN/NET_ADMIN?)"; return 1; fi
  local ok=1
  ip -n "$p" link add br0 type bridge 2>/dev/null || ok=0
  ((ok)) && { ip -n "$p" link add v0 type veth peer name v1 2>/dev/null || ok=0; }
  ((ok)) && { tc -n "$p" qdisc add dev v0 root tbf rate 1gbit burst 64k latency 5ms 2>/dev/null || ok=0; }
  ip netns del "$p" 2>/dev/null || true
  ((ok)) || { echo "kernel lacks bridge, veth or tbf"; return 1; }
}

# iperf3 between two hosts, both directions at once: sets LINK_MBPS="<a->b> <b->a>".
cluster_measure_link() {
  local a=$1 b=$2 secs=${3:-2} out try
  LINK_MBPS=""
  command -v iperf3 >/dev/null || { cluster_log "iperf3 not installed: link rate not measured"; return 0; }
  cluster_exec "$a" timeout $((secs + 20)) iperf3 -s -1 -B "$(cluster_addr "$a")" -p 5201 >/dev/null 2>&1 &
  local server=$!
  for try in 1 2 3 4 5 6 7 8 9 10; do
    # The server needs a moment to listen; the client fails fast until it does.
    if out=$(cluster_exec "$b" timeout $((secs + 15)) iperf3 -c "$(cluster_addr "$a")" -p 5201 \
               --bidir -f m -t "$secs" 2>&1); then break; fi
    out=""; sleep 0.3
  done
  wait "$server" 2>/dev/null || true
  [[ -n $out ]] || { cluster_log "iperf3 $b <-> $a failed"; return 1; }
  # Receiver-side sums: [TX-C] is b->a, [RX-C] is a->b.
  local ba ab
  ba=$(awk '/\[TX-C\]/ && /receiver/ { for (i = 1; i <= NF; i++) if ($i == "Mbits/sec") print $(i-1) }' <<<"$out" | tail -1)
  ab=$(awk '/\[RX-C\]/ && /receiver/ { for (i = 1; i <= NF; i++) if ($i == "Mbits/sec") print $(i-1) }' <<<"$out" | tail -1)
  # shellcheck disable=SC2034  # read by the scripts that source this one
  LINK_MBPS="${ab:-?} ${ba:-?}"
  cluster_log "link $a <-> $b (tbf $CLUSTER_RATE), both directions at once: $a->$b ${ab:-?} Mbit/s, $b->$a ${ba:-?} Mbit/s"
}

cluster_main() {
  set -euo pipefail
  local cmd=${1:-}; shift || true
  case $cmd in
    create)
      local w=2 r=2 rate=1gbit
      while (($#)); do
        case $1 in -w) w=$2; shift 2 ;; -r) r=$2; shift 2 ;; --rate) rate=$2; shift 2 ;;
          *) cluster_log "create: unknown option $1"; return 2 ;; esac
      done
      trap 'cluster_destroy' ERR
      cluster_create "$w" "$r" "$rate"
      trap - ERR
      echo "$CLUSTER_PREFIX" ;;
    exec)
      CLUSTER_PREFIX=$1; shift
      local h=$1; shift
      ip netns exec "$(cluster_ns "$h")" "$@" ;;
    destroy) cluster_destroy "$1" ;;
    check)
      local rate=1gbit
      [[ ${1:-} == --rate ]] && rate=$2
      trap 'cluster_destroy' EXIT
      trap 'exit 130' INT TERM
      cluster_create 1 1 "$rate"
      cluster_measure_link w0 r0 2 ;;
    --cleanup) cluster_cleanup "${1:-}" ;;
    list) ip netns list | awk '$1 ~ /^rsc[0-9]+-/ { print $1 }' ;;
    *) sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; return 2 ;;
  esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  cluster_main "$@"
fi
