#!/usr/bin/env python3
"""Cuts a small, still real piece out of a torch.profiler / Kineto Chrome trace, for golden tests.

Usage: cut_trace.py SRC DST [--around SUBSTRING] [--device-events N]

Keeps every top-level key but traceEvents as it is (deviceProperties, distributedInfo, ...), and of the
events: the N device events (cat kernel / gpu_memcpy / gpu_memset) that start first at or after the first
device event whose name contains SUBSTRING (or the first N of the trace), every other event that lies inside
their time window, and the metadata ("ph": "M") events. Events keep their order and every field."""
import argparse
import gzip
import json

DEVICE = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--around", default="")
    ap.add_argument("--device-events", type=int, default=150)
    ap.add_argument("--max-other", type=int, default=400)
    a = ap.parse_args()
    with (gzip.open(a.src, "rt") if a.src.endswith(".gz") else open(a.src)) as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    device = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") in DEVICE), key=lambda e: e["ts"])
    start = next((i for i, e in enumerate(device) if a.around in e["name"]), 0)
    kept = device[start:start + a.device_events]
    t0, t1 = kept[0]["ts"], max(e["ts"] + e["dur"] for e in kept)
    kept_ids = {id(e) for e in kept}
    others = 0
    out = []
    for e in events:
        if id(e) in kept_ids or e.get("ph") == "M":
            out.append(e)
        elif e.get("cat") not in DEVICE and t0 <= e.get("ts", -1) <= t1 and others < a.max_other:
            out.append(e)
            others += 1
    doc["traceEvents"] = out
    with (gzip.open(a.dst, "wt") if a.dst.endswith(".gz") else open(a.dst, "w")) as f:
        json.dump(doc, f, indent=0)


if __name__ == "__main__":
    main()
