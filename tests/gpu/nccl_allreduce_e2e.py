"""One NCCL "node" of a checked all-reduce through torch.distributed (NCCL backend), for
scripts/gpu-e2e.sh.

With NCCL_NET_PLUGIN naming the Reduction Server plugin, NCCL_COLLNET_ENABLE=1 and
NCCL_ALGO=allreduce:CollNetDirect (or CollNetChain), every all-reduce crosses the plugin's CollNet
to the reducers. Several of these processes can share one GPU as separate NCCL nodes when each
has its own NCCL_HOSTID (spec section 5.3). Inputs are small integers, so fp32, bf16 and fp16
sums are exact: every element of every result is compared with the expected sum.

  python3 nccl_allreduce_e2e.py --rank 0 --world 2 --port 29500 [--device 0] [--iters 3]
"""
import argparse
import datetime
import time

import torch
import torch.distributed as dist

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# 1 KiB to 32 MiB in steps of 8, and an odd count (not a multiple of any chunk or piece size).
SIZES = [1 << 10, 8 << 10, 64 << 10, 512 << 10, 4 << 20, 32 << 20]
ODD_COUNT = 1_000_003


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--port", type=int, required=True, help="rendezvous port on 127.0.0.1")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--iters", type=int, default=3, help="all-reduces per size and type, each checked")
    p.add_argument("--timeout", type=int, default=120, help="seconds before a stuck collective fails")
    return p.parse_args()


def contribution(rank, count, dtype, device):
    """Rank `rank`'s input: small integers (at most 10), exact in every type here."""
    i = torch.arange(count, device=device, dtype=torch.int64)
    return ((rank * 5 + i * 3) % 11).to(dtype)


def main():
    a = parse_args()
    device = torch.device("cuda", a.device)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{a.port}", rank=a.rank,
                            world_size=a.world, timeout=datetime.timedelta(seconds=a.timeout))
    # The first collective creates NCCL's communicator (and connects CollNet): outside the times.
    warm = torch.ones(1, device=device)
    dist.all_reduce(warm, op=dist.ReduceOp.SUM)
    if warm.item() != a.world:
        raise SystemExit(f"rank {a.rank}: the first all-reduce gave {warm.item()}, not {a.world}")
    if a.rank == 0:
        nccl = ".".join(map(str, torch.cuda.nccl.version()))
        print(f"torch {torch.__version__}, NCCL {nccl}, {torch.cuda.get_device_name(device)}; "
              f"{a.world} ranks, {a.iters} all-reduces per size and type, every element checked")
        print(f"{'bytes':>12} {'type':>5} {'elements':>10} {'us':>10} {'algbw GB/s':>11} {'#wrong':>7}")
    wrong = checked = calls = 0
    for name, dtype in DTYPES.items():
        esize = torch.tensor([], dtype=dtype).element_size()
        for count in [size // esize for size in SIZES] + [ODD_COUNT]:
            mine = contribution(a.rank, count, dtype, device)
            want = sum(contribution(r, count, torch.float32, device) for r in range(a.world)).to(dtype)
            bad = 0
            seconds = 0.0
            for _ in range(a.iters):
                buf = mine.clone()
                torch.cuda.synchronize()
                start = time.perf_counter()
                dist.all_reduce(buf, op=dist.ReduceOp.SUM)
                torch.cuda.synchronize()
                seconds += time.perf_counter() - start
                bad += int((buf != want).sum().item())
                checked += count
                calls += 1
            wrong += bad
            if a.rank == 0:
                us = seconds / a.iters * 1e6
                nbytes = count * esize
                print(f"{nbytes:>12} {name:>5} {count:>10} {us:>10.1f} {nbytes / us / 1e3:>11.3f} {bad:>7}",
                      flush=True)
    dist.destroy_process_group()
    verdict = "all results correct" if wrong == 0 else "WRONG RESULTS"
    print(f"rank {a.rank}: {verdict}: {calls} all-reduces, {checked} elements checked, {wrong} wrong")
    raise SystemExit(0 if wrong == 0 else 1)


if __name__ == "__main__":
    main()
