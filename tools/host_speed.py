#!/usr/bin/env python3
"""Host speed by machine: measured / predicted step of every clearly host-bound transformers + peft probe.

Usage: python3 tools/host_speed.py          (STEPCAST names the binary; default build/cli/stepcast)

A step the default predictor calls host-bound by a margin (predicted host time > 1.5 x device time) is the stack's
per-launch rate times the model's launches (docs/host.md), so measured / predicted is the machine's host speed
against the stack's rate, with the launch count's own error (a few %) inside. One line per records folder or file
(one machine each, except where its README says two), then the spread over them: what a run's interval must hold
for its host-bound share (docs/method.md, "Intervals"). Records of other GPUs are predicted with --transfer.
"""
import collections, glob, json, os, statistics, subprocess

STEPCAST = os.environ.get("STEPCAST", "build/cli/stepcast")
FILES = sorted(glob.glob("measurements/records/h*-*/records/*__probes.jsonl")) + \
        sorted(glob.glob("measurements/records/h200-hf-peft-host*.jsonl"))


def predicted(path, gpu):
    args = [STEPCAST, "predict", "--measurements", path, "--stack", "transformers-peft", "--dtype", "bfloat16",
            "--format", "json"]
    if "H200" not in gpu:
        args += ["--transfer", "--gpu", gpu]
    r = subprocess.run(args, capture_output=True, text=True)
    return json.loads(r.stdout)["records"] if r.returncode == 0 else []


by_machine = collections.defaultdict(list)
for path in FILES:
    with open(path) as f:
        first = json.loads(f.readline())
    if not str(first.get("tier", "")).startswith("hf-peft"):
        continue
    key = path.split("/")[2] if "/records/" in path else os.path.basename(path)
    for rec in predicted(path, first["gpu"]):
        if rec.get("probe") in ("kernels", "run") or not rec.get("step_s"):
            continue
        if rec.get("predicted_host_s", 0) > 1.5 * rec.get("predicted_device_s", 1):
            by_machine[(key, first["gpu"])].append((rec["step_s"] / rec["predicted_step_s"], first["model"]))

medians = []
for (key, gpu), points in sorted(by_machine.items()):
    m = statistics.median(p[0] for p in points)
    medians.append(m)
    print("%-32s %-22s n=%2d  measured / predicted %.3f  (%s)" % (key, gpu, len(points), m,
                                                                  ", ".join(sorted({p[1] for p in points}))))
print("%d machines: median %.3f, range %.3f ... %.3f" % (len(medians), statistics.median(medians), min(medians),
                                                          max(medians)))
