#!/usr/bin/env python3
"""transformers + peft padding-free training steps (TRL's padding_free / DataCollatorWithFlattening): a small
Llama config, LoRA on every linear, gradient checkpointing, bf16 on one GPU; each batch is ONE row of several
documents with position_ids restarting at 0 in each document and NO attention mask, the first token of each
document no label. transformers detects the packed documents from the restarting position_ids and gives each
attention implementation its document mask: under `sdpa` a 4-D block-diagonal causal mask (the masked efficient
kernel at the full W x W, plus the mask path: stepcast's `block-mask`), under `flex_attention` a FlexAttention
BlockMask (only the documents' blocks computed: stepcast's `varlen` work, Σ Lᵢ²).

  hf_padding_free.py OUT.jsonl

For each attention implementation and each document mix (2-3 shapes of 8,192 tokens): HF_REPS timed
forward + backward steps after one warm-up; a record with step_s (median), peak_gib, the loss (the two
implementations must agree: same weights, same tokens) and Σ Lᵢ². Then one try of flex_attention at
head_dim 512 (Gemma-4's global heads): FlexAttention's Triton kernel needs 263,168 bytes of shared memory
there and the H200 has 232,448 per block, so it fails to compile on Gemma-4 (an independent try on the H200);
the record says whether it failed and how. That is why stepcast's tier rule gives Gemma-4's 512-wide heads the
CUTLASS efficient varlen kernel and not flex (docs/planner.md "Packing").
H200 estimate: ~60 s (two model builds, flex compiles ~20 s per shape).
"""
import json
import statistics
import sys
import time

import peft
import torch
import transformers

REPS = 3
MIXES = {  # document lengths of one padding-free row, 8,192 tokens each
    "8x1024": [1024] * 8,
    "4096+2048+1024+1024": [4096, 2048, 1024, 1024],
    "7000+600+592": [7000, 600, 592],
}


def build(attn_implementation, head_dim=64, heads=16):
    config = transformers.LlamaConfig(hidden_size=1024,
                                      intermediate_size=2816, num_hidden_layers=8, num_attention_heads=heads,
                                      num_key_value_heads=heads // 2, head_dim=head_dim, vocab_size=32000,
                                      max_position_embeddings=16384)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation=attn_implementation,
                                                          dtype=torch.bfloat16).cuda()
    model.gradient_checkpointing_enable()
    model.enable_input_require_grads()
    lora = peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear")
    return peft.get_peft_model(model, lora), config


def flattened(documents, vocab, seed):
    """DataCollatorWithFlattening's batch: one row, position_ids restarting, labels -100 at each document start."""
    g = torch.Generator().manual_seed(seed)
    total = sum(documents)
    ids = torch.randint(1, vocab, (1, total), generator=g)
    positions = torch.cat([torch.arange(n) for n in documents]).unsqueeze(0)
    labels = ids.clone()
    start = 0
    for n in documents:
        labels[0, start] = -100
        start += n
    return {"input_ids": ids.cuda(), "position_ids": positions.cuda(), "labels": labels.cuda()}


def step(model, batch):
    out = model(**batch)
    out.loss.backward()
    model.zero_grad(set_to_none=True)
    return out.loss.item()


def measure(model, batch):
    loss = step(model, batch)  # warm-up: flex compiles here
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        step(model, batch)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return loss, statistics.median(times), torch.cuda.max_memory_allocated() / 2**30


def record(out, **fields):
    fields.update({"gpu": torch.cuda.get_device_name(0), "torch_version": torch.__version__,
                   "transformers_version": transformers.__version__, "peft_version": peft.__version__,
                   "source": "tools/device/hf_padding_free.py"})
    out.write(json.dumps(fields) + "\n")
    out.flush()
    print(json.dumps(fields), flush=True)


def main():
    out_path = sys.argv[1]
    with open(out_path, "a") as out:
        for impl in ("sdpa", "flex_attention"):
            model, config = build(impl)
            for name, documents in MIXES.items():
                batch = flattened(documents, config.vocab_size, 1)
                try:
                    loss, step_s, peak = measure(model, batch)
                    record(out, probe="padding-free", attn_implementation=impl, mix=name, documents=documents,
                           width=sum(documents), sum_doc_len_sq=sum(n * n for n in documents), loss=loss,
                           step_s=step_s, peak_gib=peak)
                except Exception as e:  # noqa: BLE001 - the failure is the measurement
                    record(out, probe="padding-free", attn_implementation=impl, mix=name, failed=repr(e)[:500])
            del model
            torch.cuda.empty_cache()
        # Gemma-4's global heads are 512 wide: does flex compile there?
        try:
            model, config = build("flex_attention", head_dim=512, heads=4)
            loss, step_s, peak = measure(model, flattened([2048, 1024, 1024], config.vocab_size, 1))
            record(out, probe="flex-head-dim-512", attn_implementation="flex_attention", head_dim=512,
                   compiled=True, step_s=step_s)
        except Exception as e:  # noqa: BLE001
            record(out, probe="flex-head-dim-512", attn_implementation="flex_attention", head_dim=512,
                   compiled=False, failed=repr(e)[:500])


if __name__ == "__main__":
    main()
