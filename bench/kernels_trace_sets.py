#!/usr/bin/env python3
"""Per trace set: the share of device time `stepcast kernels` leaves in `other` (and files under
communication / convolution), against an independent count of the same trace in Python.

Usage: bench/kernels_trace_sets.py STEPCAST SET=DIR [SET=DIR ...]

Every *.json / *.json.gz under DIR is tried. For each trace that stepcast reads (exit 0), Python's json
module sums the device events itself (ph "X", cat kernel / gpu_memcpy / gpu_memset, and their 2021 spellings)
per kernel name, and checks stepcast's device time, launch count and per-name times against it; the
category times are then recomputed from those independent per-name sums with stepcast's name -> category
map. Files stepcast refuses (exit 2) are listed with the first line of their message. Prints a table per
trace and one per set (device-time weighted)."""
import collections
import glob
import gzip
import json
import os
import subprocess
import sys

DEVICE_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy", "gpu_memset": "memset", "memset": "memset"}


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def demangled(names):
    """Mangled names (_Z...) as c++filt prints them, which is how stepcast reports them."""
    mangled = sorted(n for n in names if n.startswith("_Z"))
    if not mangled:
        return {}
    out = subprocess.run(["c++filt"], input="\n".join(mangled) + "\n", capture_output=True, text=True).stdout
    return dict(zip(mangled, out.splitlines()))


def external_id(e):
    args = e.get("args") or {}
    return args.get("External id", args.get("external id"))


def independent(path):
    """Per (kernel name, launched by a convolution operator): (count, summed dur in µs) of the device events,
    counted from the whole DOM; a kernel's operator is the cpu_op with its External id."""
    doc = load(path)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    conv_ops = {external_id(e) for e in events if isinstance(e, dict) and e.get("cat") in ("cpu_op", "Operator")
                and "convolution" in e.get("name", "")}
    conv_ops.discard(None)
    per_name = collections.defaultdict(lambda: [0, 0.0])
    launches = 0
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        kind = DEVICE_CATS.get(str(e.get("cat", "")).lower())
        if kind is None or "dur" not in e:
            continue
        row = per_name[(e["name"], "convolution" if kind == "kernel" and external_id(e) in conv_ops else "")]
        row[0] += 1
        row[1] += e["dur"]
        launches += kind == "kernel"
    names = demangled({name for name, _ in per_name})
    return {(names.get(n, n), by): v for (n, by), v in per_name.items()}, launches


def check(stepcast, path):
    run = subprocess.run([stepcast, "kernels", path, "--format", "json"], capture_output=True, text=True)
    if run.returncode != 0:
        return {"path": path, "refused": run.stderr.strip().splitlines()[0] if run.stderr.strip() else f"exit {run.returncode}"}
    rep = json.loads(run.stdout)
    per_name, launches = independent(path)
    device_us = sum(t for _, t in per_name.values())
    category_of = {}
    mine = collections.defaultdict(float)
    for k in rep["kernels"]:
        key = (k["name"], k.get("launched_by", ""))
        category_of.setdefault(key, k["category"])  # a key may have rows per collective, of one category
        mine[key] += k["time_s"] * 1e6
    by_cat = collections.defaultdict(float)
    for name, (_, t) in per_name.items():
        by_cat[category_of.get(name, "missing")] += t
    worst_name = max((abs(mine.get(n, 0.0) - t) for n, (_, t) in per_name.items()), default=0.0)
    cats = {c: by_cat.get(c, 0.0) / device_us if device_us else 0.0 for c in rep["categories"]}
    mismatch = max((abs(cats[c] - rep["categories"][c]["share"]) for c in cats), default=0.0)
    return {
        "path": path,
        "device": rep["device"]["name"] + (" " + rep["device"]["arch"] if rep["device"]["arch"] else ""),
        "device_s": rep["device_time_s"],
        "independent_s": device_us * 1e-6,
        "launches": (rep["launches"], launches),
        "worst_name_us": worst_name,
        "share_mismatch": mismatch,
        "cats": cats,
        "missing": by_cat.get("missing", 0.0),
    }


def main():
    stepcast = sys.argv[1]
    sets = [a.split("=", 1) for a in sys.argv[2:]]
    summary = []
    for label, folder in sets:
        paths = sorted(p for p in glob.glob(os.path.join(folder, "**", "*"), recursive=True)
                       if p.endswith((".json", ".json.gz")))
        print(f"\n== {label}: {folder} ({len(paths)} files)")
        total = collections.defaultdict(float)
        read = 0
        for p in paths:
            r = check(stepcast, p)
            name = os.path.relpath(p, folder)
            if "refused" in r:
                print(f"  {name}: refused: {r['refused'][:150]}")
                continue
            read += 1
            c = r["cats"]
            ok = (abs(r["device_s"] - r["independent_s"]) <= 1e-9 * max(1, r["independent_s"]) + 1e-9 and
                  r["launches"][0] == r["launches"][1] and r["worst_name_us"] < 1e-3 and r["share_mismatch"] < 1e-9 and
                  r["missing"] == 0)
            print(f"  {name}: {r['device']}: device {r['device_s']*1e3:.3f} ms (independent {r['independent_s']*1e3:.3f}), "
                  f"launches {r['launches'][0]} ({r['launches'][1]}), other {c['other']*100:.1f} %, "
                  f"communication {c['communication']*100:.1f} %, convolution {c['convolution']*100:.1f} %, "
                  f"gemm {c['gemm']*100:.1f} % {'= independent' if ok else 'MISMATCH'}")
            for cat, share in c.items():
                total[cat] += share * r["device_s"]
            total["device"] += r["device_s"]
        if total["device"] > 0:
            summary.append((label, read, len(paths), {k: v / total["device"] for k, v in total.items() if k != "device"}, total["device"]))
    print("\n| trace set | traces read / files | device time | other | communication | convolution | gemm | attention |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, read, n, s, dev in summary:
        print(f"| {label} | {read} / {n} | {dev*1e3:.1f} ms | {s['other']*100:.1f} % | {s['communication']*100:.1f} % | "
              f"{s['convolution']*100:.1f} % | {s['gemm']*100:.1f} % | {s['attention']*100:.1f} % |")


if __name__ == "__main__":
    main()
