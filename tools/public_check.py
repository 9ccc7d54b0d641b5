#!/usr/bin/env python3
"""Pre-registered checks against published fine-tuning throughputs (docs/gpus.md, "Published fine-tuning
throughputs").

  tools/public_check.py predict SPEC.json [--stepcast BIN] > measurements/predictions/public-NAME.jsonl
  (a configuration with a `plan` block is a training run, on one GPU or several, priced by `stepcast plan`)
  tools/public_check.py check PREDICTIONS.jsonl measurements/public/NAME.csv
  tools/public_check.py attention-rate PREDICTIONS.jsonl measurements/public/NAME.csv [--min-seq 16384]

`predict` runs `stepcast predict` once per configuration of SPEC.json and writes one JSON object a
configuration: the command, the micro-batch's predicted step and its 90 % interval, and what the source
publishes converted from it (seconds per optimizer step of `micro_batches` micro-batches plus the
coefficients' optimizer step, or tokens per second per GPU). Commit its output before the published figures
are read.

A `plan` block prices identical rows by default: `seq_len` tokens each, `micro_batch` x `accumulation` rows a
step (x `gpus`), `steps` steps (PLAN_STEPS when absent), padded to `seq_len` (policy `fixed`). It may instead give
  corpus         the scenario's `corpus:` mapping verbatim (a `histogram` of several bins, a `synthetic`
                 log-normal mix, or a `file`, resolved from the repository root); the steps are then the corpus's
                 (a `steps` given alongside is checked against them)
  policy         the baseline's batching policy (fixed, pad-to-longest, sorted-buckets, bucket-to-pair, pack,
                 padding-free), with `max_length` (default `seq_len`), `bucket_size`, `pad_to_multiple_of`,
                 `packer`, `pack_attention` and `seed` (default 1) as the scenario's `baseline:` takes them;
                 required with `corpus`
and, as before, `method` (full or lora, with `lora: {rank, alpha, dropout, targets[, quantize_base][, adapter_dtype]}`), `checkpointing`,
`autocast`, `dtype`, `tier`. Units of a `plan` configuration: `run_s` (the whole run, its first step included),
`tokens_per_s_per_gpu` (real tokens: the corpus's, without padding, when a corpus is given) and `s_per_step`
(the mean seconds of an optimizer step over the run: micro-batches and optimizer steps, without the process's
first micro-batch, first-seen shapes and cold compiles; those one-off seconds are recorded apart as
`one_off_s`).

`check` joins the predictions to the CSV's rows by `id` (the CSV's `locator` ends with `id=<id>`)
and prints the error table (predicted against published, signed, in %), the MAPE over the pre-registered
rows and, apart, the post hoc ones.
"""
import argparse
import csv
import json
import os
import shlex
import subprocess
import sys


def git_commit():
    return subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def optimizer_step_s(coefficients):
    # The pooled file's `optimizer_step_s: {value: ...}` line; the H200's figure, not carried (LoRA's
    # optimizer step is well under 1 % of every step predicted here).
    with open(coefficients) as f:
        for line in f:
            s = line.strip()
            if s.startswith("optimizer_step_s:"):
                return float(s.split("value:")[1].split(",")[0])
    return 0.0


PLAN_SCENARIO = """schema_version: 1
name: {id}
model: {model}
lora: {lora}
gpu: {{name: {gpu}, memory_gib: {memory_gib}}}
corpus:
  {corpus}
baseline: {baseline}
run: {{epochs: 1, startup_s: 0}}
window_hours: 0
"""
PLAN_STEPS = 4  # optimizer steps simulated per configuration (every one the same shape: the mean is the step)
# The baseline keys a plan block may pass through to the scenario's `baseline:` besides policy and max_length
# (io/scenario_io.cpp, read_baseline).
BASELINE_KEYS = ("bucket_size", "pad_to_multiple_of", "packer", "pack_attention")


