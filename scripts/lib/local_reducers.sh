# shellcheck shell=bash
# Sourced by scripts that need a reducer pool on loopback (scripts/gpu-e2e.sh, scripts/ddp-e2e.sh,
# scripts/gpu-check.sh, tests/nccl_plugin/run_harness.sh) or one reducer started as on Vertex AI
# (tests/integration/).
#
# start_local_reducers BIN N DIR [reducer flags...]: starts N reduction-server processes on
# ephemeral loopback ports, logging to DIR/reducer<i>.log; appends their pids to the caller's
# `pids` array and sets `reducers` to "127.0.0.1:<port>,...". Fails if one exits or has not
# reported its port within 60 s.
start_local_reducers() {
  local bin=$1 n=$2 dir=$3 i port
  shift 3
  reducers=""
  for ((i = 0; i < n; i++)); do
    "$bin" --data-listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --port-file "$dir/r$i.port" \
      --stats-interval 0 "$@" >"$dir/reducer$i.log" 2>&1 &
    pids+=($!)
  done
  local first=$((${#pids[@]} - n))
  for ((i = 0; i < n; i++)); do
    for _ in $(seq 1200); do
      [[ -s "$dir/r$i.port" ]] && break
      kill -0 "${pids[first + i]}" 2>/dev/null || break  # it exited: no point waiting
      sleep 0.05
    done
    if [[ ! -s "$dir/r$i.port" ]]; then
      echo "reducer $i did not start:" >&2
      cat "$dir/reducer$i.log" >&2
      return 1
    fi
    read -r port _ <"$dir/r$i.port"
    reducers+="${reducers:+,}127.0.0.1:$port"
  done
}

# stop_local_pool: with_local_pool's EXIT trap: stops every pid in `pids`, then removes `tmp`
# (or only the job secret from a kept folder). A second signal does not cut it short.
stop_local_pool() {
  trap '' TERM INT
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ -n $local_pool_kept ]]; then rm -f "$tmp/job-secret"; else rm -rf "$tmp"; fi
}

# with_local_pool [--keep DIR] [--secret] BIN N [reducer flags...]: for a script whose pool
# lives as long as it does: makes the folder `tmp`, sets an EXIT trap that stops every pid in
# `pids` and removes `tmp`, and starts N reducers there (start_local_reducers).
#   --keep DIR  `tmp` is DIR (made if needed), left in place with the logs at exit (less the
#               job secret)
#   --secret    a job secret drawn for this pool, as users are told to run theirs: the reducers
#               read it from `tmp`/job-secret, and RS_SECRET_FILE is exported for the workers
with_local_pool() {
  local keep="" secret=0
  while [[ ${1:-} == --* ]]; do
    case "$1" in
      --keep) keep=$2; shift 2 ;;
      --secret) secret=1; shift ;;
      *) echo "with_local_pool: unknown option $1" >&2; return 2 ;;
    esac
  done
  if [[ -n $keep ]]; then
    mkdir -p "$keep"
    tmp=$(cd "$keep" && pwd)
  else
    tmp=$(mktemp -d)
  fi
  local_pool_kept=$keep
  trap stop_local_pool EXIT
  pids=()
  local flags=()
  if ((secret)); then
    (umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$tmp/job-secret")
    flags=(--secret-file "$tmp/job-secret")
    export RS_SECRET_FILE=$tmp/job-secret
  fi
  start_local_reducers "$1" "$2" "$tmp" "${@:3}" ${flags[@]+"${flags[@]}"}
}

# start_spec_reducer BIN LOG PORTFILE [VAR=value...]: starts BIN as Vertex AI starts a reducer,
# the task workerpool2[0] of a CLUSTER_SPEC that names its data port (gRPC then listens on the
# next one unless RS_GRPC_LISTEN says otherwise), with the given variables. The port is picked
# below the kernel's ephemeral range (where other tests' sockets live), and another is tried if
# it is taken anyway. Appends the pid to the caller's `pids` and sets `port` and `spec`. Fails if
# no port file appeared within 60 s.
start_spec_reducer() {
  local bin=$1 log=$2 portfile=$3 attempt
  shift 3
  for attempt in 1 2 3 4 5; do
    port=$(( 20000 + RANDOM % 12000 ))
    spec="{\"cluster\":{\"workerpool0\":[\"w0:1\"],\"workerpool2\":[\"127.0.0.1:$port\"]},\"task\":{\"type\":\"workerpool2\",\"index\":0},\"environment\":\"cloud\"}"
    rm -f "$portfile"
    env CLUSTER_SPEC="$spec" RS_PORT_FILE="$portfile" "$@" "$bin" >"$log" 2>&1 &
    pids+=($!)
    for _ in $(seq 600); do
      [[ -s "$portfile" ]] && return 0
      kill -0 "${pids[-1]}" 2>/dev/null || break
      sleep 0.1
    done
    grep -qE "Address already in use|cannot listen" "$log" || break
    echo "port $port taken (attempt $attempt), trying another"
  done
  echo "the reducer wrote no port file:" >&2
  cat "$log" >&2
  return 1
}
