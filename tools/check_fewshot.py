#!/usr/bin/env python3
"""Compares measurements/predictions/fewshot_check.jsonl (committed before the measurement) with the records of
the device call of measurements/campaigns/fewshot-check.yaml (first run by a script, docs/campaigns.md): per model and way (zero-shot, fewshot4, all), step and peak error per point, MAPE
and max.   usage: tools/check_fewshot.py PREDICTIONS RECORDS...
"""
import json
import sys
from collections import defaultdict

preds, records = sys.argv[1], sys.argv[2:]
measured = {}
for path in records:
    for line in open(path):
        r = json.loads(line)
        measured[(r["model"], tuple(r["rows"]), r["width"])] = r
errors = defaultdict(list)
for line in open(preds):
    p = json.loads(line)
    r = measured.get((p["model"], tuple(p["rows"]), p["width"]))
    if r is None:
        print("not measured:", p["model"], p["point"])
        continue
    es = p["predicted_step_s"] / r["step_s"] - 1
    ep = p["predicted_peak_gib"] / r["peak_gib"] - 1
    errors[(p["model"], p["way"])].append((es, ep))
    print(f"{p['model']:18s} {p['point']:12s} {p['way']:9s} step {r['step_s']:.3f} s pred {p['predicted_step_s']:.3f} "
          f"({es * 100:+6.1f} %)  peak {r['peak_gib']:.2f} GiB pred {p['predicted_peak_gib']:.2f} ({ep * 100:+5.1f} %)")
print()
for (model, way), e in errors.items():
    s = [abs(a) for a, _ in e]
    m = [abs(b) for _, b in e]
    print(f"{model:18s} {way:9s} n {len(e)}  step MAPE {100 * sum(s) / len(s):5.1f} % (max {100 * max(s):5.1f} %)  "
          f"peak MAPE {100 * sum(m) / len(m):4.2f} % (max {100 * max(m):4.2f} %)")
