#!/usr/bin/env python3
"""Real torch.profiler Chrome traces of one LoRA fwd+bwd step of Gemma-4 26B-A4B under transformers + peft
(the stack of tools/device/hf_fidelity.py) on this GPU: one unpadded micro-batch and its padded twin, for
testing `stepcast kernels` on traces it never shaped. Also prints an independent count of the
attention share (a plain regex over kernel names, not stepcast's classifier) to compare with.

usage: hf_trace.py CONFIG.json OUT_DIR ROWS_CSV:WIDTH ...   e.g. 4096,4096:4096 4096,2048:4096
"""
import gzip
import json
import os
import re
import shutil
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_fidelity import batch, build, step  # noqa: E402

ATTENTION = re.compile(r"fmha|flash|sdpa|attention|attn", re.IGNORECASE)


def independent_share(path):
    events = json.load(open(path))["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    total = sum(e["dur"] for e in kernels)
    attention = sum(e["dur"] for e in kernels if ATTENTION.search(e["name"]))
    return total / 1e6, attention / total if total else 0.0, len(kernels)


def main():
    config_path, out_dir, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    model, _ = build(config_path)
    vocab = model.get_base_model().config.vocab_size
    for spec in specs:
        rows_text, width_text = spec.split(":")
        rows, width = [int(r) for r in rows_text.split(",")], int(width_text)
        ids, mask, labels = batch(rows, width, vocab)
        step(model, ids, mask, labels)  # warm-up: plans, workspaces
        torch.cuda.synchronize()
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        t0 = time.time()
        with torch.profiler.profile(activities=activities) as prof:
            step(model, ids, mask, labels)
            torch.cuda.synchronize()
        name = "hf-peft-%s-w%d" % ("x".join(str(r) for r in rows), width)
        raw = "/tmp/%s.json" % name
        prof.export_chrome_trace(raw)
        device_s, share, launches = independent_share(raw)
        with open(raw, "rb") as src, gzip.open(os.path.join(out_dir, name + ".json.gz"), "wb", 6) as dst:
            shutil.copyfileobj(src, dst)
        print("%s: step %.3f s (profiled), device %.3f s, %d kernels, attention share %.2f %% (regex %s)"
              % (name, time.time() - t0, device_s, launches, 100 * share, ATTENTION.pattern), flush=True)


if __name__ == "__main__":
    main()
