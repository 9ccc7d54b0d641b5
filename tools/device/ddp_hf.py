#!/usr/bin/env python3
"""The transformers + peft stack under torchrun with torch DDP, for comparison with `stepcast plan --gpus N`
(docs/planner.md, "Several GPUs"): Gemma-4 26B-A4B with random bf16 weights (tools/device/hf_fidelity.py's
build: sdpa, LoRA r16 on q,k,v,o,gate,up,down, reentrant checkpointing) on every rank, wrapped in
DistributedDataParallel (bucket_cap_mb 25, static_graph for the reentrant checkpointing), accumulation under
no_sync, clip 1.0 + AdamW at each window end.

  torchrun --nproc-per-node N tools/device/ddp_hf.py CONFIG.json CORPUS.csv OUT.jsonl \
      --sampler distributed|length-grouped --micro-batch 2 --accumulation A --max-length 16384 --samples 512 --seed 1

distributed: torch's DistributedSampler(shuffle=True, seed, drop_last=False) then pad-to-longest in shard order.
length-grouped: the same permutation in global batches of N x R x A samples, sorted by length, cut into
micro-batches of R neighbours and dealt largest-first to the rank with the fewest processed tokens that has room
(stepcast's planner deals by predicted seconds; tokens are the proxy here). One record per micro-batch per rank
(model, gpu, tier, rows, width, step_s, rank, world_size, and a `ddp` object with the window and its wait).
"""
import argparse
import csv
import json
import os
import time

import torch
import torch.distributed as dist

from hf_fidelity import build  # noqa: E402  (tools/device is on sys.path as the script's folder)


def lengths_of(path, samples, max_length):
    with open(path) as f:
        rows = [min(int(r["length"]), max_length) for r in csv.DictReader(f)]
    return rows[:samples]


def distributed_batches(lengths, n, rank, r, seed):
    g = torch.Generator()
    g.manual_seed(seed)
    order = torch.randperm(len(lengths), generator=g).tolist()
    order += order[: (-len(order)) % n]
    shard = [lengths[i] for i in order[rank::n]]
    return [shard[i:i + r] for i in range(0, len(shard), r)]


def grouped_batches(lengths, n, rank, r, accumulation, seed):
    g = torch.Generator()
    g.manual_seed(seed)
    order = torch.randperm(len(lengths), generator=g).tolist()
    order += order[: (-len(order)) % n]
    mine, size = [], n * r * accumulation
    for b in range(0, len(order), size):
        glob = sorted((lengths[i] for i in order[b:b + size]), reverse=True)
        mbs = sorted((glob[i:i + r] for i in range(0, len(glob), r)), key=lambda m: -len(m) * max(m))
        room, load, taken = -(-len(mbs) // n), [0] * n, [[] for _ in range(n)]
        for m in mbs:
            k = min((q for q in range(n) if len(taken[q]) < room), key=lambda q: load[q])
            load[k] += len(m) * max(m)
            taken[k].append(m)
        mine += taken[rank]
    return mine


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("corpus")
    ap.add_argument("out")
    ap.add_argument("--sampler", choices=["distributed", "length-grouped"], default="distributed")
    ap.add_argument("--micro-batch", type=int, default=2)
    ap.add_argument("--accumulation", type=int, default=4)
    ap.add_argument("--max-length", type=int, default=16384)
    ap.add_argument("--samples", type=int, default=512)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--budget-s", type=float, default=150)
    a = ap.parse_args()
    dist.init_process_group("nccl")
    n, rank = dist.get_world_size(), dist.get_rank()
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    lengths = lengths_of(a.corpus, a.samples, a.max_length)
    batches = (distributed_batches(lengths, n, rank, a.micro_batch, a.seed) if a.sampler == "distributed"
               else grouped_batches(lengths, n, rank, a.micro_batch, a.accumulation, a.seed))
    model, _ = build(a.config)
    vocab = model.get_base_model().config.vocab_size
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local], bucket_cap_mb=25, static_graph=True)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-4)
    out = open(a.out, "a")
    gpu = torch.cuda.get_device_name(local)
    start = time.perf_counter()
    windows = -(-len(batches) // a.accumulation)
    for w in range(windows):
        stop = torch.tensor([time.perf_counter() - start > a.budget_s], device="cuda")
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item():
            break
        window = batches[w * a.accumulation:(w + 1) * a.accumulation]
        for i, rows in enumerate(window):
            width = max(rows)
            ids = torch.randint(1, vocab, (len(rows), width), device="cuda")
            mask = torch.zeros(len(rows), width, dtype=torch.long, device="cuda")
            for k, m in enumerate(rows):
                mask[k, :m] = 1
            labels = (ids * mask).masked_fill(mask == 0, -100)
            last = i + 1 == len(window)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            if last:
                loss = ddp(input_ids=ids * mask, attention_mask=mask, labels=labels).loss
                (loss / a.accumulation).backward()  # DDP's all-reduce runs here
            else:
                with ddp.no_sync():
                    loss = ddp(input_ids=ids * mask, attention_mask=mask, labels=labels).loss
                    (loss / a.accumulation).backward()
            torch.cuda.synchronize()
            step_s = time.perf_counter() - t0
            rec = {"model": "gemma-4-26b-a4b", "gpu": gpu, "tier": "hf-peft/ddp", "rows": rows, "width": width,
                   "step_s": step_s, "peak_gib": torch.cuda.max_memory_allocated(local) / 2 ** 30,
                   "rank": rank, "world_size": n,
                   "ddp": {"sampler": a.sampler, "window": w, "index": i, "all_reduce_in_step": last}}
            out.write(json.dumps(rec) + "\n")
            out.flush()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if rank == 0:
            print(f"window {w + 1}/{windows} optimizer {time.perf_counter() - t0:.3f} s "
                  f"elapsed {time.perf_counter() - start:.1f} s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
