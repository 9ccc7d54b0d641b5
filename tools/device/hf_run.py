#!/usr/bin/env python3
"""Host floor, first-seen shapes and recorded runs on the real stack (transformers + peft, the stack of tools/device/hf_fidelity.py): what a real run
pays that the probe grid does not, written as measurement records (calibrate/run_records.hpp for runs).

  hf_run.py probes CONFIG.json OUT.jsonl SHAPE ...
      In one fresh process, for every SHAPE (RxW[:PAD], each new to the process): the first step timed by host
      wall clock (synchronised), then HF_REPS repeated steps; a record with step_s (median repeated),
      first_step_s, first_seen, first_in_process (the very first shape pays the process start too), host_wall_s
      (host time to issue forward + backward before synchronising: the host side of the step) and, at the
      shapes named in HF_LAUNCH_SHAPES, launches_per_step (CUDA kernels of one profiled step).
      Then HF_OPT_REPS optimizer steps (clip 1.0, AdamW on the LoRA parameters, zero_grad) as probe "optimizer".

  hf_run.py run CONFIG.json OUT.jsonl --policy P --samples N --seed S [--corpus-median T --corpus-sigma X]
                [--micro-batch 2 --accumulation 4 --max-length 4096 --pad-to-multiple-of 1]
      One real short run in this fresh process: a seeded corpus (log-normal lengths), batched by P
      (pad-to-longest: corpus order, padded to the micro-batch's longest row; bucket-to-pair: sorted by length,
      neighbours paired, micro-batches shuffled with S), a collator that pads to the longest row (rounded up to
      the multiple) with labels -100 on pads, forward, loss / accumulation, backward, and at each window end
      clip + AdamW + zero_grad. No warm-up. One record per micro-batch with the `run` object.
"""
import json
import math
import os
import random
import statistics
import sys
import time

import peft
import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_fidelity import build, padded_rows  # noqa: E402

REPS = int(os.environ.get("HF_REPS", "3"))
OPT_REPS = int(os.environ.get("HF_OPT_REPS", "5"))
LAUNCH_SHAPES = set(os.environ.get("HF_LAUNCH_SHAPES", "1x128,2x2048").split(","))
PROCESS_T0 = time.perf_counter()
JIT_CACHE = os.path.expanduser(os.environ.get("CUDA_CACHE_PATH", "~/.nv/ComputeCache"))


def jit_cache_files():
    """Files in the driver's PTX JIT cache: a micro-batch that adds some compiled kernels on this machine."""
    return sum(len(files) for _, _, files in os.walk(JIT_CACHE))


def base_record(info, rows, width, probe):
    return {"model": "gemma-4-26b-a4b", "gpu": torch.cuda.get_device_name(0),
            "tier": "hf-peft/sdpa-" + str(info["experts_implementation"]),
            "rows": rows, "width": width, "kept_tokens": sum(max(0, n - 1) for n in rows), "probe": probe,
            "source": "tools/device/hf_run.py " + " ".join(sys.argv[1:]),
            "torch_version": torch.__version__, "transformers_version": transformers.__version__,
            "peft_version": peft.__version__, "lora_modules": info["lora_modules"],
            "experts_implementation": info["experts_implementation"],
            "attn_implementation": info["attn_implementation"]}


def collate(rows_tokens, width, vocab, generator):
    """A data collator's work on the host: token ids padded right to `width` (pad id 0), mask, labels."""
    ids = torch.zeros(len(rows_tokens), width, dtype=torch.long)
    mask = torch.zeros(len(rows_tokens), width, dtype=torch.long)
    for r, n in enumerate(rows_tokens):
        ids[r, :n] = torch.randint(1, vocab, (n,), generator=generator)
        mask[r, :n] = 1
    labels = ids.masked_fill(mask == 0, -100)
    return ids.to("cuda", non_blocking=False), mask.to("cuda"), labels.to("cuda")


def forward_backward(model, batch, scale=1.0):
    ids, mask, labels = batch
    loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    (loss * scale).backward()
    return loss


