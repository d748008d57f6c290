#!/usr/bin/env bash
# PyTorch DDP end to end on a GPU machine: the same small training run twice, once with NCCL's
# all-reduce going through the Reduction Server plugin (CollNet) to a local reducer pool, once
# with NCCL alone; checks that NCCL reports CollNet through the plugin, that the reducers did
# the reductions, and that the trained weights are identical. Two NCCL "nodes" share one GPU
# (their own NCCL_HOSTID each, as scripts/gpu-e2e.sh does), so every all-reduce crosses the
# network path. CollNetChain: NCCL 2.24 and later refuse CollNetDirect on machines without
# NVSwitch (scripts/gpu-e2e.sh runs both where it can), and Chain is the one every machine has.
#   scripts/ddp-e2e.sh [--bundle DIR | --build DIR] [--cpu-standin] [--logs DIR]
#     --bundle DIR  the reducer, plugin and harness of scripts/make-gpu-check-bundle.sh's bundle
#                   (the default when this script is the bundle's own copy); installs nothing
#     --build DIR   a release build tree (default build/release, built here if missing)
#     --cpu-standin the plugin harness instead of the training run with the plugin, same plugin,
#                   pool and environment, and no reference run: for testing this script without
#                   a GPU; its result is NOT a GPU result
#     --logs DIR    keep the rank and reducer logs there
# Needs: an NVIDIA GPU and PyTorch with CUDA and NCCL 2.20 or later (tests/gpu/torch_env.py).
# Exit status: 0 passed, 1 failed, 2 no GPU or no PyTorch, 3 PyTorch's NCCL cannot load the plugin.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/gpu_inputs.sh
source scripts/lib/gpu_inputs.sh
gpu_options ddp-e2e "$@"
((${#args[@]} == 0)) || { echo "ddp-e2e: unexpected argument ${args[0]}" >&2; exit 2; }
gpu_start ddp-e2e "the DDP run"  # sets plugin, harness, tmp, pids, reducers, RS_SECRET_FILE

# train <name> [VAR=value...]: the two ranks of tests/gpu/ddp_train.py.
train() {
  local name=$1
  shift
  echo "=== $name run"
  gpu_ranks "$tmp/$name" 75 NCCL_SOCKET_IFNAME=lo NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,TUNING "$@" -- \
    python3 tests/gpu/ddp_train.py --port "$(gpu_free_port)" --out "$tmp/$name/weights.pt" \
    || { echo "ddp-e2e: the $name run failed"; echo "ddp-e2e: FAILED"; exit 1; }
  grep -v "NCCL INFO" "$tmp/$name/rank0.log" || true
}

train plugin NCCL_NET_PLUGIN="$plugin" NCCL_COLLNET_ENABLE=1 RS_REDUCERS="$reducers" \
  NCCL_RS_IFNAME=lo NCCL_ALGO=allreduce:CollNetChain
status=0
if ((standin)); then
  echo "CPU STAND-IN: no reference run (NCCL alone) and no weights to compare; no NCCL log checks"
else
  train reference
  for want in "NET/Plugin: Loaded collnet plugin ReductionServer" "via COLLNET/ReductionServer" \
              "Connected Collnet Chains"; do
    if grep -q "$want" "$tmp/plugin/rank0.log"; then echo "found in NCCL log: $want"
    else echo "MISSING in NCCL log: $want"; status=1; fi
  done
  grep -q "ReductionServer" "$tmp/reference/rank0.log" &&
    { echo "the reference run loaded the plugin"; status=1; }
  python3 - "$tmp/plugin/weights.pt" "$tmp/reference/weights.pt" <<'PY' || status=1
import sys, torch
a, b = (torch.load(p) for p in sys.argv[1:3])
worst = max((a["weights"][k] - b["weights"][k]).abs().max().item() for k in a["weights"])
same = all(torch.equal(a["weights"][k], b["weights"][k]) for k in a["weights"])
print(f"weights through the reducers vs NCCL alone: max |difference| {worst:g}, "
      f"{'identical' if same else 'DIFFERENT'}; final loss {a['losses'][-1]:.6f} vs {b['losses'][-1]:.6f}")
sys.exit(0 if same else 1)
PY
fi
gpu_report_reducers ddp-e2e || status=1
((status == 0)) && echo "ddp-e2e: passed" || echo "ddp-e2e: FAILED"
exit $status
