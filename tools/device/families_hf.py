#!/usr/bin/env python3
"""transformers + peft on any family stepcast reads, for the families sweep (tools/device/families.sh):
the model class from the config's model_type (AutoConfig.for_model, AutoModelForCausalLM.from_config),
attn_implementation="sdpa", LoRA r=16 on q, k, v, o (the harness's targets in families.sh), gradient
checkpointing, bf16 random weights built directly on the GPU (no network).
Timing, padding and records as tools/device/hf_fidelity.py, whose helpers it uses.

usage: families_hf.py CONFIG.json OUT.jsonl RxW[:PAD] ...   (run on the GPU machine)
"""
import json
import os
import statistics
import sys
import time

import peft
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_fidelity import REPS, WARMUP, batch, padded_rows, step  # noqa: E402

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]


def build(config_path):
    cfg = json.load(open(config_path))
    model_type = cfg.pop("model_type")
    cfg.pop("architectures", None)
    config = AutoConfig.for_model(model_type, **cfg)
    config._attn_implementation = "sdpa"
    config.use_cache = False
    t0 = time.time()
    torch.manual_seed(1234)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config)
    torch.set_default_dtype(previous)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
    model.enable_input_require_grads()
    lora = peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, target_modules=TARGETS, task_type="CAUSAL_LM")
    model = peft.get_peft_model(model, lora)
    model.train()
    base = model.get_base_model()
    info = {
        "params": sum(p.numel() for p in base.parameters()),
        "lora_modules": sum(1 for _, m in model.named_modules() if hasattr(m, "lora_A") and len(m.lora_A) > 0),
        "experts_implementation": getattr(base.config, "_experts_implementation", None),
        "attn_implementation": base.config._attn_implementation,
        "build_s": time.time() - t0,
    }
    print("built", info, flush=True)
    return model, info


def main():
    config_path, out_path, shapes = sys.argv[1], sys.argv[2], sys.argv[3:]
    name = os.path.splitext(os.path.basename(config_path))[0]
    model, info = build(config_path)
    vocab = model.get_base_model().config.vocab_size
    gpu = torch.cuda.get_device_name(0)
    for spec in shapes:
        shape, _, pad = spec.partition(":")
        r, w = (int(x) for x in shape.split("x"))
        rows = padded_rows(r, w, float(pad) if pad else 0.0)
        ids, mask, labels = batch(rows, w, vocab)
        record = {"model": name, "gpu": gpu, "tier": "hf-peft/sdpa-" + str(info["experts_implementation"]),
                  "rows": rows, "width": w, "kept_tokens": sum(n - 1 for n in rows),
                  "probe": "padding" if pad else "scaling",
                  "source": "tools/device/families_hf.py " + " ".join(sys.argv[1:]),
                  "torch_version": torch.__version__, "transformers_version": transformers.__version__,
                  "peft_version": peft.__version__, "params": info["params"], "lora_modules": info["lora_modules"],
                  "experts_implementation": info["experts_implementation"],
                  "attn_implementation": info["attn_implementation"], "warmup": WARMUP, "repetitions": REPS}
        try:
            for _ in range(WARMUP):
                step(model, ids, mask, labels)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            times = []
            for _ in range(REPS):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                record["loss"] = step(model, ids, mask, labels)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / 1000.0)
            record.update(step_s=statistics.median(times), times_s=times,
                          peak_gib=torch.cuda.max_memory_allocated() / 2**30)
        except torch.OutOfMemoryError:
            record["oom"] = True
            model.zero_grad(set_to_none=True)
            torch.cuda.empty_cache()
        with open(out_path, "a") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
        print(json.dumps({k: record.get(k) for k in ("model", "rows", "width", "step_s", "peak_gib", "oom")}),
              flush=True)


if __name__ == "__main__":
    main()
