#!/usr/bin/env python3
"""Per-category step rates from the harness's CUPTI kernel tables (docs/method.md, "Per-category model").

For each table: every kernel's category (`stepcast kernels --format json`, the rules of kernels/classify.cpp),
summed per step into the step model's categories, against the work `stepcast predict --format json` gives that
category for the table's shape (its `work`, per term):
  gemm_s_per_tflop         bf16 GEMM kernels (category gemm, not fp32)    / dense base GEMM TFLOPs
  lora_gemm_s_per_tflop    fp32 GEMM kernels (cuBLAS f32f32 / SIMT sgemm) / LoRA adapter TFLOPs
  expert_gemm_s_per_tflop  grouped_gemm kernels + the MoE dispatch ones + the table's memory-bound time beyond its
                           count at the dense tables' memory rate / the experts' roofline work
  attention_s_per_tflop    cuDNN and flash attention kernels              / their layers' attention TFLOPs (is_causal)
  attention_masked_s_per_tflop     the same kernels with an explicit mask / their layers' TFLOPs (W x W)
  attention_efficient_s_per_tflop  CUTLASS (memory-efficient) kernels     / their layers' attention TFLOPs (is_causal)
  attention_efficient_masked_s_per_tflop  the same with an explicit mask  / their layers' TFLOPs (W x W)
(a table whose layers of one backend family run both masked and unmasked cannot say which took the time: that
family's two rates skip it; tables with math layers price no attention and no mask conversion: math's
_safe_softmax runs `where` on the scores)
  mask_s_per_gb            the `where` kernels that turn the bool masks into additive biases / mask GB
  memory_s_per_gb          elementwise + copy + reduction + other kernels / memory-bound GB
A rate is sum(time) / sum(work) over the tables (least squares through the origin, weighted by work), with the
efficiency 1 / (rate x peak) beside it. With --prior-out, writes a copy of --coefficients whose step rates are
these (selected, std_error 0): `stepcast calibrate --prior THAT --prior-sigma 0.02` then fits what the tables
cannot see (fixed, host, mask path, overlap) on the step records with the category rates held near these.
An fp32 GEMM whose calls average above --fp32-dense-ms is not an adapter GEMM (adapters are rank-16 and take
tens of microseconds): the math backend's fp32 score bmm of Gemma-4's global layers, 10-15 calls of 7-11 ms
per step; such kernels are reported apart as `fp32_dense` and priced nowhere (those tables price no attention).
Usage: tools/kernel_efficiency.py [--stepcast BIN] [--coefficients FILE] [--prior-out FILE] [--lora MODEL=T1,T2] TABLE.jsonl...
"""
import argparse
import json
import re
import os
import subprocess
import sys
import tempfile

# Token dispatch of a MoE layer (index_add of the expert outputs, gathers, the router's top-k and sort; on
# transformers' grouped_mm path also the masked_fill of the routed rows and the index backward): in a table with
# grouped GEMMs, priced with the experts by their routed token elements (docs/method.md, "Experts by tokens per
# expert").
MOE_DISPATCH = re.compile(r"indexFunc|gather|scatter|sort|topk|histc|cumsum|masked_fill|indexing_backward")
FP32_GEMM = re.compile(r"f32f32_f32f32|sgemm|_s16816gemm|_s1688gemm|tf32")
# SDPA's bool -> additive mask conversion (convert_boolean_attn_mask's at::where, docs/families.md).
MASK_CONVERSION = re.compile(r"where_kernel")
PEAK = {"gemm_s_per_tflop": "bf16", "expert_gemm_s_per_tflop": "bf16", "attention_s_per_tflop": "bf16",
        "attention_masked_s_per_tflop": "bf16", "attention_efficient_s_per_tflop": "bf16",
        "attention_efficient_masked_s_per_tflop": "bf16",
        "lora_gemm_s_per_tflop": "fp32", "memory_s_per_gb": "bandwidth", "mask_s_per_gb": "bandwidth"}
# The attention kernels of a backend family, and the two terms (unmasked, masked) their time may belong to.
FAMILIES = {"fused": ("attention_s_per_tflop", "attention_masked_s_per_tflop"),
            "efficient": ("attention_efficient_s_per_tflop", "attention_efficient_masked_s_per_tflop")}
# scenarios/gpus.yaml: peak_bf16_tflops, peak_fp32_tflops, memory_bandwidth_gbs
PEAKS = {"NVIDIA H200": {"bf16": 989.4, "fp32": 67.0, "bandwidth": 4800.0}}