def corpus_and_baseline(q, steps):
    """The scenario's corpus mapping and baseline line: identical rows padded to seq_len (policy fixed), or the
    plan's own `corpus` and `policy`."""
    micro, accum = q["micro_batch"], q["accumulation"]
    if "corpus" not in q:
        if "policy" in q:
            sys.exit("a plan's `policy` needs its `corpus` (identical rows are priced with policy fixed)")
        seq = q["seq_len"]
        corpus = f"histogram: {{seed: 1, bins: [{{length: {seq}, count: {q['gpus'] * micro * accum * steps}}}]}}"
        return corpus, f"{{policy: fixed, micro_batch: {micro}, accumulation: {accum}, max_length: {seq}, seed: 1}}"
    if "policy" not in q:
        sys.exit("a plan's `corpus` needs its batching `policy` (e.g. pad-to-longest, sorted-buckets, bucket-to-pair)")
    corpus = json.loads(json.dumps(q["corpus"]))  # a copy: the record keeps the spec's own mapping
    if len(corpus) != 1 or next(iter(corpus)) not in ("histogram", "synthetic", "file"):
        sys.exit(f"a plan's `corpus` holds exactly one of histogram, synthetic or file, not {sorted(corpus)}")
    if "file" in corpus and corpus["file"] != "-":
        corpus["file"] = os.path.abspath(corpus["file"])  # the scenario is written elsewhere: resolve it here
    baseline = {"policy": q["policy"], "micro_batch": micro, "accumulation": accum,
                "max_length": q.get("max_length", q.get("seq_len"))}
    if baseline["max_length"] is None:
        sys.exit("a plan's `corpus` needs `max_length` (or `seq_len`): the baseline's truncation length")
    baseline.update({k: q[k] for k in BASELINE_KEYS if k in q})
    baseline["seed"] = q.get("seed", 1)
    # JSON is YAML's flow style: the mappings go into the scenario as they are.
    return json.dumps(corpus), json.dumps(baseline)


def lora_block(q, autocast):
    """The scenario's `lora:` block: a full fine-tune (the default) or the plan's `lora` adapters."""
    ckpt = "true" if q["checkpointing"] else "false"
    a = "true" if autocast else "false"
    if q.get("method", "full") == "full":
        return f"{{full: true, autocast: {a}, checkpointing: {ckpt}}}"
    l = q["lora"]
    # QLoRA: the base's linears in bitsandbytes' 4 bits (`lora: {quantize_base: ...}`, docs/method.md "QLoRA")
    quant = f", quantize_base: {l['quantize_base']}" if l.get("quantize_base") else ""
    # Adapters kept in bf16 (`lora: {adapter_dtype: bfloat16}`, docs/method.md "bf16 adapters")
    dtype = f", adapter_dtype: {l['adapter_dtype']}" if l.get("adapter_dtype") else ""
    return (f"{{rank: {l['rank']}, alpha: {l['alpha']}, dropout: {l['dropout']}, targets: [{', '.join(l['targets'])}], "
            f"autocast: {a}, checkpointing: {ckpt}{quant}{dtype}}}")


def usable_memory_gib(gpu):
    """The card's usable_memory_gib in scenarios/gpus.yaml (one fact, one place)."""
    import yaml
    for g in yaml.safe_load(open("scenarios/gpus.yaml"))["gpus"]:
        if g["name"] == gpu or gpu in g.get("aliases", []):
            # A card without a measured usable figure: its nominal memory_gb in GiB (below what the allocator gets;
            # only the memory verdict reads it).
            return g.get("usable_memory_gib", round(g["memory_gb"] * 1e9 / 2**30, 2))
    sys.exit(f"GPU '{gpu}' is not in scenarios/gpus.yaml")


