#!/usr/bin/env bash
# Builds the reducer image and the worker layer with podman on a Debian base made here, and uses
# them: R reducer containers (host network, loopback ports), W host workers' checked all-reduces
# through them, W worker containers driving the installed NCCL plugin through the plugin harness,
# the health check, the non-root uid, and a clean SIGTERM drain (exit code 0). Prints the image
# sizes. Every container it starts, and the images it builds, are removed on every exit path.
#   scripts/image-test.sh          reducer image from the release tree's packages (as CI runs it)
#   scripts/image-test.sh --full   reducer image built from source in its builder stage (minutes)
#   --keep                         keep the images (tags printed at the end)
#   RS_IMAGE_TEST_REDUCERS / RS_IMAGE_TEST_WORKERS   R and W (default 2 and 3)
# Needs root, podman, runc and mmdebstrap (scripts/install-deps.sh installs them) and the
# release tree (scripts/build.sh release).
set -euo pipefail
cd "$(dirname "$0")/.."

full=0 keep=0
for arg in "$@"; do
  case "$arg" in
    --full) full=1 ;;
    --keep) keep=1 ;;
    *) echo "image-test: unknown option '$arg' (--full, --keep)" >&2; exit 2 ;;
  esac
done
R=${RS_IMAGE_TEST_REDUCERS:-2}
W=${RS_IMAGE_TEST_WORKERS:-3}
root=${BUILD_ROOT:-build}
start=$SECONDS
[[ $(id -u) -eq 0 ]] || { echo "image-test: needs root (podman with runc, as in docker/README.md)" >&2; exit 2; }
for tool in podman runc mmdebstrap; do
  command -v "$tool" >/dev/null || { echo "image-test: $tool not installed (scripts/install-deps.sh)" >&2; exit 2; }
done

