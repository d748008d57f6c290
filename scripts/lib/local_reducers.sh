# shellcheck shell=bash
# Sourced by scripts that need a reducer pool on loopback (scripts/gpu-e2e.sh,
# tests/nccl_plugin/run_harness.sh).
#
# start_local_reducers BIN N DIR [reducer flags...]: starts N reduction-server processes on
# ephemeral loopback ports, logging to DIR/reducer<i>.log; appends their pids to the caller's
# `pids` array and sets `reducers` to "127.0.0.1:<port>,...". Fails if one has not reported
# its port within 60 s.
start_local_reducers() {
  local bin=$1 n=$2 dir=$3 i port
  shift 3
  reducers=""
  for ((i = 0; i < n; i++)); do
    "$bin" --data-listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --port-file "$dir/r$i.port" \
      --stats-interval 0 "$@" >"$dir/reducer$i.log" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < n; i++)); do
    for _ in $(seq 1200); do [[ -s "$dir/r$i.port" ]] && break; sleep 0.05; done
    if [[ ! -s "$dir/r$i.port" ]]; then
      echo "reducer $i did not start:" >&2
      cat "$dir/reducer$i.log" >&2
      return 1
    fi
    read -r port _ <"$dir/r$i.port"
    reducers+="${reducers:+,}127.0.0.1:$port"
  done
}
