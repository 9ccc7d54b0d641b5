#!/usr/bin/env python3
"""A large real trace for bench/kernels_bench.sh: a real Kineto trace's events repeated, each copy shifted
in time by the trace's span, until the file reaches SIZE_MB.

Usage: bench/kernels_repeat_trace.py SRC DST SIZE_MB   (SRC .json or .json.gz; DST plain JSON)"""
import gzip
import json
import sys


def main():
    src, dst, size_mb = sys.argv[1], sys.argv[2], float(sys.argv[3])
    with (gzip.open(src, "rt") if src.endswith(".gz") else open(src)) as f:
        doc = json.load(f)
    events = doc.pop("traceEvents")
    stamped = [e for e in events if "ts" in e]
    span = max(e["ts"] + e.get("dur", 0) for e in stamped) - min(e["ts"] for e in stamped)
    one = [json.dumps(e) for e in events]
    per_copy = sum(len(s) + 2 for s in one)
    copies = max(1, round(size_mb * 1e6 / per_copy))
    head = json.dumps(doc)[:-1]  # the other top-level keys, without the closing brace
    with open(dst, "w") as out:
        out.write(head + (", " if doc else "") + '"traceEvents": [\n')
        first = True
        for k in range(copies):
            for e in events:
                if "ts" in e:
                    e = dict(e, ts=e["ts"] + k * span)
                out.write(("" if first else ",\n") + json.dumps(e))
                first = False
        out.write("\n]}\n")
    print(f"{dst}: {copies} copies of {len(events)} events from {src}")


if __name__ == "__main__":
    main()
