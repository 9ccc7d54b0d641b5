#!/usr/bin/env python3
"""Which micro-batches compile kernels on a fresh machine (docs/host.md, "Which micro-batches compile kernels").

Replays every campaign records folder that has an items.tsv (one device machine each, processes in run order) and
checks the rule: a step grows the driver's JIT cache (its record's jit_cache_files_added > 0) exactly when its
cuDNN SDPA class is new to the machine, the class being
  padded step (explicit bool mask):  (head_dim, the largest of 128, 64, 8, 4, 2, 1 that divides the width)
  unpadded step (is_causal, no mask): (head_dim, whether 64 divides the width)
Prints, per folder and in all, the compiles the rule predicts and the records show, the ones only predicted, the
ones only seen, and the seconds a compile costs (a probe's first step minus its steady step, where it compiled).

    python3 tools/jit_classes.py [measurements/records/<folder or records file> ...]
    (default: every folder with an items.tsv; a records file is one machine, read in its own order)
"""
import glob
import json
import os
import statistics
import sys


def alignment(width):
    return next((a for a in (128, 64, 8, 4, 2) if width % a == 0), 1)


def head_dim(model, cache={}):
    if model not in cache:
        cache[model] = None
        for path in glob.glob("scenarios/models/%s.json" % model):
            c = json.load(open(path))
            c = c.get("text_config", c)
            cache[model] = (c.get("head_dim") or c.get("qk_nope_head_dim", 0) + c.get("qk_rope_head_dim", 0)
                            or c["hidden_size"] // c["num_attention_heads"])
    return cache[model]


def compile_class(record):
    rows, width = record["rows"], record["width"]
    if sum(rows) < len(rows) * width:
        return ("mask", head_dim(record["model"]), alignment(width))
    return ("causal", head_dim(record["model"]), width % 64 == 0)


def record_files(place):
    """(process, records file) in the machine's order: a campaign folder's items.tsv, or one records file read in
    its own order (the files written before campaigns, one machine each)."""
    if os.path.isfile(place):
        return [(os.path.basename(place), place)]
    processes = [line.split("\t")[0] for line in open(os.path.join(place, "items.tsv")) if line.strip()][1:]
    return [(p, os.path.join(place, "records", p.replace("/", "__") + ".jsonl")) for p in processes]


def replay(place):
    seen, both, predicted_only, seen_only, seconds = set(), 0, [], [], []
    for process, path in record_files(place):
        if not os.path.exists(path):
            continue
        for line in open(path):
            r = json.loads(line)
            if "step_s" not in r or r.get("oom") or "jit_cache_files_added" not in r:
                continue
            key = compile_class(r)
            new, compiled = key not in seen, (r.get("jit_cache_files_added") or 0) > 0
            seen.add(key)
            both += new and compiled
            if new and not compiled:
                predicted_only.append((process, r["width"], key))
            if compiled and not new:
                seen_only.append((process, r["width"], key))
            if compiled and "first_step_s" in r:
                seconds.append(r["first_step_s"] - r["step_s"])
    return both, predicted_only, seen_only, seconds


def main(folders):
    folders = folders or sorted(os.path.dirname(p) for p in glob.glob("measurements/records/*/items.tsv"))
    total = [0, 0, 0]
    seconds = []
    for folder in folders:
        both, predicted_only, seen_only, s = replay(folder)
        total = [total[0] + both, total[1] + len(predicted_only), total[2] + len(seen_only)]
        seconds += s
        print("%-50s both %3d  predicted only %d  seen only %d" % (folder, both, len(predicted_only), len(seen_only)))
        for what, items in (("predicted only", predicted_only), ("seen only", seen_only)):
            for process, width, key in items:
                print("    %s: %s width %d %s" % (what, process, width, key))
    print("all %d folders: %d compiles predicted and seen, %d predicted only, %d seen only" % (len(folders), *total))
    if seconds:
        q = statistics.quantiles(seconds, n=10)
        print("a compile in a probe's first step: median %.2f s, 10-90 %% %.2f-%.2f s over %d" % (
            statistics.median(seconds), q[0], q[-1], len(seconds)))


if __name__ == "__main__":
    main(sys.argv[1:])
