#!/usr/bin/env python3
"""Fidelity check of the harness's default tier against the real stack the bar names: Hugging Face
transformers + peft, attn_implementation="sdpa", LoRA r=16 on q,k,v,o + dense gate,up,down (205 modules
on Gemma-4 26B-A4B), gradient checkpointing, bf16 random weights built directly on the GPU (no host copy).
Times forward + backward with CUDA events (HF_WARMUP warm-ups, HF_REPS timed, median) at the shapes given and appends
measurement records with tier "hf-peft/<attn>-<experts>" so `stepcast predict`/`drift` can read them.

usage: hf_fidelity.py CONFIG.json OUT.jsonl RxW[:PAD] ...   (run on the GPU machine)
"""
import json
import os
import statistics
import sys
import time


import peft
import torch
import transformers
from transformers import Gemma4ForCausalLM, Gemma4TextConfig

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness_rows import padded_rows  # noqa: E402  (the harness's rule, harness/probes.cpp)

REPS = int(os.environ.get("HF_REPS", "2"))
WARMUP = int(os.environ.get("HF_WARMUP", "1"))
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def build(config_path):
    cfg = json.load(open(config_path))
    cfg.pop("model_type", None)
    config = Gemma4TextConfig(**cfg)
    config._attn_implementation = "sdpa"
    config.use_cache = False
    t0 = time.time()
    torch.manual_seed(1234)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = Gemma4ForCausalLM(config)
    torch.set_default_dtype(previous)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
    model.enable_input_require_grads()
    lora = peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, target_modules=TARGETS, task_type="CAUSAL_LM")
    model = peft.get_peft_model(model, lora)
    model.train()
    wrapped = sum(1 for _, m in model.named_modules() if hasattr(m, "lora_A") and len(m.lora_A) > 0)
    base = model.get_base_model()
    info = {
        "params": sum(p.numel() for p in base.parameters()),
        "lora_modules": wrapped,
        "experts_implementation": getattr(base.config, "_experts_implementation", None),
        "attn_implementation": base.config._attn_implementation,
        "build_s": time.time() - t0,
    }
    print("built", info, flush=True)
    return model, info


def batch(rows, width, vocab):
    ids = torch.randint(1, vocab, (len(rows), width), device="cuda")
    mask = torch.zeros(len(rows), width, dtype=torch.long, device="cuda")
    for r, n in enumerate(rows):
        mask[r, :n] = 1
    ids = ids * mask  # pad id 0
    labels = ids.masked_fill(mask == 0, -100)
    return ids, mask, labels


def step(model, ids, mask, labels):
    loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    loss.backward()
    model.zero_grad(set_to_none=True)
    return loss.item()


def trace_sdpa():
    """HF_TRACE_SDPA=1: print each distinct way transformers calls SDPA (head_dim, heads, mask, causal, gqa)."""
    original = torch.nn.functional.scaled_dot_product_attention
    seen = set()

    def traced(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        key = (q.shape[-1], q.shape[1], k.shape[1], None if attn_mask is None else str(attn_mask.dtype), is_causal,
               enable_gqa)
        if key not in seen:
            seen.add(key)
            print("sdpa call: head_dim=%d q_heads=%d kv_heads=%d mask=%s is_causal=%s enable_gqa=%s" % key, flush=True)
        return original(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                        enable_gqa=enable_gqa)

    torch.nn.functional.scaled_dot_product_attention = traced


def main():
    config_path, out_path, shapes = sys.argv[1], sys.argv[2], sys.argv[3:]
    if os.environ.get("HF_TRACE_SDPA"):
        trace_sdpa()
    model, info = build(config_path)
    vocab = model.get_base_model().config.vocab_size
    gpu = torch.cuda.get_device_name(0)
    for spec in shapes:
        shape, _, pad = spec.partition(":")
        r, w = (int(x) for x in shape.split("x"))
        rows = padded_rows(r, w, float(pad) if pad else 0.0)
        ids, mask, labels = batch(rows, w, vocab)
        record = {"model": "gemma-4-26b-a4b", "gpu": gpu,
                  "tier": "hf-peft/sdpa-" + str(info["experts_implementation"]),
                  "rows": rows, "width": w, "kept_tokens": sum(n - 1 for n in rows),
                  "probe": "padding" if pad else "scaling",
                  "source": "tools/device/hf_fidelity.py " + " ".join(sys.argv[1:]),
                  "torch_version": torch.__version__, "transformers_version": transformers.__version__,
                  "peft_version": peft.__version__, "lora_modules": info["lora_modules"],
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
            f.write(json.dumps(record) + "\n")
        print(spec, record.get("step_s"), record.get("peak_gib"), flush=True)


if __name__ == "__main__":
    main()
