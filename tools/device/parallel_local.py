#!/usr/bin/env python3
"""The collective-free parts of several GPUs, on one GPU (docs/planner.md, "Several GPUs"; model/parallel.hpp).

  1. gather: FSDP's per-layer all-gather as local copies: N shards of one Gemma-4 26B-A4B layer's bf16 weights
     (48.2 GiB / 30 layers) copied into one full buffer, N = 1, 2, 4, 8; seconds and GB/s (bytes written).
  2. overlap: a bf16 GEMM loop alone, then beside a second stream that copies 1 GiB buffers back and forth the
     whole time; the slowdown of the GEMMs over the copy seconds they hid is model::kDefaultOverlapSlowdown's
     measurement (its default is 0.10 until this runs).

One JSON object per line on stdout and into OUT (default /tmp/out/parallel_local.jsonl).
--dry-run: the same flow on the CPU with small sizes (checks the script, measures nothing about a GPU).
"""
import argparse
import json
import os
import statistics
import time

import torch

GIB = 1024 ** 3


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, device, reps):
    times = []
    for _ in range(reps):
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def gather(device, layer_bytes, reps, emit):
    elements = layer_bytes // 2
    full = torch.empty(elements, dtype=torch.bfloat16, device=device)
    for shards in (1, 2, 4, 8):
        per = elements // shards
        parts = [torch.randn(per, device=device).to(torch.bfloat16) for _ in range(shards)]

        def copy_in():
            for i, p in enumerate(parts):
                full.narrow(0, i * per, per).copy_(p)

        copy_in()
        t = timed(copy_in, device, reps)
        emit({"probe": "gather_local", "shards": shards, "bytes": per * shards * 2, "seconds": t,
              "gbps_written": per * shards * 2 / t / 1e9})


def overlap(device, n, copy_bytes, seconds, emit):
    a = torch.randn(n, n, device=device).to(torch.bfloat16)
    b = torch.randn(n, n, device=device).to(torch.bfloat16)
    src = torch.empty(copy_bytes // 2, dtype=torch.bfloat16, device=device)
    dst = torch.empty_like(src)
    a @ b
    sync(device)
    t0 = time.perf_counter()
    reps = 0
    while time.perf_counter() - t0 < seconds / 4:
        a @ b
        reps += 1
        sync(device)
    def gemms():  # results dropped at once: a list of them would hold reps x 128 MiB (an OOM on the H200)
        for _ in range(reps):
            a @ b

    alone = timed(gemms, device, 3)
    copy_alone = timed(lambda: dst.copy_(src), device, 5)
    if device.type != "cuda":
        emit({"probe": "overlap", "gemm_s": alone, "note": "dry run: no second stream on the CPU"})
        return
    stream = torch.cuda.Stream(device)
    copies = 0

    def together():
        nonlocal copies
        with torch.cuda.stream(stream):
            for _ in range(max(1, int(alone / copy_alone) + 1)):
                dst.copy_(src)
                copies += 1
        for _ in range(reps):
            a @ b
        torch.cuda.current_stream(device).synchronize()

    copies = 0
    with_copies = timed(together, device, 3)
    stream.synchronize()
    hidden = min(with_copies, copies / 3 * copy_alone)
    emit({"probe": "overlap", "gemm_s": alone, "gemm_with_copies_s": with_copies, "copy_s_each": copy_alone,
          "copies_per_run": copies / 3, "hidden_copy_s": hidden,
          "slowdown_per_hidden_s": (with_copies - alone) / hidden if hidden > 0 else None})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "/tmp/out"), "parallel_local.jsonl"))
    args = ap.parse_args()
    device = torch.device("cpu" if args.dry_run or not torch.cuda.is_available() else "cuda")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    out = open(args.out, "a")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"

    def emit(rec):
        rec = dict(rec, gpu=name, torch=torch.__version__)
        print(json.dumps(rec), flush=True)
        out.write(json.dumps(rec) + "\n")

    if args.dry_run:
        gather(device, 8 << 20, 3, emit)
        overlap(device, 256, 8 << 20, 0.2, emit)
    else:
        gather(device, int(48.2 * GIB / 30), 10, emit)
        overlap(device, 8192, GIB, 8.0, emit)


if __name__ == "__main__":
    main()