def predict_plan(c, stepcast, commit, dirty):
    """A training configuration on one GPU or several: `stepcast plan` over a corpus of identical rows, or over
    the plan's own corpus and batching policy."""
    import tempfile
    q = c["plan"]
    fp32 = q.get("master_fp32", False)
    # A whole run of `steps` optimizer steps (unit run_s: the trainer's train_runtime, its first step included),
    # else PLAN_STEPS identical steps whose mean is the step. With a corpus, the corpus sets the steps.
    steps = q.get("steps", PLAN_STEPS)
    corpus, baseline = corpus_and_baseline(q, steps)
    text = PLAN_SCENARIO.format(id=c["id"], model=os.path.abspath(c["model"]), gpu=json.dumps(c["gpu"]),
                                memory_gib=usable_memory_gib(c["gpu"]),
                                lora=lora_block(q, fp32 or q.get("autocast", False)), corpus=corpus,
                                baseline=baseline)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    flags = ["--transfer", "--no-sweep"]
    if q["gpus"] > 1:
        flags = ["--gpus", str(q["gpus"]), "--strategy", q["strategy"]] + flags
    if fp32:
        flags += ["--dtype", "float32"]
    elif q.get("dtype"):
        flags += ["--dtype", q["dtype"]]
    if q.get("tier"):  # the stack's attention implementation (hf-peft/flash_attention_2-*: the flash-attn package)
        flags += ["--tier", q["tier"]]
    if c.get("attention_kernels"):  # the stack's own attention kernels (stepcast --attention-kernels)
        flags += ["--attention-kernels", c["attention_kernels"]]
    cmd = ["stepcast", "plan", "SCENARIO"] + flags + ["--format", "json"]
    out = subprocess.run([stepcast, "plan", f.name] + flags + ["--format", "json"], capture_output=True, text=True)
    os.unlink(f.name)
    if out.returncode not in (0, 1):
        sys.exit(f"{c['id']}: {shlex.join(cmd)} failed: {out.stderr}")
    p = json.loads(out.stdout)
    one = p["baseline"]
    b = p["parallel"]["baseline"] if q["gpus"] > 1 else one
    run_s = b["wall_clock_s"]
    if "corpus" in q and "steps" in q and b.get("steps", one["steps"]) != q["steps"]:
        sys.exit(f"{c['id']}: the corpus gives {b.get('steps', one['steps'])} optimizer steps, the plan says {q['steps']}")
    # The run's one-off seconds: the fresh process's first micro-batch, the shapes met first, cold compiles.
    one_off_s = one["run_start_s"] + one["first_seen_s"] + one["breakdown_s"].get("kernel_compiles", 0.0)
    step = b["mean_step_s"] if q["gpus"] > 1 else \
        (run_s - one["run_start_s"] - one["first_seen_s"] - one["breakdown_s"].get("kernel_compiles", 0.0)) / one["steps"]
    share = (one["wall_clock_interval_s"][0] / one["wall_clock_s"], one["wall_clock_interval_s"][1] / one["wall_clock_s"])
    lo, hi = step * share[0], step * share[1]
    if "corpus" in q:  # the corpus's real tokens (no padding) per GPU per optimizer step
        tokens = one["real_tokens"] / (b.get("steps", one["steps"]) * q["gpus"])
    else:
        tokens = q["micro_batch"] * q["accumulation"] * q["seq_len"]  # per GPU per optimizer step
    if c["unit"] == "run_s":
        value, interval = run_s, [run_s * share[0], run_s * share[1]]
    elif c["unit"] == "tokens_per_s_per_gpu":
        value, interval = tokens / step, [tokens / hi, tokens / lo]
    elif c["unit"] == "s_per_step":
        value, interval = step, [lo, hi]
    else:
        sys.exit(f"{c['id']}: unknown unit {c['unit']}")
    extra = {}
    if "corpus" in q or c["unit"] == "s_per_step":  # absent from identical-row records, which stay as they were
        extra = {"steps": b.get("steps", one["steps"]), "one_off_s": one_off_s, "batching": one["label"],
                 "real_tokens": one["real_tokens"], "processed_tokens": one["processed_tokens"],
                 "padding_fraction": one["padding_fraction"], "distinct_shapes": one["distinct_shapes"],
                 "host_bound_micro_batches": one["host_bound_micro_batches"],
                 "optimizer_step_s": one["optimizer_step_s"], "corpus_summary": p.get("corpus", {})}
    return {"kind": "public-throughput", "id": c["id"], "gpu": c["gpu"], "model": c["model"], "plan": q, **extra,
            "config": c["config"], "seen_before_prediction": c.get("seen_before_prediction", False),
            "note": c.get("note", ""), "predicted_step_s": step, "step_interval_s": [lo, hi],
            "predicted_peak_gib_per_rank": b.get("peak_gib_per_rank", one["peak_gib"]),
            "memory_verdict": b["memory_verdict"],
            "predicted_value": value, "value_interval": interval, "unit": c["unit"],
            "breakdown_s": b.get("breakdown_s", {}), "predictor": p["predictor"], "transfer": p.get("transfer", ""),
            "command": shlex.join(cmd) + "  (SCENARIO: " + " ".join(text.split()) + ")",
            "stepcast_commit": p.get("commit", "") or commit, "tree_commit": commit + (" (modified)" if dirty else "")}


