# shellcheck shell=bash
# What the scripts that run jobs on an emulated cluster share (run.sh, attack.sh, failover.sh):
# one deadline for the whole script, the teardown on every exit path, and the reducers. Sourcing
# it sources cluster.sh too; the script defines log() and die().
#
#   harness_bound BUDGET SCRIPT ARGS...  re-runs the script under `timeout` once: TERM after
#                                        BUDGET seconds (the trap tears down), KILL 30 s later
#   harness_guard OUT                    traps EXIT (INT and TERM exit through it): calls
#                                        harness_cleanup if the script defines it, destroys the
#                                        cluster, checks that no namespace is left
#   harness_start_reducers BIN OUT ARGS...  reduction-server on every reducer host, on
#                                        <addr>:2222 (gRPC :2223), ARGS added ({addr}: the
#                                        host's), each waited for; sets HARNESS_REDUCERS
#                                        (host:port,...) and RED_PIDS
#   harness_restart_reducer J            reducer J again, under the same address, port and ARGS
#                                        as harness_start_reducers gave it (a restarted replica):
#                                        the old process killed (KILL) and waited for if alive,
#                                        the new one's output in OUT/reducer<J>.restarted.log;
#                                        sets RED_PIDS[J] and HARNESS_LISTENING_AT (epoch us: its
#                                        port file written, once it listens)
#   harness_stop_reducers                kills them (KILL) and waits until they are gone
#   harness_new_group                    a fresh group id

# shellcheck source=bench/cluster/cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh"

harness_bound() {  # budget script args...
  local budget=$1
  shift
  [[ -n ${RS_CLUSTER_RUN_BOUNDED:-} ]] && return 0
  export RS_CLUSTER_RUN_BOUNDED=1
  exec timeout -k 30 "$budget" "$@"
}

harness_teardown() {
  local rc=$?
  # Signals again during teardown (timeout TERMs the script and then its whole process group)
  # must not cut it short; the budget's kill-after still bounds it.
  trap - EXIT
  trap '' INT TERM
  set +e
  declare -F harness_cleanup >/dev/null && harness_cleanup
  cluster_destroy "$CLUSTER_PREFIX"
  if [[ -n $(cluster_namespaces "$CLUSTER_PREFIX") ]]; then
    log "namespaces left behind: run bench/cluster/cluster.sh --cleanup"; rc=1
  fi
  log "outputs in $HARNESS_OUT"
  exit "$rc"
}

harness_guard() {  # out
  HARNESS_OUT=$1
  trap harness_teardown EXIT
  trap 'log "interrupted"; exit 130' INT
  trap 'log "terminated (budget or a signal)"; exit 143' TERM
}

harness_start_reducers() {  # bin out args...
  local j
  HARNESS_REDUCER_ARGS=("$@")
  HARNESS_REDUCERS="" RED_PIDS=()
  for ((j = 0; j < CLUSTER_REDUCERS; j++)); do
    harness_launch_reducer "$j" "$2/reducer$j.log"
    HARNESS_REDUCERS+="${HARNESS_REDUCERS:+,}$(cluster_addr "r$j"):2222"
  done
  for ((j = 0; j < CLUSTER_REDUCERS; j++)); do harness_await_reducer "$j"; done
}

harness_restart_reducer() {  # j
  local j=$1
  harness_kill_wait "${RED_PIDS[j]}"
  harness_launch_reducer "$j" "${HARNESS_REDUCER_ARGS[1]}/reducer$j.restarted.log"
  harness_await_reducer "$j"
  # shellcheck disable=SC2034  # the caller's
  HARNESS_LISTENING_AT=$(stat -c %.6Y "${HARNESS_REDUCER_ARGS[1]}/reducer$j.port" | tr -d .)
}

# Reducer j on <addr>:2222 in its host, with harness_start_reducers' bin, out and args.
harness_launch_reducer() {  # j log
  local j=$1 log=$2 bin=${HARNESS_REDUCER_ARGS[0]} out=${HARNESS_REDUCER_ARGS[1]} a
  local -a args=("${HARNESS_REDUCER_ARGS[@]:2}")
  a=$(cluster_addr "r$j")
  rm -f "$out/reducer$j.port"
  cluster_exec "r$j" "$bin" --data-listen "$a:2222" --grpc-listen "$a:2223" \
    --port-file "$out/reducer$j.port" --stats-interval 0 "${args[@]//\{addr\}/$a}" >"$log" 2>&1 &
}

# Waits (20 s at most) for reducer j's port file; RED_PIDS[j] is its process.
harness_await_reducer() {  # j
  local j=$1 out=${HARNESS_REDUCER_ARGS[1]} t
  local -a pids
  for ((t = 0; t < 200; t++)); do [[ -s $out/reducer$j.port ]] && break; sleep 0.1; done
  [[ -s $out/reducer$j.port ]] || die "reducer $j did not start (see $out/reducer$j*.log)"
  # The server is the only process in its host ($! would be the subshell around cluster_exec).
  mapfile -t pids < <(ip netns pids "$(cluster_ns "r$j")")
  ((${#pids[@]} == 1)) || die "expected one reducer process in r$j, found ${pids[*]:-none}"
  RED_PIDS[j]=${pids[0]}
}

# Kills the given processes (KILL) and waits, 10 s at most, until they are gone.
harness_kill_wait() {  # pid...
  local pid t alive=0
  for pid in "$@"; do kill -KILL "$pid" 2>/dev/null || true; done
  for ((t = 0; t < 100; t++)); do
    alive=0
    for pid in "$@"; do cluster_pid_alive "$pid" && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  ((alive == 0)) || die "processes $* still running 10 s after KILL"
}

harness_stop_reducers() {
  harness_kill_wait "${RED_PIDS[@]}"
  RED_PIDS=()
}

harness_new_group() { od -An -tx1 -N16 /dev/urandom | tr -d ' \n'; }