def count_launches(model, batch):
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        forward_backward(model, batch)
        torch.cuda.synchronize()
    model.zero_grad(set_to_none=True)
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def timed_step(model, batch):
    """(wall_s, host_issue_s): host issue time is until backward() returns, before synchronising."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    loss = forward_backward(model, batch)
    t_issue = time.perf_counter()
    loss_value = loss.item()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    model.zero_grad(set_to_none=True)
    return t1 - t0, t_issue - t0, loss_value


def probes(config_path, out_path, specs):
    model, info = build(config_path)
    vocab = model.get_base_model().config.vocab_size
    gen = torch.Generator().manual_seed(1234)
    first_in_process = True
    for spec in specs:
        shape, _, pad = spec.partition(":")
        r, w = (int(x) for x in shape.split("x"))
        rows = padded_rows(r, w, float(pad) if pad else 0.0)
        record = base_record(info, rows, w, "first-seen")
        record.update(repetitions=REPS, warmup=0)
        try:
            batch = collate(rows, w, vocab, gen)
            jit_before = jit_cache_files()
            first_s, first_issue_s, _ = timed_step(model, batch)
            record["jit_cache_files_added"] = jit_cache_files() - jit_before  # > 0: the first step JIT-compiled
            torch.cuda.reset_peak_memory_stats()
            walls, issues = [], []
            for _ in range(REPS):
                wall, issue, record["loss"] = timed_step(model, batch)
                walls.append(wall)
                issues.append(issue)
            record.update(step_s=statistics.median(walls), times_s=walls, host_wall_s=statistics.median(issues),
                          host_times_s=issues, first_step_s=first_s, first_host_wall_s=first_issue_s,
                          first_seen=True, first_in_process=first_in_process,
                          peak_gib=torch.cuda.max_memory_allocated() / 2**30)
            if shape in LAUNCH_SHAPES:
                record["launches_per_step"] = count_launches(model, batch)
        except torch.OutOfMemoryError:
            record["oom"] = True
            model.zero_grad(set_to_none=True)
            torch.cuda.empty_cache()
        first_in_process = False
        append(out_path, record)
        print(spec, "first %.3f step %s host %s launches %s" % (record.get("first_step_s", -1), record.get("step_s"),
                                                               record.get("host_wall_s"),
                                                               record.get("launches_per_step")), flush=True)
    optimizer_probe(model, info, out_path, vocab, gen)


def make_optimizer(model):
    params = [p for p in model.parameters() if p.requires_grad]
    return params, torch.optim.AdamW(params, lr=1e-4)


def optimizer_step(params, optimizer):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def optimizer_probe(model, info, out_path, vocab, gen):
    """Optimizer steps after a small micro-batch: the first one allocates AdamW's state, kept separately."""
    params, optimizer = make_optimizer(model)
    rows, w = [256], 256
    batch = collate(rows, w, vocab, gen)
    times, step_walls = [], []
    for _ in range(OPT_REPS + 1):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        forward_backward(model, batch).item()
        torch.cuda.synchronize()
        step_walls.append(time.perf_counter() - t0)
        times.append(optimizer_step(params, optimizer))
    record = base_record(info, rows, w, "optimizer")
    record.update(step_s=statistics.median(step_walls[1:]), optimizer_s=statistics.median(times[1:]),
                  optimizer_times_s=times, first_optimizer_s=times[0],
                  trainable_params=sum(p.numel() for p in params))
    append(out_path, record)
    print("optimizer", times, flush=True)


def append(path, record):
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def corpus(samples, seed, median, sigma, max_length, min_length=16):
    rng = random.Random(seed)
    return [max(min_length, min(max_length, int(round(math.exp(rng.gauss(math.log(median), sigma))))))
            for _ in range(samples)]


