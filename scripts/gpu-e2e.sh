#!/usr/bin/env bash
# End to end on a GPU machine: a real NCCL all-reduce with CollNet on, through the plugin,
# against a local reducer pool. Two NCCL "nodes" share one GPU (different NCCL_HOSTID values,
# spec section 5.3), so every all-reduce crosses the plugin. Checks every result, then checks
# NCCL_DEBUG=INFO for the lines that prove the plugin was loaded and CollNet carried the
# all-reduce, and the reducers' logs for the reductions they did.
#   scripts/gpu-e2e.sh [CollNetDirect|CollNetChain]     (default: both, one after the other)
# Needs: an NVIDIA GPU with its driver, the CUDA toolkit and NCCL (/usr/local/cuda).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release >/dev/null
bin=build/release
plugin=$(readlink -f "$bin/client/nccl_plugin/libnccl-net-reduction-server.so")
[[ -x $bin/tests/gpu/nccl_allreduce_e2e ]] || { echo "gpu-e2e: CUDA/NCCL not found at build time"; exit 2; }
nvidia-smi -L >/dev/null 2>&1 || { echo "gpu-e2e: no GPU here (nvidia-smi failed)"; exit 2; }

# shellcheck source=scripts/lib/local_reducers.sh
source scripts/lib/local_reducers.sh
with_local_pool "$bin/server/reduction-server" 2 --io-threads 2  # sets tmp, pids, reducers

export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NET_PLUGIN=$plugin NCCL_COLLNET_ENABLE=1 RS_REDUCERS=$reducers NCCL_RS_IFNAME=lo
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV,TUNING
# Keep NCCL's own shared-memory and P2P transports off, so the two "nodes" on one GPU talk
# only through the network plugin, as separate hosts would.
export NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1

status=0
for algo in ${1:-CollNetDirect CollNetChain}; do
  dir="$tmp/$algo"
  mkdir -p "$dir"
  echo "=== NCCL_ALGO=allreduce:$algo"
  for rank in 0 1; do
    NCCL_HOSTID="rs-e2e-node$rank" NCCL_ALGO="allreduce:$algo" timeout 300 \
      "$bin/tests/gpu/nccl_allreduce_e2e" --rank $rank --world 2 --dir "$dir" \
      >"$dir/rank$rank.log" 2>&1 &
    procs[$rank]=$!
  done
  for rank in 0 1; do wait "${procs[$rank]}" || status=1; done
  cat "$dir/rank0.log" | grep -v "NCCL INFO" || true
  for want in "Loaded net plugin ReductionServer" "Loaded collnet plugin ReductionServer" \
              "via COLLNET/ReductionServer" "Connected CollNet"; do
    if grep -q "$want" "$dir/rank0.log"; then echo "found in NCCL log: $want"
    else echo "MISSING in NCCL log: $want"; status=1; fi
  done
  grep -E "AllReduce: .* Algo COLLNET" "$dir/rank0.log" | head -3 || { echo "MISSING: AllReduce -> Algo COLLNET_*"; status=1; }
done
kill "${pids[@]}" 2>/dev/null || true
wait 2>/dev/null || true
grep -h "closed:" "$tmp"/reducer*.log || { echo "MISSING: reducers logged no group"; status=1; }
((status == 0)) && echo "gpu-e2e: passed" || echo "gpu-e2e: FAILED"
exit $status
