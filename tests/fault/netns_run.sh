# The scaffolding of the namespace fault tests (partition.sh, fabric_firewall.sh), sourced after
# bench/cluster/cluster.sh with `test_name`, `kWorkers` and `kReducers` set: the run's folder
# (`dir`: w<i>.out and w<i>.log per worker, r<j>.log per reducer; kept on failure), the cluster
# torn down on every exit, fail() with each process's last lines, and await(), a hang guard that
# polls a state (never a timing).
# shellcheck shell=bash disable=SC2154  # test_name, kWorkers, kReducers: the sourcing test's

dir=$(mktemp -d "/tmp/rs-$test_name-XXXXXX")
netns_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  # The namespaces' processes (reducers and workers only) go with them, TERM then KILL.
  cluster_destroy >/dev/null 2>&1 || true
  if ((rc == 0)); then rm -rf "$dir"; else echo "$test_name: logs kept in $dir"; fi
  exit "$rc"
}
trap netns_cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "FAILED: $*"
  local i
  for ((i = 0; i < kWorkers; i++)); do
    echo "--- worker $i: $(grep -c '^done ' "$dir/w$i.out" 2>/dev/null || echo 0) done; last lines:"
    tail -n 3 "$dir/w$i.out" 2>/dev/null || true
    tail -n 5 "$dir/w$i.log" 2>/dev/null || true
  done
  for ((i = 0; i < kReducers; i++)); do
    echo "--- reducer $i log tail:"
    tail -n 8 "$dir/r$i.log" 2>/dev/null || true
  done
  exit 1
}

now_ms() { date +%s%3N; }
# await <what> <seconds> <command...>: until the command holds, or fail() after that long.
await() {
  local what=$1 secs=$2 end
  shift 2
  end=$(($(now_ms) + secs * 1000))
  until "$@"; do
    (($(now_ms) < end)) || fail "timed out after ${secs} s waiting for $what"
    sleep 0.05
  done
}
