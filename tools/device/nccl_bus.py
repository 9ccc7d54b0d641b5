#!/usr/bin/env python3
"""NCCL's bus bandwidth at the message sizes stepcast's strategies send (model/parallel.hpp), under torchrun:

  all_reduce      25 MiB       DDP's gradient bucket
  all_gather      1.61 GiB     FSDP's one Gemma-4 26B-A4B layer (48.2 GiB bf16 / 30 layers), the full buffer
  reduce_scatter  25 MiB       FSDP's gradient bucket
  all_to_all      176 MiB      EP's dispatch of 4,096 tokens x top-8 x hidden 2,816 x bf16, one rank's buffer
  plus a size sweep of all_reduce 1 MiB .. 1 GiB for the alpha-beta fit.

Times are medians of REPS after 3 warm-ups; bus GB/s = bytes x factor / t (nccl-tests' PERFORMANCE.md:
all_reduce 2(n-1)/n, the others (n-1)/n). Rank 0 prints one JSON object per line and appends them to OUT.
  torchrun --nproc-per-node N tools/device/nccl_bus.py --out F.jsonl    (--dry-run: gloo on the CPU, small sizes)
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist

MIB = 1024 ** 2


def timed(fn, device, reps):
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        dist.barrier()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def spawn_dry_run(argv, ranks=2):
    """Without torchrun (Debian's 1.13 torchrun fails on Python 3.11): the ranks as plain processes."""
    import subprocess
    import sys
    env = dict(os.environ, WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    procs = [subprocess.Popen([sys.executable] + argv, env=dict(env, RANK=str(r), LOCAL_RANK=str(r)))
             for r in range(ranks)]
    return max(p.wait() for p in procs)


def main():
    import sys
    if "--dry-run" in sys.argv and "RANK" not in os.environ:
        sys.exit(spawn_dry_run(sys.argv))
    ap = argparse.ArgumentParser()
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--out", default="/tmp/out/nccl_bus.jsonl")
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    cuda = torch.cuda.is_available() and not args.dry_run
    dist.init_process_group("nccl" if cuda else "gloo")
    n, rank = dist.get_world_size(), dist.get_rank()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    scale = 1 if cuda else 64  # the dry run sends 1/64 of every buffer
    cases = [("all_reduce", 25 * MIB), ("all_gather", int(48.2 * 1024 * MIB / 30)), ("reduce_scatter", 25 * MIB),
             ("all_to_all", 4096 * 8 * 2816 * 2)] + [("all_reduce", s * MIB) for s in (1, 4, 16, 64, 256, 1024)]
    out = open(args.out, "a") if rank == 0 else None
    for op, size in cases:
        size = size // scale // (2 * n) * (2 * n)
        elems = size // 2
        dtype = torch.bfloat16 if cuda else torch.float32
        if not cuda:
            elems = size // 4
        x = torch.ones(elems, dtype=dtype, device=device)
        if op == "all_reduce":
            fn, factor = (lambda: dist.all_reduce(x)), 2 * (n - 1) / n
        elif op == "all_gather":
            shard = x.narrow(0, 0, elems // n).clone()
            fn, factor = (lambda: dist.all_gather_into_tensor(x, shard)), (n - 1) / n
        elif op == "reduce_scatter":
            shard = x.narrow(0, 0, elems // n).clone()
            fn, factor = (lambda: dist.reduce_scatter_tensor(shard, x)), (n - 1) / n
        else:
            y = torch.empty_like(x)
            fn, factor = (lambda: dist.all_to_all_single(y, x)), (n - 1) / n
        try:
            t = timed(fn, device, args.reps)
        except RuntimeError as e:  # gloo lacks some collectives in the dry run
            t = None
            err = str(e).splitlines()[0]
        if rank == 0:
            rec = {"probe": "nccl_bus", "op": op, "ranks": n, "bytes": x.numel() * x.element_size(),
                   "backend": dist.get_backend(), "seconds": t,
                   "bus_gbps": x.numel() * x.element_size() * factor / t / 1e9 if t else None,
                   "gpu": torch.cuda.get_device_name(device) if cuda else "cpu"}
            if t is None:
                rec["error"] = err
            print(json.dumps(rec), flush=True)
            out.write(json.dumps(rec) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
