#!/usr/bin/env bash
# The one-shot GPU check, for a GPU machine with PyTorch (CUDA, NCCL 2.20 or later) and nothing
# else: no build tools, no package registry. It uses only the bundle it is given
# (scripts/make-gpu-check-bundle.sh: the portable plugin, its harness, and a Debian 12 reducer
# that carries its own shared libraries and loader), and in ten minutes at most:
#   1. bundle          every file matches the bundle's MANIFEST; the bundled reducer starts here
#   2. plugin-harness  tests/nccl_plugin/run_harness.sh on this machine's CPU: the portable plugin
#                      driven as NCCL drives it, against the bundled reducers (CollNet and p2p,
#                      v11 to v8, failures)
#   3. gpu-e2e         scripts/gpu-e2e.sh: checked NCCL all-reduces from PyTorch through CollNet
#                      (CollNetDirect, CollNetChain)
#   4. ddp-e2e         scripts/ddp-e2e.sh: DDP training through the plugin vs NCCL alone
# and writes one report (markdown) with the machine, each step's result, time and key lines;
# the steps' logs go in a folder beside it. Each step has a bound (30, 140, 190 and 160 s, and
# 10 s to stop; the machine's facts 40 s), so the whole takes 10 minutes at most, whatever hangs.
#   scripts/gpu-check.sh [--bundle DIR] [--report FILE] [--cpu-standin]
#     --bundle DIR    default: the bundle this script is part of, else build/gpu-check
#     --report FILE   default: ./gpu-check-report.md (logs in ./gpu-check-report-logs/)
#     --cpu-standin   where there is no GPU (CI): steps 3 and 4 run the plugin harness in place
#                     of PyTorch through the same scripts, to test the plumbing. The report is
#                     marked as such everywhere: it is NOT a GPU result.
# Exit status: 0 every step passed, 1 a step failed, 2 no GPU here (and no --cpu-standin).
set -euo pipefail
invoked=$(printf '%s' "$0"; printf ' %s' "$@")
start_dir=$PWD
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/gpu_inputs.sh
source scripts/lib/gpu_inputs.sh