def predict(args):
    spec = json.load(open(args.spec))
    commit = git_commit()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True).stdout.strip()
    for c in spec["configs"]:
        if "plan" in c:
            print(json.dumps(predict_plan(c, args.stepcast, commit, dirty)))
            continue
        cmd = ["stepcast", "predict", "--model", c["model"], "--gpu", c["gpu"], "--transfer",
               "--rows", ",".join(str(r) for r in c["rows"]), "--dtype", c.get("dtype", "bfloat16")]
        if c.get("lora_rank"):
            cmd += ["--lora-rank", str(c["lora_rank"])]
        if c.get("lora_targets"):
            cmd += ["--lora-targets", ",".join(c["lora_targets"])]
        if c.get("stack"):
            cmd += ["--stack", c["stack"]]
        if c.get("autocast"):  # the trainer runs under torch.autocast(bf16): HF Trainer / TRL with bf16=True
            cmd += ["--autocast"]
        cmd += ["--format", "json"]
        out = subprocess.run([args.stepcast] + cmd[1:], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{c['id']}: {shlex.join(cmd)} failed: {out.stderr}")
        p = json.loads(out.stdout)
        step, (lo, hi) = p["predicted_step_s"], p["step_interval_s"]
        tokens = sum(c["rows"])
        micro = c.get("micro_batches", 1)
        coefficients = p["predictor"].split("(")[1].split(")")[0] if "(" in p["predictor"] else ""
        opt = optimizer_step_s(coefficients) if coefficients else 0.0
        rec = {"kind": "public-throughput", "id": c["id"], "gpu": c["gpu"], "model": c["model"],
               "rows": c["rows"], "micro_batches": micro, "config": c["config"],
               "seen_before_prediction": c.get("seen_before_prediction", False),
               "note": c.get("note", ""),
               "predicted_step_s": step, "step_interval_s": [lo, hi],
               "predicted_peak_gib": p["predicted_peak_gib"], "bound": p["bound"],
               "predicted_host_s": p["predicted_host_s"], "predicted_device_s": p["predicted_device_s"]}
        if c["unit"] == "s_per_iter":
            rec["optimizer_step_s"] = opt
            rec["predicted_value"] = micro * step + opt
            rec["value_interval"] = [micro * lo + opt, micro * hi + opt]
        elif c["unit"] == "tokens_per_s_per_gpu":
            rec["predicted_value"] = tokens / step
            rec["value_interval"] = [tokens / hi, tokens / lo]
        else:
            sys.exit(f"{c['id']}: unknown unit {c['unit']}")
        rec["unit"] = c["unit"]
        rec["provenance"] = p["provenance"]
        rec["predictor"] = p["predictor"].replace(os.getcwd() + "/", "")
        rec["transfer"] = p.get("transfer", "")
        rec["command"] = shlex.join(cmd)
        rec["stepcast_commit"] = p.get("commit", "") or commit
        rec["tree_commit"] = commit + (" (modified)" if dirty else "")
        print(json.dumps(rec))


def check(args):
    preds = {}
    for line in open(args.predictions):
        if line.strip():
            r = json.loads(line)
            preds[r["id"]] = r
    rows = []
    for row in csv.DictReader(open(args.csv)):
        loc = row["locator"]
        if "id=" not in loc:
            continue
        pid = loc.split("id=")[1].split(";")[0].split(",")[0].strip()
        if pid not in preds:
            continue
        p = preds[pid]
        published = float(row["value"])
        if p["unit"] == "s_per_iter":
            # the CSV holds tokens per second per GPU; the prediction is seconds per optimizer step
            tokens = sum(p["rows"]) * p["micro_batches"]
            value, lo, hi = tokens / p["predicted_value"], tokens / p["value_interval"][1], \
                tokens / p["value_interval"][0]
        else:
            value, (lo, hi) = p["predicted_value"], p["value_interval"]
        err = (value - published) / published
        rows.append((pid, row["gpu"], value, lo, hi, published, err, lo <= published <= hi,
                     p["seen_before_prediction"]))
    print("| id | gpu | predicted (90 %) | published | error | inside |")
    print("| --- | --- | --- | --- | --- | --- |")
    for pid, gpu, v, lo, hi, pub, err, inside, seen in rows:
        print(f"| {pid}{' (post hoc)' if seen else ''} | {gpu} | {v:.4g} ({lo:.4g}-{hi:.4g}) | {pub:.4g} | "
              f"{100 * err:+.1f} % | {'yes' if inside else 'no'} |")
    for label, sel in (("pre-registered", [r for r in rows if not r[8]]),
                       ("post hoc", [r for r in rows if r[8]])):
        if sel:
            summary(label, sel)
            gpus = sorted({r[1] for r in sel})
            if len(gpus) > 1:  # the goal is per GPU
                for g in gpus:
                    summary(f"  {label}, {g}", [r for r in sel if r[1] == g])


def attention_rate(args):
    """Post hoc: the attention rate that would close each long row's gap, the rest of the step as predicted.

    Causal attention's forward is 2 s^2 d FLOPs a sequence and layer (QK^T and PV, half masked), the flash
    backward 2.5 times that, and checkpointing adds one forward: 7 or 9 s^2 d. The predicted rate is the one the
    prediction's own predictor line names for the flash family; the implied rate is FLOPs over (predicted
    attention time + measured - predicted step). Only meaningful where attention is most of the gap."""
    import re
    import statistics
    published = {row["locator"].split("id=")[-1].strip(): float(row["value"]) for row in csv.DictReader(open(args.csv))
                 if "id=" in row["locator"]}
    by_gpu = {}
    print("| id | seq | predicted / published step (s) | predicted attention (s) | rate predicted -> implied (TFLOP/s) |")
    print("| --- | --- | --- | --- | --- |")
    for line in open(args.predictions):
        p = json.loads(line)
        plan, pid = p.get("plan"), p["id"]
        if not plan or "corpus" in plan or plan["seq_len"] < args.min_seq or pid not in published:
            continue
        m = re.search(r"-> sm\d+ flash2/mma ([\d.]+) TFLOP/s", p["predictor"])
        if not m:
            continue
        cfg = json.load(open(p["model"]))
        s, seqs = plan["seq_len"], plan["micro_batch"] * plan["accumulation"]
        flops = (9 if plan["checkpointing"] else 7) * s * s * cfg["hidden_size"] * cfg["num_hidden_layers"] * seqs
        tokens = seqs * s
        predicted, measured = tokens / p["predicted_value"], tokens / published[pid]
        rate = float(m.group(1))
        attention = flops / (rate * 1e12)
        implied = flops / (attention + measured - predicted) / 1e12
        by_gpu.setdefault(p["gpu"], []).append(implied)
        print(f"| {pid} | {s} | {predicted:.2f} / {measured:.2f} | {attention:.2f} | {rate:.0f} -> {implied:.0f} |")
    for gpu, rates in sorted(by_gpu.items()):
        print(f"{gpu}: {len(rates)} rows, implied attention rate median {statistics.median(rates):.0f} TFLOP/s "
              f"({min(rates):.0f}-{max(rates):.0f})")


def summary(label, sel):
    mape = sum(abs(r[6]) for r in sel) / len(sel)
    bias = sum(r[6] for r in sel) / len(sel)
    inside = sum(1 for r in sel if r[7])
    print(f"{label}: {len(sel)} rows, MAPE {100 * mape:.1f} %, bias {100 * bias:+.1f} %, "
          f"max {100 * max(abs(r[6]) for r in sel):.1f} %, {inside} of {len(sel)} inside the 90 % interval")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("predict")
    a.add_argument("spec")
    a.add_argument("--stepcast", default="build/cli/stepcast")
    a.set_defaults(func=predict)
    b = sub.add_parser("check")
    b.add_argument("predictions")
    b.add_argument("csv")
    b.set_defaults(func=check)
    c = sub.add_parser("attention-rate")
    c.add_argument("predictions")
    c.add_argument("csv")
    c.add_argument("--min-seq", type=int, default=16384)
    c.set_defaults(func=attention_rate)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
