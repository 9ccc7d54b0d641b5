#!/usr/bin/env python3
"""A stand-in for the transformers + peft executor (tools/device/hf_campaign.py) in tests of tools/device/campaign.sh
and `stepcast campaign report`: the same command line (PLAN.json OUTDIR --only ID [--dry-run]) and records shaped
like the executor's (one JSON line per micro-batch or probe, appended and flushed as it goes, in
OUTDIR/<id with / as __>.jsonl), with made-up figures: every step takes STAND_IN_SECONDS_PER_TOKEN (default 1e-6) x
rows x width seconds, every peak 1 GiB. No torch, no GPU, no sleeping but where asked:

  STAND_IN_FAIL=ID,...   those processes write half their micro-batches, then exit 1
  STAND_IN_HANG=ID,...   those processes write one record, then sleep (the runner's timeout ends them)
  STAND_IN_JIT=ID,...    those processes' first micro-batch grew the JIT cache (jit_cache_files_added 3)
"""
import json
import os
import sys
import time

FAIL = set(filter(None, os.environ.get("STAND_IN_FAIL", "").split(",")))
HANG = set(filter(None, os.environ.get("STAND_IN_HANG", "").split(",")))
JIT = set(filter(None, os.environ.get("STAND_IN_JIT", "").split(",")))
PER_TOKEN = float(os.environ.get("STAND_IN_SECONDS_PER_TOKEN", "1e-6"))


def append(path, record):
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()


def base(plan, item, rows, width, probe):
    return {"model": item["model"], "gpu": item["gpu"], "tier": item["tier"], "rows": rows, "width": width,
            "probe": probe, "label": item["label"], "campaign": plan["campaign"], "item": item["id"],
            "lora": {"rank": item["lora"]["rank"], "alpha": item["lora"]["alpha"], "targets": item["lora"]["targets"]},
            "source": "tests/tools/stand_in_executor.py (made-up figures)"}


def run(plan, item, path):
    run = item["run"]
    batches = run["micro_batches"]
    elapsed, seen = 0.0, set()
    for index, mb in enumerate(batches):
        rows, width = mb["rows"], mb["width"]
        step = PER_TOKEN * len(rows) * width
        closes = (index + 1) % run["accumulation"] == 0 or index + 1 == len(batches)
        elapsed += step + (0.001 if closes else 0.0)
        fields = {k: run[k] for k in ("id", "policy", "micro_batch", "accumulation", "max_length", "pad_to_multiple_of",
                                      "seed")}
        fields.update(index=index, optimizer_step=index // run["accumulation"], first_seen=(len(rows), width) not in seen,
                      elapsed_s=elapsed)
        seen.add((len(rows), width))
        if closes:
            fields["optimizer_s"] = 0.001
        if index == 0:
            fields["corpus_lengths"] = run["corpus_lengths"]
        record = base(plan, item, rows, width, "run")
        record.update(step_s=step, peak_gib=1.0, peak_reserved_gib=1.25, run=fields,
                      jit_cache_files_added=3 if index == 0 and item["id"] in JIT else 0)
        append(path, record)
        if item["id"] in HANG:
            time.sleep(3600)
        if item["id"] in FAIL and index + 1 >= len(batches) // 2:
            print("stand-in: failing %s on purpose after %d micro-batches" % (item["id"], index + 1), flush=True)
            return 1
    return 0


def probes(plan, item, path):
    for spec in item["probes"]:
        rows, width = spec["rows"], spec["width"]
        record = base(plan, item, rows, width, "padding" if sum(rows) < len(rows) * width else "scaling")
        record.update(step_s=PER_TOKEN * len(rows) * width, peak_gib=1.0, peak_reserved_gib=1.25)
        append(path, record)
        if item["id"] in HANG:
            time.sleep(3600)
    return 1 if item["id"] in FAIL else 0


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    only = argv[argv.index("--only") + 1].split(",") if "--only" in argv else []
    args = [a for a in args if a not in only]
    plan_path, outdir = args
    plan = json.load(open(plan_path))
    status = 0
    for item in plan["items"]:
        if item["stack"] != "hf-peft" or (only and item["id"] not in only):
            continue
        print(("would run: " if "--dry-run" in argv else "item: ") + item["id"], flush=True)
        if "--dry-run" in argv:
            continue
        path = os.path.join(outdir, item["id"].replace("/", "__") + ".jsonl")
        status |= run(plan, item, path) if item.get("run") else probes(plan, item, path)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
