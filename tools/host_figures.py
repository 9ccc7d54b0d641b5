#!/usr/bin/env python3
"""Print docs/host.md's per-machine figures from the committed transformers + peft records.

Usage: python3 tools/host_figures.py          (STEPCAST names the binary; default build/cli/stepcast)

The records carry no machine name; the files do (docs/host.md):
  machine 1: h200-hf-peft-host.jsonl, h200-hf-peft-runs.jsonl (corpora A, B)
  machine 2: h200-hf-peft-jit.jsonl (corpus A pad-to-longest, cold then warm)
  machine 3: h200-hf-peft-host-m3.jsonl, h200-hf-peft-runs-m3.jsonl (corpora A, C, D)
  machine 4: h200-hf-peft-host-m4.jsonl, h200-hf-peft-runs-m4.jsonl (corpus E, twice)
  h200-hf-peft.jsonl (5 steady points of an earlier call) joins every leave-one-machine-out fit.
Each fit is `stepcast calibrate --measurements FILES --prior none`; each run check is `stepcast validate --run
FILE --coefficients FIT`. Prints, in docs/host.md's order: the probes (repeats, first-seen excesses), the per-machine
fits, the cold-cache stalls, machine 3's in-run first-seen excess, the same-machine and leave-one-machine-out checks.
"""
import json, os, statistics, subprocess, sys, tempfile

R = "measurements/records/"
STEPCAST = os.environ.get("STEPCAST", "build/cli/stepcast")
HOST = {1: "h200-hf-peft-host.jsonl", 3: "h200-hf-peft-host-m3.jsonl", 4: "h200-hf-peft-host-m4.jsonl"}
RUNS = {1: ["h200-hf-peft-runs.jsonl"], 2: ["h200-hf-peft-jit.jsonl"], 3: ["h200-hf-peft-runs-m3.jsonl"],
        4: ["h200-hf-peft-runs-m4.jsonl"]}
TMP = tempfile.mkdtemp(prefix="host_figures.")


def records(name):
    with open(R + name) as f:
        return [json.loads(line) for line in f if line.strip()]


def stepcast(*args):
    out = subprocess.run([STEPCAST, *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def fit(name, files):
    out = os.path.join(TMP, name + ".yaml")
    doc = stepcast("calibrate", "--measurements", *[R + f for f in files], "--prior", "none", "--out", out,
                   "--force", "--format", "json")["coefficients"]
    floor = doc["step"]["host_s_per_klaunch"]["value"] * doc["host"]["launches_per_step"] / 1000
    return out, floor, doc["host"]["overlap_exponent"]


def runs_check(files, coefficients):
    docs = [stepcast("validate", "--run", R + f, "--coefficients", coefficients, "--format", "json") for f in files]
    return [r for d in docs for r in d["runs"]], [s for d in docs for s in d.get("savings", [])]


print("probes (first step minus the median of the repeats; not the process's first, not the padded repeats):")
for m, name in HOST.items():
    recs = [r for r in records(name) if r["probe"] == "first-seen"]
    new = [r["first_step_s"] - r["step_s"] for r in recs
           if not r["first_in_process"] and r["kept_tokens"] >= len(r["rows"]) * (r["width"] - 1)]
    padded = [f"{r['first_step_s'] - r['step_s']:+.2f}" for r in recs if r["kept_tokens"] < len(r["rows"]) * (r["width"] - 1)]
    rep = next(r["times_s"] for r in recs if r["rows"] == [2048])
    print(f"  machine {m}: {len(new)} new shapes, median {statistics.median(new):.2f} s; padded repeats "
          f"{' / '.join(padded)} s; 1x2048 repeats {' / '.join(f'{t:.3f}' for t in rep)} s")

print("per-machine fits (host floor, overlap exponent p):")
fits = {}
for m in (1, 3, 4):
    fits[m] = fit(f"m{m}", [HOST[m]] + RUNS[m])
    print(f"  machine {m}: {fits[m][1]:.3f} s, p = {fits[m][2]:g}")
print(f"  machine 1 over machine 3: {100 * (fits[1][1] / fits[3][1] - 1):+.0f} %")

print("cold kernel cache (corpus A pad-to-longest; a stall: a micro-batch more than 1 s over machine 2's warm run):")
jit = records(RUNS[2][0])
warm = {r["run"]["index"]: r["step_s"] for r in jit if r["run"]["id"] == "jit-check-pass2/pad-to-longest"}
for label, name, run_id in (("machine 2, first run", RUNS[2][0], "jit-check-pass1/pad-to-longest"),
                            ("machine 1", RUNS[1][0], "hf-s7-m700/pad-to-longest/x1"),
                            ("machine 3", RUNS[3][0], "hf-s7-m700/pad-to-longest/x1")):
    run = [r for r in records(name) if r["run"]["id"] == run_id]
    stalls = [r for r in run if r["step_s"] - warm[r["run"]["index"]] > 1]
    excess = sum(r["step_s"] - warm[r["run"]["index"]] for r in stalls)
    total = run[-1]["run"]["elapsed_s"]
    print(f"  {label}: {total:.2f} s, stalls at micro-batches {[r['run']['index'] for r in stalls]} of "
          f"{min(r['step_s'] for r in stalls):.1f}-{max(r['step_s'] for r in stalls):.1f} s; with machine 2's warm "
          f"steps in their place {total - excess:.1f} s")
added = {}
for r in records(RUNS[3][0]):
    added[r["run"]["id"]] = added.get(r["run"]["id"], 0) + (r.get("jit_cache_files_added") or 0)
for run_id, n in added.items():
    print(f"  machine 3 {run_id}: {n} files added to the driver's JIT cache")

print("machine 3's runs, first-seen micro-batches (not the first, not cold) over machine 3's own steady step:")
pred = stepcast("predict", "--coefficients", fits[3][0], "--measurements", R + RUNS[3][0], "--format", "json")
by_run = {}
for r in pred["records"]:
    if r["run"]["first_seen"] and r["run"]["index"] > 0 and not r.get("jit_cache_files_added"):
        by_run.setdefault(r["run"]["id"], []).append(r["step_s"] - r["predicted_step_s"])
med = [statistics.median(v) for v in by_run.values()]
print(f"  median per run {min(med):.2f}-{max(med):.2f} s over {len(med)} runs")


def show(title, runs, savings):
    print(title)
    for r in runs:
        cold = f" (cold: {r['jit_micro_batches']} micro-batches)" if r.get("jit_micro_batches") else ""
        print(f"  {r['id']}: measured {r['measured_s']:.2f} s, predicted {r['predicted_s']:.2f} s "
              f"({100 * r['error_rel']:+.1f} %){cold}")
    for s in savings:
        print(f"  saving of {s['other']} over {s['baseline']}: measured {100 * s['measured']:.1f} %, "
              f"predicted {100 * s['predicted']:.1f} % ({s['error_pp']:+.1f} pp)")


show("same machine (machine 3's fit, its runs):", *runs_check(RUNS[3], fits[3][0]))
for held in (1, 2, 3, 4):
    files = ["h200-hf-peft.jsonl"] + [f for m in (1, 3, 4) if m != held for f in [HOST[m]]] + \
        [f for m in (1, 2, 3, 4) if m != held for f in RUNS[m]]
    coefficients, _, _ = fit(f"without-m{held}", files)
    show(f"machine {held} left out (fitted on the others' probes and runs):", *runs_check(RUNS[held], coefficients))
