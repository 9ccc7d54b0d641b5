#!/usr/bin/env python3
"""The first-seen excess of recorded runs per family (docs/host.md, "Short micro-batches in runs").

For every warm micro-batch of a recorded run that met a shape new to its process (no JIT growth, not the run's
first micro-batch), the excess of its step over the default predictor's steady step (`stepcast predict
--measurements F --format json`). Prints the median per family and how well one constant and a host-scaled cost
(c + r x predicted host seconds, host-bound steps only) fit all excesses (mean absolute error, grid search).

    python3 tools/first_seen_spread.py [RECORDS.jsonl ...]   (default: every H200 campaign run file)
STEPCAST names the binary (default build/cli/stepcast).
"""
import collections
import glob
import json
import os
import statistics
import subprocess
import sys

BIN = os.environ.get("STEPCAST", "build/cli/stepcast")


def excesses(path):
    out = subprocess.run([BIN, "predict", "--measurements", path, "--stack", "transformers-peft", "--dtype",
                          "bfloat16", "--format", "json"], capture_output=True, text=True)
    if out.returncode:
        return []
    rows = []
    for r in json.loads(out.stdout)["records"]:
        run = r.get("run")
        if (not run or r.get("oom") or r.get("jit_cache_files_added") or r.get("label") == "cold"
                or run.get("index", 0) == 0 or not run.get("first_seen")):
            continue
        rows.append((r["model"], r["predicted_device_s"], r["predicted_host_s"], r["step_s"] - r["predicted_step_s"]))
    return rows


def mae(rows, cost):
    return sum(abs(e - cost(d, h)) for _, d, h, e in rows) / len(rows)


def main(files):
    files = files or sorted(p for p in glob.glob("measurements/records/h200-*/records/*.jsonl") if "probes" not in p)
    rows = [x for f in files for x in excesses(f)]
    by = collections.defaultdict(list)
    for model, _, _, e in rows:
        by[model].append(e)
    for model, e in sorted(by.items(), key=lambda kv: statistics.median(kv[1])):
        print("%-20s %4d new shapes, median excess %.3f s" % (model, len(e), statistics.median(e)))
    grid = [i / 200 for i in range(10, 50)]
    const = min((mae(rows, lambda d, h, c=c: c), c) for c in grid)
    scaled = min((mae(rows, lambda d, h, c=c, r=r: c + (r * h if h > d else 0.0)), c, r)
                 for c in grid for r in [i / 20 for i in range(21)])
    print("%d excesses; one constant: MAE %.4f s at %.3f s; c + r*H (host-bound): MAE %.4f s at c %.3f, r %.2f" % (
        len(rows), const[0], const[1], *scaled))


if __name__ == "__main__":
    main(sys.argv[1:])
