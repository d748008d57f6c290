#!/usr/bin/env bash
# End to end on a GPU machine: NCCL all-reduces from PyTorch (torch.distributed, NCCL backend:
# tests/gpu/nccl_allreduce_e2e.py, fp32/bf16/fp16 sums from 1 KiB to 32 MiB, every element
# checked) with CollNet through the plugin to a local pool of two reducers, once with
# NCCL_ALGO=allreduce:CollNetDirect and once with CollNetChain (NCCL 2.24 and later enable
# CollNetDirect only on NVSwitch systems, src/graph/tuning.cc: on a machine without NVSwitch that
# run is reported as not possible here, not as passed). Two NCCL "nodes" share GPU 0
# (their own NCCL_HOSTID each, spec section 5.3) with NCCL's shared-memory and P2P transports off,
# so every all-reduce crosses the plugin. Then checks NCCL_DEBUG=INFO for the lines that prove the
# plugin was loaded and CollNet carried the all-reduces (NCCL 2.28's formats), and the reducers'
# logs for the groups they served.
#   scripts/gpu-e2e.sh [--bundle DIR | --build DIR] [--cpu-standin] [--logs DIR] [ALGO...]
#     ALGO          CollNetDirect, CollNetChain (default: both, one after the other)
#     --bundle DIR  the reducer, plugin and harness of scripts/make-gpu-check-bundle.sh's bundle
#                   (the default when this script is the bundle's own copy); installs nothing
#     --build DIR   a release build tree (default build/release, built here if missing)
#     --cpu-standin the plugin harness instead of PyTorch, same plugin, pool and environment: for
#                   testing this script without a GPU; its result is NOT a GPU result
#     --logs DIR    keep the rank and reducer logs there
# Needs: an NVIDIA GPU and PyTorch with CUDA and NCCL 2.20 or later (tests/gpu/torch_env.py).
# Exit status: 0 passed, 1 failed, 2 no GPU or no PyTorch, 3 PyTorch's NCCL cannot load the plugin.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/gpu_inputs.sh
source scripts/lib/gpu_inputs.sh
gpu_options gpu-e2e "$@"
algos=(CollNetDirect CollNetChain)
((${#args[@]} == 0)) || algos=("${args[@]}")
for algo in "${algos[@]}"; do
  [[ $algo == CollNetDirect || $algo == CollNetChain ]] \
    || { echo "gpu-e2e: unknown algorithm $algo (CollNetDirect, CollNetChain)" >&2; exit 2; }
done
gpu_start gpu-e2e "PyTorch and NCCL"  # sets plugin, harness, tmp, pids, reducers, RS_SECRET_FILE

export NCCL_NET_PLUGIN=$plugin NCCL_COLLNET_ENABLE=1 RS_REDUCERS=$reducers NCCL_RS_IFNAME=lo
export NCCL_SOCKET_IFNAME=lo NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV,TUNING

# What NCCL 2.28 logs at INFO when the plugin carries the all-reduces (spec section 5.2; the
# CollNet connection line differs between the two algorithms).
declare -A connected=([CollNetDirect]="Connected CollNet" [CollNetChain]="Connected Collnet Chains")
declare -A algo_line=([CollNetDirect]="COLLNET_DIRECT" [CollNetChain]="COLLNET_CHAIN")

# True when this machine's GPUs have no active NVLink, so no NVSwitch: NCCL then refuses
# CollNetDirect ("no algorithm/protocol available ... CollNetDirect").
no_nvswitch() { ! nvidia-smi nvlink --status 2>/dev/null | grep -q "GB/s"; }

status=0 ran=0
for algo in "${algos[@]}"; do
  dir="$tmp/$algo"
  echo "=== NCCL_ALGO=allreduce:$algo"
  if ! gpu_ranks "$dir" 85 NCCL_ALGO="allreduce:$algo" -- \
       python3 tests/gpu/nccl_allreduce_e2e.py --port "$(gpu_free_port)"; then
    if ((!standin)) && [[ $algo == CollNetDirect ]] && no_nvswitch &&
       grep -q "no algorithm/protocol available for function AllReduce.*CollNetDirect" "$dir/rank0.log"; then
      echo "NOT POSSIBLE HERE: CollNetDirect: NCCL refused it (no algorithm/protocol available): it"
      echo "  enables CollNetDirect only on NVSwitch systems, and this machine's GPUs have no active"
      echo "  NVLink. Not run, not passed; CollNetChain below is what NCCL uses on such machines."
      continue
    fi
    status=1
  fi
  ran=$((ran + 1))
  grep -v "NCCL INFO" "$dir/rank0.log" || true
  grep -h "^rank 1" "$dir/rank1.log" || true
  if ((standin)); then
    echo "CPU STAND-IN: no NCCL here, so its log checks (plugin loaded, via COLLNET, Algo ${algo_line[$algo]}) are not made"
    continue
  fi
  for want in "NET/Plugin: Loaded net plugin ReductionServer" \
              "NET/Plugin: Loaded collnet plugin ReductionServer" \
              "via COLLNET/ReductionServer" "${connected[$algo]}"; do
    if grep -q "$want" "$dir/rank0.log"; then echo "found in NCCL log: $want"
    else echo "MISSING in NCCL log: $want"; status=1; fi
  done
  grep -E "AllReduce: [0-9]+ Bytes -> Algo ${algo_line[$algo]} " "$dir/rank0.log" | sed 's/.*NCCL INFO //' | awk 'NR <= 3' \
    | grep . || { echo "MISSING in NCCL log: AllReduce -> Algo ${algo_line[$algo]}"; status=1; }
  if grep -E "AllReduce: [0-9]+ Bytes -> Algo" "$dir/rank0.log" | grep -v "Algo ${algo_line[$algo]} " | awk 'NR <= 3' | grep .; then
    echo "NOT CollNet: the all-reduces above took another algorithm"; status=1
  fi
done
((ran > 0)) || { echo "gpu-e2e: no algorithm ran"; status=1; }
gpu_report_reducers gpu-e2e || status=1
((status == 0)) && echo "gpu-e2e: passed" || echo "gpu-e2e: FAILED"
exit $status
