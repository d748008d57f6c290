"""What this machine offers the GPU checks: PyTorch, its CUDA and its NCCL, and the GPU.

Prints `key: value` lines for scripts/gpu-check.sh's report, and says whether the checks can run
here. Used by scripts/gpu-e2e.sh and scripts/ddp-e2e.sh before they start anything.

Exit status: 0 they can; 2 no PyTorch or no CUDA GPU it can use; 3 PyTorch's NCCL is older than
2.20, which cannot load the plugin (it exports NCCL's v8 to v11 tables, and 2.20 is the first
NCCL that looks for v8).

  python3 tests/gpu/torch_env.py
"""
import sys

MIN_NCCL = (2, 20)


def nccl_version(torch):
    v = torch.cuda.nccl.version()
    if isinstance(v, tuple):
        return tuple(v[:3])
    # Older PyTorch returns NCCL's version code: 2.9 and later major*10000 + minor*100 + patch,
    # before that major*1000 + minor*100 + patch.
    return (v // 10000, v // 100 % 100, v % 100) if v >= 20900 else (v // 1000, v // 100 % 10, v % 100)


def loaded_nccl():
    """The libnccl file this process mapped, or how PyTorch carries NCCL if none."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "libnccl" in line}
    return ", ".join(sorted(paths)) or "no libnccl mapped: NCCL is linked into PyTorch"


def main():
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install's OSError
        print(f"torch: cannot import ({e.__class__.__name__}: {e})")
        return 2
    print(f"torch: {torch.__version__} ({torch.__file__})")
    print(f"torch CUDA: {torch.version.cuda}")
    if not torch.cuda.is_available():
        print("GPU: none PyTorch can use (torch.cuda.is_available() is False)")
        return 2
    print(f"GPU: {torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}, "
          f"compute capability {'.'.join(map(str, torch.cuda.get_device_capability(0)))}")
    if not torch.distributed.is_available() or not torch.distributed.is_nccl_available():
        print("NCCL: none (this PyTorch has no NCCL backend)")
        return 2
    version = nccl_version(torch)
    print(f"NCCL: {'.'.join(map(str, version))} ({loaded_nccl()})")
    if version[:2] < MIN_NCCL:
        print(f"NCCL too old: {'.'.join(map(str, version))} cannot load the plugin, which exports "
              f"only NCCL's v8-v11 plugin tables (NCCL {'.'.join(map(str, MIN_NCCL))} or later); "
              "this check needs a PyTorch whose NCCL is 2.20 or later")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