def batches(lengths, policy, micro_batch, seed):
    """Lists of sample ids per micro-batch, in run order (planner/batching.hpp's policies of the same names)."""
    ids = list(range(len(lengths)))
    if policy == "pad-to-longest":
        return [ids[i:i + micro_batch] for i in range(0, len(ids), micro_batch)]
    if policy == "bucket-to-pair":
        ordered = sorted(ids, key=lambda i: lengths[i])  # stable
        out = [ordered[i:i + micro_batch] for i in range(0, len(ordered), micro_batch)]
        random.Random(seed).shuffle(out)
        return out
    raise SystemExit("unknown policy " + policy)


def padded_width(longest, multiple):
    return (longest + multiple - 1) // multiple * multiple


def run(config_path, out_path, args):
    opts = {"--policy": "pad-to-longest", "--samples": "64", "--seed": "7", "--corpus-median": "700",
            "--corpus-sigma": "0.8", "--micro-batch": "2", "--accumulation": "4", "--max-length": "4096",
            "--pad-to-multiple-of": "1", "--id": ""}
    for k, v in zip(args[::2], args[1::2]):
        if k not in opts:
            raise SystemExit("unknown option " + k)
        opts[k] = v
    mb, accum, max_len = int(opts["--micro-batch"]), int(opts["--accumulation"]), int(opts["--max-length"])
    multiple, seed = int(opts["--pad-to-multiple-of"]), int(opts["--seed"])
    lengths = corpus(int(opts["--samples"]), seed, float(opts["--corpus-median"]), float(opts["--corpus-sigma"]),
                     max_len)
    plan = batches(lengths, opts["--policy"], mb, seed)
    run_id = opts["--id"] or "hf-s%d-m%s/%s/x%d" % (seed, opts["--corpus-median"], opts["--policy"], multiple)
    model, info = build(config_path)
    vocab = model.get_base_model().config.vocab_size
    params, optimizer = make_optimizer(model)
    gen = torch.Generator().manual_seed(seed)
    seen = set()
    windows = (len(plan) + accum - 1) // accum
    torch.cuda.synchronize()
    jit_before = jit_files = jit_cache_files()
    t_run = time.perf_counter()
    for index, sample_ids in enumerate(plan):
        rows = [lengths[i] for i in sample_ids]
        width = padded_width(max(rows), multiple)
        t0 = time.perf_counter()
        batch = collate(rows, width, vocab, gen)
        loss = forward_backward(model, batch, scale=1.0 / accum)
        loss_value = loss.item()
        torch.cuda.synchronize()
        step_s = time.perf_counter() - t0
        window = index // accum
        closes = (index + 1) % accum == 0 or index + 1 == len(plan)
        fields = {"id": run_id, "policy": opts["--policy"], "micro_batch": mb, "accumulation": accum,
                  "max_length": max_len, "pad_to_multiple_of": multiple, "seed": seed, "index": index,
                  "optimizer_step": window, "first_seen": (len(rows), width) not in seen}
        seen.add((len(rows), width))
        if closes:
            fields["optimizer_s"] = optimizer_step(params, optimizer)
        fields["elapsed_s"] = time.perf_counter() - t_run
        record = base_record(info, rows, width, "run")
        now_files = jit_cache_files()
        record["jit_cache_files_added"] = now_files - jit_files  # > 0: this micro-batch JIT-compiled kernels
        jit_files = now_files
        if index == 0:
            record["jit_cache_files_before_run"] = jit_before
            fields["corpus_lengths"] = lengths
            record["process_startup_s"] = t_run - PROCESS_T0  # imports + model build + LoRA wrap
        record.update(step_s=step_s, loss=loss_value, run=fields)
        append(out_path, record)
        print("%s %d/%d %sx%d %.3f s%s elapsed %.2f s" % (run_id, index + 1, len(plan), len(rows), width, step_s,
                                                         " +opt %.3f" % fields["optimizer_s"] if closes else "",
                                                         fields["elapsed_s"]), flush=True)
    print("run %s: %d micro-batches, %d windows, %.2f s" % (run_id, len(plan), windows,
                                                             time.perf_counter() - t_run), flush=True)


def main():
    mode, config_path, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "probes":
        probes(config_path, out_path, sys.argv[4:])
    elif mode == "run":
        run(config_path, out_path, sys.argv[4:])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
