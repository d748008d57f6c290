# shellcheck shell=bash
# Sourced by scripts/gpu-e2e.sh and scripts/ddp-e2e.sh (and the bundle checks of
# scripts/gpu-check.sh): their common options and what they run.
#
# gpu_options NAME "$@": parses, for the script NAME (its messages' prefix),
#   --bundle DIR     a bundle from scripts/make-gpu-check-bundle.sh: its reducer, plugin and
#                    harness; nothing is installed or built (the GPU machine has no registry)
#   --build DIR      a release build tree (default build/release, installed and built here if
#                    its reducer is missing; Debian 12 only)
#   --cpu-standin    the torch step replaced by the plugin harness driving the same plugin with
#                    the same environment: the plumbing only, NOT a GPU result
#   --logs DIR       keep the run's logs (ranks, reducers) in DIR, not in a folder removed at exit
# and sets `bundle`, `build`, `standin` (0/1), `logs` and `args` (the other arguments). Run from
# the repository's or the bundle's root: when that root is itself a bundle, it is the default.
gpu_options() {
  local name=$1
  shift
  bundle="" build="" standin=0 logs="" args=()
  while (($#)); do
    case "$1" in
      --bundle) bundle=$(cd "${2:?--bundle needs a folder}" && pwd) || exit 2; shift 2 ;;
      --build) build=${2:?--build needs a folder}; shift 2 ;;
      --cpu-standin) standin=1; shift ;;
      --logs) mkdir -p "${2:?--logs needs a folder}" && logs=$(cd "$2" && pwd); shift 2 ;;
      -h|--help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
      -*) echo "$name: unknown option $1 (--help lists them)" >&2; exit 2 ;;
      *) args+=("$1"); shift ;;
    esac
  done
  if [[ -z $bundle && -z $build ]] && is_gpu_bundle .; then bundle=$PWD; fi
  if [[ -n $bundle && -n $build ]]; then echo "$name: --bundle or --build, not both" >&2; exit 2; fi
  if [[ -n $bundle ]] && ! is_gpu_bundle "$bundle"; then
    echo "$name: $bundle is not a bundle of scripts/make-gpu-check-bundle.sh (no MANIFEST)" >&2
    exit 2
  fi
}

# is_gpu_bundle DIR: whether DIR is a bundle made by scripts/make-gpu-check-bundle.sh.
is_gpu_bundle() {
  [[ $(head -n 1 "$1/MANIFEST" 2>/dev/null) == "rs-gpu-check bundle"* ]]
}

# gpu_binaries: sets `reducer_bin`, `plugin` and `harness` (absolute paths) from `bundle` or
# `build`, building the release tree first if it is used and has no reducer.
# shellcheck disable=SC2034  # the sourcing scripts use them
gpu_binaries() {
  if [[ -n $bundle ]]; then
    reducer_bin=$bundle/bin/reduction-server
    plugin=$bundle/plugin/libnccl-net-reduction-server.so
    harness=$bundle/bin/plugin_harness
  else
    build=${build:-build/release}
    if [[ ! -x $build/server/reduction-server ]]; then
      scripts/install-deps.sh
      BUILD_ROOT=$(dirname "$build") scripts/build.sh "$(basename "$build")" >/dev/null
    fi
    reducer_bin=$(readlink -f "$build/server/reduction-server")
    plugin=$(readlink -f "$build/client/nccl_plugin/libnccl-net-reduction-server.so")
    harness=$(readlink -f "$build/tests/nccl_plugin/plugin_harness")
  fi
}

# gpu_machine_ready NAME: exits 2 unless this machine has a GPU (nvidia-smi) and PyTorch can use
# it, 3 if PyTorch's NCCL is too old to load the plugin; prints what tests/gpu/torch_env.py found.
gpu_machine_ready() {
  if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "$1: no GPU here (nvidia-smi is missing or fails); --cpu-standin tests the plumbing without one" >&2
    exit 2
  fi
  command -v python3 >/dev/null || { echo "$1: no python3 here (PyTorch is needed)" >&2; exit 2; }
  local found rc=0
  found=$(python3 tests/gpu/torch_env.py) || rc=$?
  sed "s/^/$1: /" <<<"$found"
  if ((rc != 0)); then
    echo "$1: cannot run here: $(tail -n 1 <<<"$found")" >&2
    exit "$rc"
  fi
}

