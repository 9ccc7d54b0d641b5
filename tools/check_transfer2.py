#!/usr/bin/env python3
"""Mistral-7B zero-shot check without a records file (docs/method.md, "Launches").

The device run of measurements/campaigns/transfer-mistral.yaml (first run by a script, docs/campaigns.md) returned the measured steps only as the table of
measurements/records/h200-transfer2/README.md (the records file was left out), so this compares
`stepcast predict --format json` at each shape of that table with its measured step and prints the error per
point, the MAPE and the max. Post-hoc: the Mistral figures were seen while the launch model was built.
Usage: tools/check_transfer2.py [--stepcast BIN] [--coefficients FILE]
"""
import argparse
import json
import re
import subprocess
import sys

README = "measurements/records/h200-transfer2/README.md"
ROW = re.compile(r"^\| (\d+)x(\d+) \| ([0-9.]+) \| ([0-9.]+) \|$")


def measured_points(path):
    points = []
    with open(path) as f:
        for line in f:
            m = ROW.match(line.strip())
            if m:
                points.append((int(m[1]), int(m[2]), float(m[3])))
    if not points:
        sys.exit(f"{path}: no '| RxW | step s | peak GiB |' rows")
    return points


def predicted_step(stepcast, coefficients, rows, width):
    args = [stepcast, "predict", "--coefficients", coefficients, "--model", "scenarios/models/mistral-7b.json",
            "--tier", "sdpa-auto/grouped/gqa-expand", "--transfer", "--format", "json",
            "--rows", ",".join([str(width)] * rows), "--width", str(width)]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(args)}: exit {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)["predicted_step_s"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--stepcast", default="build/cli/stepcast")
    p.add_argument("--coefficients", default="scenarios/coefficients/h200-gemma4-categories.yaml")
    a = p.parse_args()
    errors = []
    for rows, width, measured in measured_points(README):
        predicted = predicted_step(a.stepcast, a.coefficients, rows, width)
        errors.append(abs(predicted / measured - 1))
        print(f"{rows}x{width}  predicted {predicted:.3f} s  measured {measured:.3f} s  {100 * (predicted / measured - 1):+.1f} %")
    print(f"step MAPE {100 * sum(errors) / len(errors):.1f} %, max {100 * max(errors):.1f} % over {len(errors)} points")


if __name__ == "__main__":
    main()
