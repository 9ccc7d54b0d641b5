#!/usr/bin/env python3
"""The first-seen excess of recorded runs per family (docs/host.md, "Short micro-batches in runs").

For every warm micro-batch of a recorded run that met a shape new to its process (no JIT growth, not the run's
first micro-batch), the excess of its step over the default predictor's steady step (`stepcast predict
--measurements F --format json`). Prints the median per family and how well one constant and a host-scaled cost
(c + r x predicted host seconds, host-bound steps only) fit all excesses (mean absolute error, grid search). Then, on
the warm runs without a kernel compile, the run-level MAPE with the default's first-seen cost and with two
constants by bound (device-bound, host-bound), each fitted on the other runs (leave one run out).

    python3 tools/first_seen_spread.py [RECORDS.jsonl ...]   (default: every H200 campaign run file)
STEPCAST names the binary (default build/cli/stepcast).
"""
import collections
import glob
import json
import os
import re
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
    for model, d, h, e in rows:
        by[model].append((e, h > d))
    med = lambda xs: "%.3f s" % statistics.median(xs) if xs else "-"
    for model, xs in sorted(by.items(), key=lambda kv: statistics.median(e for e, _ in kv[1])):
        print("%-20s %4d new shapes, median excess %s (host-bound %s, device-bound %s)" % (
            model, len(xs), med([e for e, _ in xs]), med([e for e, hb in xs if hb]), med([e for e, hb in xs if not hb])))
    grid = [i / 200 for i in range(10, 50)]
    const = min((mae(rows, lambda d, h, c=c: c), c) for c in grid)
    scaled = min((mae(rows, lambda d, h, c=c, r=r: c + (r * h if h > d else 0.0)), c, r)
                 for c in grid for r in [i / 20 for i in range(21)])
    print("%d excesses; one constant: MAE %.4f s at %.3f s; c + r*H (host-bound): MAE %.4f s at c %.3f, r %.2f" % (
        len(rows), const[0], const[1], *scaled))
    two_constants(files)


def run_totals(path):
    """(measured s, predicted s, host-bound new shapes, device-bound new shapes) of a warm run file, else None."""
    out = subprocess.run([BIN, "predict", "--measurements", path, "--stack", "transformers-peft", "--dtype",
                          "bfloat16", "--format", "json"], capture_output=True, text=True)
    if out.returncode:
        return None
    recs = [r for r in json.loads(out.stdout)["records"] if r.get("run")]
    if not recs or any(r.get("jit_cache_files_added") or r.get("label") == "cold" for r in recs):
        return None
    check = subprocess.run([BIN, "validate", "--run", path, "--stack", "transformers-peft", "--dtype", "bfloat16"],
                           capture_output=True, text=True).stdout
    m = re.search(r"total: measured ([\d.]+) s, predicted ([\d.]+) s", check)
    if not m:
        return None
    new = [r for r in recs if r["run"].get("first_seen") and r["run"]["index"] > 0]
    host = sum(1 for r in new if r["predicted_host_s"] > r["predicted_device_s"])
    return float(m.group(1)), float(m.group(2)), host, len(new) - host


def two_constants(files, fitted=0.144):
    """Leave-one-run-out MAPE of run totals: one first-seen constant against two by bound (the default charges
    `fitted` seconds a new shape, the pooled default's first_seen_s)."""
    runs = [t for t in (run_totals(f) for f in files) if t]
    grid = [i / 1000 for i in range(50, 400, 4)]

    def err(run, a, b):
        meas, pred, host, dev = run
        return abs((pred + host * (b - fitted) + dev * (a - fitted)) / meas - 1)

    def loo(pairs):
        total = 0
        for k, run in enumerate(runs):
            rest = runs[:k] + runs[k + 1:]
            a, b = min(pairs, key=lambda ab: sum(err(r, *ab) for r in rest))
            total += err(run, a, b)
        return total / len(runs)

    pairs = [(a, b) for a in grid[::2] for b in grid[::2]]
    one, two = loo([(c, c) for c in grid]), loo(pairs)
    a, b = min(pairs, key=lambda ab: sum(err(r, *ab) for r in runs))
    print("%d warm runs without a compile: leave one run out, one constant MAPE %.1f %%, two by bound %.1f %% "
          "(fitted on all: device-bound %.3f s, host-bound %.3f s)" % (len(runs), 100 * one, 100 * two, a, b))


if __name__ == "__main__":
    main(sys.argv[1:])