# gpu_start NAME WHAT: what both GPU scripts do before their ranks: with --cpu-standin, says
# that the harness replaces WHAT and that this is no GPU result, else checks the machine
# (gpu_machine_ready); then the binaries (gpu_binaries) and the pool (gpu_pool), with a TERM and
# INT trap so that the pool's EXIT trap stops the reducers and the ranks.
gpu_start() {
  if ((standin)); then
    echo "$1: CPU STAND-IN: plumbing only, not a GPU result (the plugin harness replaces $2)"
  else
    gpu_machine_ready "$1"
  fi
  gpu_binaries
  gpu_pool "$1"
  trap 'exit 143' TERM INT
}

# gpu_free_port: a port for a rendezvous on loopback, below the kernel's ephemeral range.
gpu_free_port() {
  echo $((20000 + RANDOM % 12000))
}

# gpu_ranks DIR LIMIT [VAR=value...] -- CMD...: two ranks of CMD (each given --rank R --world 2)
# with the given variables, each its own NCCL "node" on GPU 0 (NCCL_HOSTID, spec section 5.3)
# with NCCL's shared-memory and P2P transports off, so that the two talk only through the
# network plugin, as separate hosts would. Output in DIR/rank<R>.log; each rank is stopped after
# LIMIT seconds. With --cpu-standin the plugin harness (CollNet all-reduces, every result checked:
# each type and each op once, at each size in turn, as its collnet-adapter mode sends them; the
# stand-in tests the plumbing, and the release tree's ctest sends the whole matrix) runs instead
# of CMD, with the same variables. Returns 1 if a rank failed.
gpu_ranks() {
  local dir=$1 limit=$2 vars=() rank procs=() status=0
  shift 2
  while [[ $1 != -- ]]; do vars+=("$1"); shift; done
  shift
  local cmd=("$@")
  ((standin)) && cmd=("$harness" --mode collnet-adapter --dir "$dir")
  mkdir -p "$dir"
  for rank in 0 1; do
    env NCCL_HOSTID="rs-gpu-node$rank" NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 ${vars[@]+"${vars[@]}"} \
      timeout -k 10 "$limit" "${cmd[@]}" --rank "$rank" --world 2 >"$dir/rank$rank.log" 2>&1 &
    procs+=($!)
    pids+=($!)  # the pool's EXIT trap stops them too, if this script is stopped
  done
  local rc
  for rank in 0 1; do
    rc=0
    wait "${procs[$rank]}" || rc=$?
    ((rc == 0)) && continue
    status=1
    if ((rc == 124 || rc == 137)); then echo "rank $rank FAILED: stopped after $limit s"
    else echo "rank $rank FAILED (exit status $rc)"; fi
    echo "the end of its log ($dir/rank$rank.log):"
    grep -v "NCCL INFO" "$dir/rank$rank.log" | tail -n 15
  done
  return $status
}

# gpu_pool NAME: two local reducers (`reducer_bin`) with a job secret, for the script's
# lifetime, in `logs` if given (kept) else in a folder removed at exit (with_local_pool); sets
# `tmp`, `pids`, `reducers` and RS_SECRET_FILE.
gpu_pool() {
  # shellcheck source=scripts/lib/local_reducers.sh
  source scripts/lib/local_reducers.sh
  local keep=()
  [[ -n $logs ]] && keep=(--keep "$logs")
  with_local_pool ${keep[@]+"${keep[@]}"} --secret "$reducer_bin" 2 --io-threads 2
  echo "$1: reducers $reducers ($("$reducer_bin" --version 2>&1 | head -n 1); $reducer_bin)"
}

# gpu_report_reducers NAME: after the workers are done, stops the pool and prints the groups the
# reducers served; fails (returns 1) if they served none.
gpu_report_reducers() {
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  pids=()
  grep -h "closed:" "$tmp"/reducer*.log || { echo "$1: MISSING: the reducers logged no group"; return 1; }
}
