"""One rank of a small, deterministic PyTorch DDP training run, for scripts/ddp-e2e.sh.

Trains an MLP on synthetic data (each rank its own batches) for a fixed number of SGD steps and,
on rank 0, saves the final weights and the per-step losses. scripts/ddp-e2e.sh runs it twice, with
NCCL's all-reduce going through the Reduction Server plugin and without it; the weights must match.
With two ranks every gradient element is one fp32 sum a + b, which the reducer and NCCL's ring
compute identically, so the match is exact (the runs are made deterministic on the GPU too).

  python3 ddp_train.py --rank 0 --world 2 --port 29500 --out /tmp/run/weights.pt
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--port", type=int, required=True, help="rendezvous port on 127.0.0.1")
    p.add_argument("--out", required=True, help="rank 0 writes the weights here (torch.save)")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--device", type=int, default=0)
    return p.parse_args()


def main():
    a = parse_args()
    # Bitwise repeatable GPU math: without these, cuBLAS may pick different reduction orders
    # between the two runs, and a difference would not be the all-reduce's.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False

    device = torch.device("cuda", a.device)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{a.port}", rank=a.rank,
                            world_size=a.world)
    torch.manual_seed(1234)  # the same initial weights on every rank
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10)).to(device)
    # Buckets of 1 MiB: several all-reduces per step, as a real model's backward pass makes.
    ddp = DistributedDataParallel(model, device_ids=[a.device], bucket_cap_mb=1)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    data = torch.Generator(device="cpu").manual_seed(100 + a.rank)  # each rank its own data
    losses = []
    for _ in range(a.steps):
        x = torch.randn(64, 256, generator=data).to(device)
        y = torch.randint(0, 10, (64,), generator=data).to(device)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x), y)
        loss.backward()  # DDP all-reduces the gradients here, through NCCL
        optimizer.step()
        losses.append(loss.item())
    # DDP keeps the replicas equal; check it across the ranks with one more all-reduce.
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    spread = flat.clone()
    dist.all_reduce(spread, op=dist.ReduceOp.MAX)
    low = flat.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    if not torch.equal(spread, low):
        raise SystemExit(f"rank {a.rank}: the replicas' weights differ after training")
    if a.rank == 0:
        state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        torch.save({"weights": state, "losses": losses}, a.out)
        print(f"rank 0: {a.steps} steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}, "
              f"{sum(v.numel() for v in state.values())} parameters saved to {a.out}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