# shellcheck source=scripts/lib/podman.sh
source scripts/lib/podman.sh
podman_setup "$root/images"
tmp=$(mktemp -d)
tag="t$$"
reducer_img="localhost/rs-image-test-reducer:$tag"
worker_img="localhost/rs-image-test-worker:$tag"
containers=()
pids=()  # host workers and podman clients in the background
cleanup() {
  local code=$? p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if ((${#containers[@]})); then podman rm -f -i -t 0 "${containers[@]}" >/dev/null 2>&1 || true; fi
  if ((!keep)); then podman rmi -f -i "$reducer_img" "$worker_img" >/dev/null 2>&1 || true; fi
  rm -rf "$tmp"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# (grep -q reads here-strings, not pipes: under pipefail, a writer cut off by grep's early exit
# would fail the check.)
fail() {
  echo "image-test: FAILED: $*" >&2
  # podman's own messages, less the health-check timer noise (below).
  [[ -s ${podman_log:-} ]] && { echo "--- podman's own messages:"
    grep -v "unable to get systemd connection" "$podman_log" | tail -n 20; } >&2
  exit 1
}
step() { echo "image-test: [$((SECONDS - start)) s] $*"; }
# build <log name> <podman build args...>: the output goes to a log, shown if the build fails.
build() {
  local log="$tmp/$1.log"; shift
  podman build --format docker --pull=never --network=host --layers=false "$@" >"$log" 2>&1 \
    || { tail -n 40 "$log"; return 1; }
}
# No systemd here: podman logs that it cannot set up health-check timers (checks run only when
# asked, with `podman healthcheck run`); that noise goes to this log.
podman_log="$tmp/podman.log"

# --- inputs: the base, the packages -----------------------------------------------------------
debian_base "$root/images"
scripts/package.sh release >"$tmp/package.log" 2>&1 || { cat "$tmp/package.log"; fail "scripts/package.sh"; }
step "packages: $(cd "$root/packages" && echo *.deb)"
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
[[ $commit == unknown || -z $(git status --porcelain --untracked-files=no) ]] || commit+="-dirty"

# --- images -------------------------------------------------------------------------------------
target=reducer-prebuilt
((full)) && target=reducer
step "building the reducer image (target $target)"
build reducer-build -f docker/reducer.Dockerfile --target "$target" --build-arg BASE="$base" \
  --build-arg RS_GIT_COMMIT="$commit" -t "$reducer_img" . || fail "reducer image build"
step "building the worker layer on the base"
build worker-build -f docker/worker.Dockerfile --build-arg BASE="$base" -t "$worker_img" . \
  || fail "worker image build"

inspect() { podman image inspect -f "$1" "$2"; }
[[ $(inspect '{{.Config.User}}' "$reducer_img") == "10001:10001" ]] || fail "reducer image USER"
[[ $(inspect '{{json .Config.Entrypoint}}' "$reducer_img") == '["reduction-server"]' ]] \
  || fail "reducer image ENTRYPOINT"
for p in 2222 2223 2224; do
  grep -q "\"$p/tcp\"" <<<"$(inspect '{{json .Config.ExposedPorts}}' "$reducer_img")" || fail "EXPOSE $p"
done
grep -q -- '--health-probe' <<<"$(inspect '{{json .HealthCheck}}' "$reducer_img")" \
  || fail "reducer image HEALTHCHECK: $(inspect '{{json .HealthCheck}}' "$reducer_img")"
for v in NCCL_NET_PLUGIN=/opt/reduction-server/lib/libnccl-net-reduction-server.so NCCL_COLLNET_ENABLE=1; do
  grep -qF "\"$v\"" <<<"$(inspect '{{json .Config.Env}}' "$worker_img")" || fail "worker image ENV $v"
done
run_in() { podman run --rm --network none "$@" 2>>"$podman_log"; }
version=$(run_in "$reducer_img" --version)
((full)) || [[ $version == "$("$root/release/server/reduction-server" --version)" ]] \
  || fail "the image's '$version' is not the release tree's build"
[[ $version == *"commit $commit"* ]] || fail "'$version' does not name commit $commit"
step "reducer image: $version"
if [[ -x $root/release/sizer/rs-sizer ]]; then  # the sizer is part of the reducer package
  run_in --entrypoint rs-sizer "$reducer_img" --version >/dev/null || fail "rs-sizer in the image"
  step "reducer image: $(run_in --entrypoint rs-sizer "$reducer_img" --version)"
fi

# --- R reducer containers -------------------------------------------------------------------
# Reducer i listens on data port P+10i, gRPC P+10i+1, metrics P+10i+2 (the image's convention,
# shifted). Reducer 0 reads its port from CLUSTER_SPEC as on Vertex AI (0.0.0.0), the others
# take RS_DATA_LISTEN on loopback. The root file system is read-only, as deploy/ runs it. The
# ports are picked below the ephemeral range; if one is taken, the pool is started again.
start_reducers() {
  local P=$1 i list="" spec
  for ((i = 0; i < R; i++)); do list+="${list:+,}\"127.0.0.1:$((P + 10 * i))\""; done
  spec="{\"cluster\":{\"workerpool0\":[\"127.0.0.1:1\"],\"workerpool2\":[$list]},\"task\":{\"type\":\"workerpool2\",\"index\":0},\"environment\":\"cloud\"}"
  reducers=""
  for ((i = 0; i < R; i++)); do
    local name="rs-image-test-$$-r$i" port=$((P + 10 * i))
    local env=(-e RS_IO_THREADS=1 -e RS_METRICS_LISTEN="127.0.0.1:$((port + 2))")
    if ((i == 0)); then env+=(-e CLUSTER_SPEC="$spec"); else env+=(-e RS_DATA_LISTEN="127.0.0.1:$port"); fi
    containers+=("$name")
    podman run -d --name "$name" --network host --read-only "${env[@]}" "$reducer_img" \
      >/dev/null 2>>"$podman_log"
    reducers+="${reducers:+,}127.0.0.1:$port"
  done
}
# Healthy means the image's own HEALTHCHECK passed. 0: all healthy; 1: a port was taken.
wait_healthy() {
  local i name
  for ((i = 0; i < R; i++)); do
    name="rs-image-test-$$-r$i"
    for _ in $(seq 600); do
      podman healthcheck run "$name" >/dev/null 2>&1 && continue 2
      if [[ $(podman inspect -f '{{.State.Status}}' "$name") != running ]]; then
        grep -qE "Address already in use|cannot listen" <<<"$(podman logs "$name" 2>&1)" && return 1
        podman logs "$name"; fail "reducer $name exited"
      fi
      sleep 0.2
    done
    podman logs "$name"; fail "reducer $name not healthy within 120 s"
  done
}
for attempt in 1 2 3 4 5; do
  start_reducers $((20000 + RANDOM % 11000 / 10 * 10))
  wait_healthy && break
  step "a port was taken (attempt $attempt); starting the reducers on others"
  podman rm -f -i -t 0 "${containers[@]}" >/dev/null 2>>"$podman_log"; containers=()
  ((attempt < 5)) || fail "no free ports in 5 attempts"
done
for c in "${containers[@]}"; do
  [[ $(podman inspect -f '{{.State.Health.Status}}' "$c") == healthy ]] || fail "$c not healthy"
  # The daemon (PID 1) and anything run in the container are uid 10001, not root.
  grep -qE '^Uid:\s+10001\s+10001\s+10001\s+10001$' <(podman exec "$c" cat /proc/1/status) \
    || fail "$c: the daemon's uid is not 10001"
  [[ $(podman exec "$c" id -u) == 10001 ]] || fail "$c: exec runs as $(podman exec "$c" id -u)"
done
step "$R reducers healthy, running as uid 10001: $reducers"
if grep -q -- --metrics-listen <<<"$("$root/release/server/reduction-server" --help)"; then
  first=${reducers%%,*}
  mport=$(( ${first##*:} + 2 ))
  timeout 60 bash -c "exec 3<>/dev/tcp/127.0.0.1/$mport; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3" \
    >"$tmp/metrics" || fail "no metrics on 127.0.0.1:$mport"
  grep -q '^rs_' "$tmp/metrics" || fail "no rs_ metrics on 127.0.0.1:$mport"
  step "metrics served on 127.0.0.1:$mport ($(grep -c '^rs_' "$tmp/metrics") rs_ samples)"
fi

# --- W workers on the host: checked all-reduces through the containers ----------------------
group=$(tr -d '-' </proc/sys/kernel/random/uuid)
pids=()
for ((r = 0; r < W; r++)); do
  timeout 300 "$root/release/bench/allreduce_perf" --reducers "$reducers" --world "$W" --rank "$r" \
    --group "$group" -b 4K -e 4M -f 8 -n 3 -w 1 -c 1 >"$tmp/worker$r.log" 2>&1 &
  pids+=($!)
done
for ((r = 0; r < W; r++)); do
  wait "${pids[$r]}" || { cat "$tmp/worker$r.log"; fail "host worker $r"; }
done
grep -q "Out of bounds values : 0 OK" "$tmp/worker0.log" || { cat "$tmp/worker0.log"; fail "results"; }
step "$W host workers: checked all-reduces 4 KiB..4 MiB through $R reducer containers, 0 wrong"

# --- W worker containers: the plugin as installed by the worker layer ------------------------
# Each runs the GPU-less plugin harness (NCCL's calls, CollNet all-reduces checked: each type and
# op once, as tests/portable/distro_test.sh sends the whole matrix through the same .so), loading
# the plugin through the layer's NCCL_NET_PLUGIN as NCCL does. The harness is the portable
# build's, as the layer holds nothing of Debian 12's libraries.
mkdir -p "$tmp/rdv"
pids=()
for ((r = 0; r < W; r++)); do
  name="rs-image-test-$$-w$r"
  containers+=("$name")
  podman run --rm --name "$name" --network host -v "$tmp/rdv:/rdv" \
    -v "$PWD/$root/portable/out/plugin_harness:/usr/local/bin/plugin_harness:ro" \
    -e RS_REDUCERS="$reducers" -e NCCL_RS_IFNAME=lo -e RS_STREAMS=2 \
    -e RS_CONNECT_TIMEOUT_MS=10000 -e NCCL_RS_RENDEZVOUS_TIMEOUT_MS=30000 "$worker_img" \
    sh -c "exec timeout 300 plugin_harness --version 11 \
           --mode collnet-adapter --rank $r --world $W --dir /rdv" >"$tmp/harness$r.log" 2>&1 &
  pids+=($!)
done
workers_started=$SECONDS
for ((r = 0; r < W; r++)); do
  code=0
  wait "${pids[$r]}" || code=$?
  if ((code != 0)); then
    # The harness prints why it failed; a crash or a kill prints nothing, so the exit code (124:
    # the 300 s timeout; 128+N: signal N; 125: podman) and the reducers' logs say what they can.
    cat "$tmp/harness$r.log"
    for c in "${containers[@]}"; do
      [[ $c == *-r[0-9]* ]] && { echo "--- $c:"; podman logs "$c" 2>&1 | tail -n 20; }
    done
    fail "worker container $r (plugin harness) exited with $code after $((SECONDS - workers_started)) s"
  fi
done
step "$W worker containers: the installed plugin's CollNet all-reduces checked through $R reducers"

# --- SIGTERM: each reducer drains and exits 0 -------------------------------------------------
for ((i = 0; i < R; i++)); do
  c="rs-image-test-$$-r$i"
  podman stop -t 30 "$c" >/dev/null 2>>"$podman_log"
  code=$(podman inspect -f '{{.State.ExitCode}}' "$c")
  [[ $code == 0 ]] || { podman logs "$c"; fail "$c exited with $code after SIGTERM"; }
  grep -q "draining" <<<"$(podman logs "$c" 2>&1)" || { podman logs "$c"; fail "$c did not drain"; }
done
step "$R reducers drained on SIGTERM and exited 0"

podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' \
  | grep -E "^($base|$reducer_img|$worker_img) " | sed 's/^/image-test: size: /'
if ((keep)); then echo "image-test: kept $reducer_img $worker_img"; fi
step "all checks passed"
