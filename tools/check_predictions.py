#!/usr/bin/env python3
"""Committed predictions (JSON Lines with model, rows, predicted_step_s, predicted_peak_gib) against measurement
records (the record contract: model, rows, step_s, peak_gib, tier). Matches on model + rows; prints one line per
point and the step / peak MAPE and max per model. usage: check_predictions.py PREDICTIONS RECORDS... [--tier T]"""
import json, sys, collections
args = sys.argv[1:]
tier = None
if '--tier' in args:
    i = args.index('--tier'); tier = args[i + 1]; del args[i:i + 2]
pred = [json.loads(l) for l in open(args[0]) if l.strip()]
meas = {}
for f in args[1:]:
    for l in open(f):
        if not l.strip(): continue
        r = json.loads(l)
        if r.get('oom') or 'step_s' not in r: continue
        if tier and r.get('tier') != tier: continue
        meas.setdefault((r['model'], tuple(r['rows'])), r)
errs = collections.defaultdict(lambda: ([], []))
for p in pred:
    r = meas.get((p['model'], tuple(p['rows'])))
    if r is None: continue
    es = p['predicted_step_s'] / r['step_s'] - 1
    ep = p['predicted_peak_gib'] / r['peak_gib'] - 1 if r.get('peak_gib') else float('nan')
    errs[p['model']][0].append(es); errs[p['model']][1].append(ep)
    print(f"{p['model']:16s} {'x'.join(map(str, p['rows'])):>24s}  step {p['predicted_step_s']:.3f} vs {r['step_s']:.3f} ({es:+.1%})  peak {p['predicted_peak_gib']:.1f} vs {r['peak_gib']:.1f} ({ep:+.1%})")
for m, (s, pk) in errs.items():
    print(f"{m}: {len(s)} points, step MAPE {sum(map(abs, s)) / len(s):.1%} (max {max(map(abs, s)):.1%}), "
          f"peak MAPE {sum(map(abs, pk)) / len(pk):.1%} (max {max(map(abs, pk)):.1%})")
