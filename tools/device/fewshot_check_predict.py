#!/usr/bin/env python3
"""Predictions for tools/device/fewshot_check.sh, written before it runs (one JSON line per model, point and way):
  zero-shot  the Gemma-4 H200 categories file carried to the model (`predict --model M --transfer`)
  fewshot4   `calibrate` on four of the model's earlier records (the shapes named below, fixed before any of the
             new shapes was measured), then `predict`
  all        `calibrate` on every earlier record of the model, then `predict`
Rows are padded as the harness pads them (harness/probes.cpp padded_rows), LoRA as in the model's records.

usage: tools/device/fewshot_check_predict.py [BIN] > measurements/predictions/fewshot_check.jsonl   (here, no GPU)
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness_rows import point_rows  # noqa: E402  (the harness's padded rows, harness/probes.cpp)

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/cli/stepcast"
CATEGORIES = "scenarios/coefficients/h200-gemma4-categories.yaml"
POINTS = ["1x16384", "2x8192", "8x1024", "8x2048", "4x4096:0.25"]
MODELS = {
    # model: (earlier records, LoRA targets of those records, the four probes: rows, width, padding)
    "qwen1.5-moe-a2.7b": ("measurements/records/h200-qwen1.5-moe-a2.7b.jsonl", "q_proj,k_proj,v_proj,o_proj",
                          [(1, 2048, 0.0), (2, 4096, 0.0), (4, 2048, 0.0), (2, 4096, 0.25)]),
    # No padded record exists for Qwen2.5-7B: its fourth probe is the largest unpadded one.
    "qwen2.5-7b": ("measurements/records/h200-transfer3/transfer3-qwen2.5-7b.jsonl", None,
                   [(1, 2048, 0.0), (2, 4096, 0.0), (4, 2048, 0.0), (4, 4096, 0.0)]),
}


def run(args):
    return subprocess.run([BIN] + args, check=True, capture_output=True, text=True).stdout


def calibrate(records, keep, out):
    """Fits the records whose (rows, width, padding) is in keep (every record if keep is None), one each."""
    seen, lines = set(), []
    for line in open(records):
        r = json.loads(line)
        if r.get("probe") == "kernels":
            continue
        key = (len(r["rows"]), r["width"], round(r["padding_frac"], 2))
        if keep is None or (key in {(a, b, round(c, 2)) for a, b, c in keep} and key not in seen):
            lines.append(line)
            seen.add(key)
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.writelines(lines)
    run(["calibrate", "--measurements", f.name, "--out", out])
    os.unlink(f.name)
    return len(lines)


def main():
    tmp = tempfile.mkdtemp()
    for model, (records, targets, probes) in MODELS.items():
        fits = {"fewshot4": os.path.join(tmp, model + "-4.yaml"), "all": os.path.join(tmp, model + "-all.yaml")}
        used = {"fewshot4": calibrate(records, probes, fits["fewshot4"]), "all": calibrate(records, None, fits["all"])}
        for point in POINTS:
            rows, width = point_rows(point)
            base = ["predict", "--rows", ",".join(map(str, rows)), "--width", str(width), "--format", "json"]
            if targets:
                base += ["--lora-targets", targets]
            ways = {"zero-shot": ["--coefficients", CATEGORIES, "--model", model, "--transfer"]}
            for way, path in fits.items():
                ways[way] = ["--coefficients", path]
            for way, extra in ways.items():
                j = json.loads(run(base + extra))
                print(json.dumps({"model": model, "point": point, "way": way, "rows": j["rows"], "width": j["width"],
                                  "predicted_step_s": j["predicted_step_s"],
                                  "predicted_peak_gib": j["predicted_peak_gib"],
                                  "step_interval_s": j.get("step_interval_s"), "provenance": j.get("provenance"),
                                  "fitted_records": used.get(way), "records": records,
                                  "stepcast_commit": j.get("commit")}))


if __name__ == "__main__":
    main()
