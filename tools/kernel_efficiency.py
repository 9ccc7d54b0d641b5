#!/usr/bin/env python3
"""Per-category efficiency from the harness's CUPTI kernel tables (docs/method.md, "Transfer").

For every table under scenarios/measurements/*.kernels: the category's kernel time per step (`stepcast kernels`)
against the work the step model gives that category (`stepcast predict --format json`, its `work`), as a share
of the GPU's dense BF16 peak (scenarios/gpus.yaml):  efficiency = work [TFLOP] / (time [s] x peak [TFLOP/s]).
Usage: tools/kernel_efficiency.py [path/to/stepcast]   (default build/cli/stepcast); prints a Markdown table.
"""
import glob
import json
import subprocess
import sys

STEPCAST = sys.argv[1] if len(sys.argv) > 1 else "build/cli/stepcast"
COEFFS = "scenarios/coefficients/h200-sdpa-auto-grouped-gqa-expand.yaml"  # its model and GPU; work needs no rates
PEAK_BF16 = {"NVIDIA H200": 989.4}  # scenarios/gpus.yaml


def run_json(args):
    return json.loads(subprocess.run([STEPCAST] + args, check=True, capture_output=True, text=True).stdout)


def main():
    print("| table | GEMM time s | GEMM TFLOP | GEMM eff. | attention time s | attention TFLOP | attention eff. |"
          " memory-bound time s (elementwise+copy+reduction) | device s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for path in sorted(glob.glob("scenarios/measurements/*.kernels/*.jsonl")):
        with open(path) as f:
            header = json.loads(f.readline())
        model, shape, rows_field, tier = header["label"].split(" ")
        rows = rows_field.split("=")[1]
        width = shape.split("x")[1]
        k = run_json(["kernels", path, "--format", "json"])
        steps = header.get("steps", 1)
        cat = k["categories"]
        gemm_s = (cat["gemm"]["time_s"] + cat["grouped_gemm"]["time_s"]) / steps
        attn_s = cat["attention"]["time_s"] / steps
        mem_s = (cat["elementwise"]["time_s"] + cat["copy"]["time_s"] + cat["reduction"]["time_s"]) / steps
        p = run_json(["predict", "--coefficients", COEFFS, "--model", model, "--tier", tier, "--transfer",
                      "--rows", rows, "--width", width, "--format", "json"])
        w = p["work"]
        gemm_w = w["gemm_s_per_tflop"]
        attn_w = w["attention_s_per_tflop"] + w["attention_math_s_per_tflop"] + w["mask_path_s_per_tflop"]
        peak = PEAK_BF16[header["device"]]
        name = path.split("/")[-2].replace(".kernels", "") + "/" + path.split("/")[-1]
        print(f"| {name} | {gemm_s:.3f} | {gemm_w:.1f} | {100 * gemm_w / (gemm_s * peak):.1f} % | {attn_s:.3f} |"
              f" {attn_w:.1f} | {100 * attn_w / (attn_s * peak):.1f} % | {mem_s:.3f} | {k['device_time_s'] / steps:.3f} |")


if __name__ == "__main__":
    main()