bundle="" report=$start_dir/gpu-check-report.md standin=0
while (($#)); do
  case "$1" in
    --bundle) bundle=$(cd "${2:?--bundle needs a folder}" && pwd) || exit 2; shift 2 ;;
    --report) report=${2:?--report needs a file}; [[ $report == /* ]] || report=$start_dir/$report; shift 2 ;;
    --cpu-standin) standin=1; shift ;;
    -h|--help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (--help lists them)" >&2; exit 2 ;;
  esac
done
if [[ -z $bundle ]]; then
  if is_gpu_bundle .; then bundle=$PWD
  elif is_gpu_bundle build/gpu-check; then bundle=$PWD/build/gpu-check
  else
    echo "gpu-check: no bundle: make one with scripts/make-gpu-check-bundle.sh, or give --bundle DIR" >&2
    exit 2
  fi
fi
is_gpu_bundle "$bundle" || { echo "gpu-check: $bundle is not a bundle (no MANIFEST)" >&2; exit 2; }
mkdir -p "$(dirname "$report")"
logs=${report%.md}-logs
rm -rf "$logs"
mkdir -p "$logs"
began=$SECONDS
standin_note="CPU STAND-IN: plumbing only, not a GPU result"
say() { echo "gpu-check: [$((SECONDS - began)) s] $*"; }

# --- the machine --------------------------------------------------------------------------------
machine=()
fact() { machine+=("- $1: $2"); }
fact host "$(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)"
fact date "$(date -u '+%Y-%m-%d %H:%M UTC')"
if command -v nvidia-smi >/dev/null; then
  gpus=$(timeout 10 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1) \
    && have_gpu=1 || have_gpu=0
  fact "GPU (nvidia-smi)" "$(tr '\n' ';' <<<"$gpus" | sed 's/;$//')"
else
  have_gpu=0
  fact "GPU (nvidia-smi)" "none: nvidia-smi not found"
fi
fact OS "$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-unknown}"); kernel $(uname -r)"
fact glibc "$(getconf GNU_LIBC_VERSION 2>/dev/null || echo unknown)"
fact CPUs "$(nproc) x $(grep -m 1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
torch_rc=2
if command -v python3 >/dev/null; then
  fact python "$(python3 --version 2>&1)"
  torch_facts=$(timeout 30 python3 tests/gpu/torch_env.py 2>&1) && torch_rc=0 || torch_rc=$?
  while IFS= read -r line; do fact "${line%%: *}" "${line#*: }"; done <<<"$torch_facts"
else
  fact python "none: python3 not found"
fi

# --- the report ---------------------------------------------------------------------------------
steps=() results=() times=() details=()
write_report() {
  local verdict=$1 i
  {
    echo "# Reduction Server GPU check"
    echo
    if ((standin)); then
      echo "**$standin_note.** Run with \`--cpu-standin\`: the PyTorch steps were replaced by the plugin"
      echo "harness on the CPU. Nothing here says anything about NCCL or a GPU."
      echo
    fi
    echo "Result: **$verdict**"
    echo
    echo "Command: \`$invoked\` (from \`$start_dir\`), $((SECONDS - began)) s. Logs: \`$logs/\`."
    echo
    echo "## Machine"
    echo
    printf '%s\n' "${machine[@]}"
    echo
    echo "## Bundle"
    echo
    echo '```'
    sed -n '1,/^files/p' "$bundle/MANIFEST" | sed '$d'
    echo '```'
    echo
    echo "## Steps"
    echo
    ((${#steps[@]})) || { echo "None run."; return 0; }
    echo "| step | result | time |"
    echo "|---|---|---|"
    for i in "${!steps[@]}"; do echo "| ${steps[$i]} | ${results[$i]} | ${times[$i]} s |"; done
    for i in "${!steps[@]}"; do
      echo
      echo "### ${steps[$i]}: ${results[$i]}"
      echo
      printf '%s\n' "${details[$i]}"
    done
  } >"$report"
}

# step NAME LIMIT STANDIN_MARK KEYS CMD...: runs CMD (output in the logs folder) for at most
# LIMIT seconds and records its result, time and key lines: those matching the regular
# expression KEYS if it passed, else the end of its output. STANDIN_MARK 1: a stand-in step.
failed=0
step() {
  local name=$1 limit=$2 mark=$3 keys=$4 rc=0 t0=$SECONDS result log
  shift 4
  log=$logs/$name.log
  say "$name (at most $limit s) ..."
  timeout -k 10 "$limit" "$@" >"$log" 2>&1 || rc=$?
  case $rc in
    0) result=PASS ;;
    124|137) result="FAIL: stopped after $limit s" ;;
    3) result="FAIL: PyTorch's NCCL cannot load the plugin (older than 2.20)" ;;
    *) result="FAIL (exit status $rc)" ;;
  esac
  ((rc == 0)) || failed=$((failed + 1))
  ((mark)) && result="$result ($standin_note)"
  steps+=("$name") results+=("$result") times+=($((SECONDS - t0)))
  details+=("$(printf '%s\n\n' "Command: \`${*#"$bundle/"}\`; log: \`$log\`."
               ((mark)) && printf '%s\n\n' "**$standin_note.**"
               echo '```'
               if ((rc == 0)); then grep -E "$keys" "$log" | grep -v "NCCL INFO"
               else grep -v "NCCL INFO" "$log" | tail -n 40; fi
               echo '```')")
  say "$name: $result ($((SECONDS - t0)) s)"
  write_report "in progress ($name done)"
}

if ((!standin)); then
  reason=""
  ((have_gpu)) || reason="nvidia-smi is missing or fails"
  if [[ -z $reason && $torch_rc != 0 && $torch_rc != 3 ]]; then
    reason="PyTorch cannot use a GPU here: $(tail -n 1 <<<"${torch_facts:-no python3}")"
    ((torch_rc == 124)) && reason="PyTorch did not answer within 40 s"
  fi
  if [[ -n $reason ]]; then
    write_report "NOT RUN: no GPU here ($reason)"
    echo "gpu-check: no GPU here ($reason): nothing run. On a machine without a GPU," \
      "--cpu-standin tests the plumbing only ($standin_note). Report: $report" >&2
    exit 2
  fi
fi
if ((torch_rc == 3)); then
  say "$(tail -n 1 <<<"$torch_facts")"
fi

# The bundle as it arrived: every file as MANIFEST lists it, and the reducer runs here.
bundle_check() {
  local n version loader
  cd "$1" || return 1
  n=$(grep -cE '^[0-9a-f]{64}  ' MANIFEST)
  grep -E '^[0-9a-f]{64}  ' MANIFEST | sha256sum --check --strict --quiet \
    || { echo "the files above differ from MANIFEST: the bundle was damaged on its way"; return 1; }
  echo "all $n files match MANIFEST"
  version=$(bin/reduction-server --version 2>&1) \
    || { echo "the bundled reducer does not start here: $version"; return 1; }
  loader=$(lib/ld-linux-x86-64.so.2 --version 2>&1 | head -n 1)
  echo "bundled reducer: $version"
  echo "its $(find lib -type f | wc -l) libraries and loader: $loader"
}
export -f bundle_check
# shellcheck disable=SC2016  # $1 is the inner shell's
step bundle 30 0 . bash -c 'bundle_check "$1"' bundle_check "$bundle"
step plugin-harness 140 0 '^ok:|passed|libnccl-net-reduction-server [0-9]' \
  tests/nccl_plugin/run_harness.sh "$bundle/bin/plugin_harness" \
  "$bundle/plugin/libnccl-net-reduction-server.so" "$bundle/bin/reduction-server"
standin_flag=()
((standin)) && standin_flag=(--cpu-standin)
step gpu-e2e 190 "$standin" . scripts/gpu-e2e.sh --bundle "$bundle" ${standin_flag[@]+"${standin_flag[@]}"} \
  --logs "$logs/gpu-e2e"
step ddp-e2e 160 "$standin" . scripts/ddp-e2e.sh --bundle "$bundle" ${standin_flag[@]+"${standin_flag[@]}"} \
  --logs "$logs/ddp-e2e"

verdict="PASS: ${#steps[@]} of ${#steps[@]} steps passed"
((failed == 0)) || verdict="FAIL: $failed of ${#steps[@]} steps failed"
((torch_rc == 3)) && verdict="$verdict; $(tail -n 1 <<<"$torch_facts")"
((standin)) && verdict="$verdict ($standin_note)"
write_report "$verdict"
say "$verdict"
say "report: $report"
((failed == 0))