def run_json(stepcast, args):
    out = subprocess.run([stepcast] + args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{stepcast} {' '.join(args)}: exit {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def category_times(k, steps, fp32_dense_s):
    t_has_experts = any(kern["category"] == "grouped_gemm" for kern in k["kernels"])
    t = {key: 0.0 for key in PEAK}
    t["fp32_dense"] = 0.0
    t["fused"] = t["efficient"] = 0.0
    for kern in k["kernels"]:
        s = kern["time_s"] / steps
        cat = kern["category"]
        if cat == "gemm" and FP32_GEMM.search(kern["name"]):
            per_call = kern["time_s"] / max(1, kern["count"])
            t["fp32_dense" if per_call > fp32_dense_s else "lora_gemm_s_per_tflop"] += s
        elif cat == "gemm":
            t["gemm_s_per_tflop"] += s
        elif cat != "attention" and t_has_experts and MOE_DISPATCH.search(kern["name"]):
            t["expert_gemm_s_per_tflop"] += s  # routing: the expert rate carries its dispatch
        elif cat == "grouped_gemm":
            t["expert_gemm_s_per_tflop"] += s
        elif cat == "attention" and kern["library"].startswith("CUTLASS"):
            t["efficient"] += s  # fmha_cutlass: the memory-efficient backend
        elif cat == "attention":
            t["fused"] += s
        elif MASK_CONVERSION.search(kern["name"]):
            t["mask_s_per_gb"] += s
        elif cat in ("elementwise", "copy", "reduction", "other"):
            t["memory_s_per_gb"] += s
    return t


def table_work(stepcast, coefficients, header, lora):
    """The table's work by category, priced with `lora` = {model: targets}."""
    # "MODEL RxW rows=A,B TIER", and tools/device/hf_campaign.py's tables add " (torch.profiler)"
    model, shape, rows_field, tier = header["label"].split(" ")[:4]
    width = shape.split("x")[1]
    targets = ["--lora-targets", lora[model]] if model in lora else []
    p = run_json(stepcast, ["predict", "--coefficients", coefficients, "--model", model, "--tier", tier,
                            "--transfer", "--rows", rows_field.split("=")[1], "--width", width, "--format", "json"]
                 + targets)
    w = p["work"]
    out = {key: w.get(key, 0.0) for key in PEAK}
    out["math"] = w["attention_math_s_per_tflop"]
    return out


def table_lora(path, header, targets):
    """{model: targets} for one table from --lora's {name: targets}: a key naming the table's campaign item (the
    folder ITEM__probes, e.g. llama-3-8b-attention) wins over one naming its model."""
    model = header["label"].split(" ")[0]
    item = os.path.basename(os.path.dirname(path)).split("__")[0]
    key = item if item in targets else model
    return {model: targets[key]} if key in targets else {}


def attribute_attention(t, w):
    """Each family's kernel time to its unmasked or masked term, where the table's work says which; None where
    both have work in this table."""
    for family, (plain, masked) in FAMILIES.items():
        has_plain, has_masked = w[plain] > 0, w[masked] > 0
        if has_plain != has_masked:
            t[plain if has_plain else masked] = t[family]
        elif has_plain:
            t[plain] = t[masked] = None


def write_prior(coefficients, rates, path, free=()):
    text = open(coefficients).read()
    # Terms the kernel tables cannot see (a fixed per-step time, a per-token memory share) are the base file's
    # stack's, not the tables': --free leaves them to the records (value 0, unselected).
    for name in free:
        text, n = re.subn(rf"^  {name}: \{{.*\}}$",
                          f'  {name}: {{value: 0, std_error: 0, selected: false, reason: "left to the records (--free)"}}',
                          text, flags=re.M)
        if n != 1:
            sys.exit(f"kernel_efficiency.py: --free {name}: no such term in {coefficients}")
    head, rest = text.split("\nstep:\n", 1)
    if "lora_gemm_s_per_tflop" in rates:  # the rate is per roofline work now (docs/method.md, "LoRA by rank")
        head = re.sub(r"^lora_work: .*\n?", "", head, flags=re.M)
        head = re.sub(r"^(lora_rank: .*)$", r"\1\nlora_work: roofline", head, count=1, flags=re.M)
    if "expert_gemm_s_per_tflop" in rates:  # so is the experts' ("Experts by tokens per expert")
        head = re.sub(r"^expert_work: .*\n?", "", head, flags=re.M)
        head = re.sub(r"^(lora_work: .*)$", r"\1\nexpert_work: roofline", head, count=1, flags=re.M)
    if "memory_s_per_gb" in rates:  # and the memory-bound one per the weighted count ("Memory-bound work")
        head = re.sub(r"^memory_work: .*\n?", "", head, flags=re.M)
        head = re.sub(r"^(expert_work: .*)$", r"\1\nmemory_work: weighted", head, count=1, flags=re.M)
    step_lines, tail = rest.split("\nmemory:\n", 1)
    # With the masked kernels' own rates measured, the free mask-path term is only a correction the step
    # records must select (docs/families.md): no prior holds it.
    drop = set(rates) | ({"mask_path_s_per_tflop"} if "attention_masked_s_per_tflop" in rates else set())
    kept = [l for l in step_lines.splitlines() if l.strip().split(":")[0] not in drop]
    if "attention_masked_s_per_tflop" in rates:
        kept.append('  mask_path_s_per_tflop: {value: 0, std_error: 0, selected: false, '
                    'reason: "not selected: the masked kernels\' rates price the mask path (kernel tables)"}')
    for name, rate in rates.items():
        kept.append(f'  {name}: {{value: {rate:.10g}, std_error: 0, selected: true, '
                    f'reason: "kernel tables (tools/kernel_efficiency.py)"}}')
    with open(path, "w") as f:
        f.write(head + "\nstep:\n" + "\n".join(kept) + "\nmemory:\n" + tail)


def roofline_copy(coefficients):
    """A temporary copy of the base file whose work is the experts' roofline (expert_work: roofline) and the
    weighted memory-bound count (memory_work: weighted): the tables' rates are per that work, whatever the base file
    was written under."""
    text = open(coefficients).read()
    text = re.sub(r"^(expert|memory)_work: .*\n?", "", text, flags=re.M)
    text = re.sub(r"^(tier: .*)$", r"\1\nexpert_work: roofline\nmemory_work: weighted", text, count=1, flags=re.M)
    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    f.write(text)
    f.close()
    return f.name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stepcast", default="build/cli/stepcast")
    ap.add_argument("--coefficients", default="scenarios/coefficients/h200-sdpa-auto-grouped-gqa-expand.yaml")
    ap.add_argument("--prior-out")
    ap.add_argument("--fp32-dense-ms", type=float, default=1.0)
    ap.add_argument("--lora", action="append", default=[],
                    help="MODEL=T1,T2,...: the LoRA targets a model's tables trained (default: the family's all-linear); "
                         "ITEM=T1,... for the tables of one campaign item (folder ITEM__probes)")
    ap.add_argument("--free", action="append", default=[],
                    help="TERM: write it into --prior-out unselected, for the records to decide (e.g. fixed_s, token_kib)")
    ap.add_argument("tables", nargs="+")
    a = ap.parse_args()
    work_file = roofline_copy(a.coefficients)
    lora_targets = dict(x.split("=", 1) for x in a.lora)
    sums = {key: [0.0, 0.0] for key in PEAK}
    moe = []  # (time, work) of the tables with grouped GEMMs, attributed after the dense tables' memory rate
    device = None
    print("| table | " + " | ".join(f"{k} s / work / eff." for k in PEAK) + " | fp32 dense s | device s |")
    print("| --- " * (len(PEAK) + 3) + "|")
    for path in a.tables:
        with open(path) as f:
            header = json.loads(f.readline())
        device = header["device"]
        steps = header.get("steps", 1)
        k = run_json(a.stepcast, ["kernels", path, "--format", "json"])
        t = category_times(k, steps, a.fp32_dense_ms / 1000.0)
        w = table_work(a.stepcast, work_file, header, table_lora(path, header, lora_targets))
        attribute_attention(t, w)
        if w["expert_gemm_s_per_tflop"] > 0:
            moe.append((t, w))
        cells = []
        for key, rate in PEAK.items():
            if t[key] is None:
                cells.append("mixed")
                continue
            peak = PEAKS[device][rate]
            eff = w[key] / (t[key] * peak) if t[key] > 0 else 0.0
            cells.append(f"{t[key]:.4f} / {w[key]:.3f} / {100 * eff:.1f} %")
            if w["math"] > 0 and (key.startswith("attention") or key == "mask_s_per_gb"):
                continue  # math layers' bmm land in the gemm category, their _safe_softmax's where in the mask's
            if w["expert_gemm_s_per_tflop"] > 0 and key in ("memory_s_per_gb", "expert_gemm_s_per_tflop"):
                continue  # attributed below
            sums[key][0] += t[key]
            sums[key][1] += w[key]
        name = "/".join(path.split("/")[-2:])
        print(f"| {name} | " + " | ".join(cells) + f" | {t['fp32_dense']:.4f} | {k['device_time_s'] / steps:.3f} |")
    # A MoE table's memory-bound time beyond its count at the dense tables' rate is the routed rows' (their
    # activations, the weighted combine): the experts' roofline prices it with the routed token bytes (docs/method.md,
    # "Experts by tokens per expert"). Without a dense table, it stays memory-bound time.
    mem_time, mem_work = sums["memory_s_per_gb"]
    dense_rate = mem_time / mem_work if mem_work > 0 else None
    for t, w in moe:
        excess = t["memory_s_per_gb"] - dense_rate * w["memory_s_per_gb"] if dense_rate else 0.0
        sums["expert_gemm_s_per_tflop"][0] += t["expert_gemm_s_per_tflop"] + excess
        sums["expert_gemm_s_per_tflop"][1] += w["expert_gemm_s_per_tflop"]
        sums["memory_s_per_gb"][0] += t["memory_s_per_gb"] - excess
        sums["memory_s_per_gb"][1] += w["memory_s_per_gb"]
    if moe and dense_rate:
        print(f"\nMoE tables: memory-bound time beyond {1000 * dense_rate:.3f} ms/GB (the dense tables' rate) priced with the experts")
    rates = {}
    print("\n| term | rate | efficiency |\n| --- | --- | --- |")
    for key, (time_s, work) in sums.items():
        if work <= 0 or time_s <= 0:
            continue
        rates[key] = time_s / work
        print(f"| {key} | {rates[key]:.6g} | {100 / (rates[key] * PEAKS[device][PEAK[key]]):.1f} % |")
    os.unlink(work_file)
    if a.prior_out:
        write_prior(a.coefficients, rates, a.prior_out, a.free)


if __name__ == "__main__":
    main()
