#!/usr/bin/env bash
# PyTorch DDP end to end on a GPU machine: the same small training run twice, once with NCCL's
# all-reduce going through the Reduction Server plugin (CollNet) to a local reducer pool, once
# with NCCL alone; checks that NCCL reports CollNet through the plugin, that the reducers did
# the reductions, and that the trained weights are identical. Two NCCL "nodes" share one GPU
# (their own NCCL_HOSTID each, as scripts/gpu-e2e.sh does), so every all-reduce crosses the
# network path.
#   scripts/ddp-e2e.sh [--build DIR]     DIR: a release build tree (default build/release, built
#                                        here if missing)
# Needs: an NVIDIA GPU, PyTorch with CUDA (python3 -c 'import torch').
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release
[[ "${1:-}" == "--build" ]] && bin=$2
if [[ ! -x $bin/server/reduction-server ]]; then
  scripts/install-deps.sh
  scripts/build.sh release >/dev/null
fi
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
  { echo "ddp-e2e: needs PyTorch with a CUDA GPU"; exit 2; }
plugin=$(readlink -f "$bin/client/nccl_plugin/libnccl-net-reduction-server.so")

# shellcheck source=scripts/lib/local_reducers.sh
source scripts/lib/local_reducers.sh
with_local_pool "$bin/server/reduction-server" 2 --io-threads 2  # sets tmp, pids, reducers

# train <name> <port> [VAR=value...]: two ranks, each its own NCCL node on GPU 0.
train() {
  local name=$1 port=$2 rank procs=() status=0
  shift 2
  mkdir -p "$tmp/$name"
  for rank in 0 1; do
    env NCCL_HOSTID="rs-ddp-node$rank" NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 \
      NCCL_SOCKET_IFNAME=lo NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,TUNING "$@" \
      timeout 600 python3 tests/gpu/ddp_train.py --rank $rank --world 2 --port "$port" \
      --out "$tmp/$name/weights.pt" >"$tmp/$name/rank$rank.log" 2>&1 &
    procs+=($!)
  done
  for p in "${procs[@]}"; do wait "$p" || status=1; done
  grep -v "NCCL INFO" "$tmp/$name/rank0.log" || true
  if ((status != 0)); then echo "ddp-e2e: the $name run failed"; tail -n 30 "$tmp/$name"/rank*.log; exit 1; fi
}

train plugin 29517 NCCL_NET_PLUGIN="$plugin" NCCL_COLLNET_ENABLE=1 RS_REDUCERS="$reducers" \
  NCCL_RS_IFNAME=lo NCCL_ALGO=allreduce:CollNetDirect
train reference 29518

status=0
for want in "Loaded collnet plugin ReductionServer" "via COLLNET/ReductionServer"; do
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
kill "${pids[@]}" 2>/dev/null || true
wait 2>/dev/null || true
grep -h "closed:" "$tmp"/reducer*.log || { echo "MISSING: reducers logged no group"; status=1; }
((status == 0)) && echo "ddp-e2e: passed" || echo "ddp-e2e: FAILED"
exit $status
