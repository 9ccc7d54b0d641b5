#!/usr/bin/env python3
"""The transformers + peft executor of a campaign's device plan (docs/campaigns.md): runs the `hf-peft` items of
`NAME.plan.json` (written by `stepcast campaign predict`, which decides every micro-batch with the planner's own
batching) on this machine's GPU and writes measurement records, one JSON line per micro-batch or probe, appended and
flushed as it goes, so a killed item keeps what it measured.

  hf_campaign.py PLAN.json OUTDIR [--only ID[,ID...]] [--dry-run]

For each item (run it once per fresh process: tools/device/campaign.sh passes --only): the model from its config
(AutoConfig.for_model + AutoModelForCausalLM.from_config, bf16 random weights built on the GPU: no network, no host
copy), attn_implementation, the experts implementation, gradient checkpointing (reentrant / non-reentrant / off),
LoRA (peft) with the item's rank, alpha, dropout and targets; then its run (the plan's micro-batches in order: a
collator that pads right to the planned width with labels -100 on pads, forward, loss / accumulation, backward, and
at each window's end clip 1.0 + AdamW + zero_grad), then its probes (warm-up, timed repetitions; a CUPTI-format
kernel table of one profiled step where the probe asks for `kernels`; where it asks for `memory_snapshot`, one step
under the allocator's history and what is live at its peak, grouped by the Python line that allocated it; where it
asks for `host_profile`, its first step and one repeat under torch.profiler, `host_profile.first` / `.repeat`: wall
clock, device allocations, reserved growth, kernels, and host time by operator and runtime call, the probe's
first_step_s then left out as the profiler's overhead is in it). No warm-up before the run: a run pays what a
real run pays (process start, first-seen shapes; the item's `label` says whether the machine's kernel cache was
cold, and every micro-batch counts the driver JIT cache files it added).

Memory, on every record (GiB = 2^30 bytes; docs/campaigns.md lists the fields): `peak_gib` = max allocated over the
micro-batch, `peak_reserved_gib`, and a `memory` object (before, forward peak, backward peak, after, the optimizer
step's peak on a window's last micro-batch, device used from cudaMemGetInfo, allocator retries); the run's first
record adds `memory_start` (weights + adapters allocated, CUDA context outside the allocator). Reading the
allocator's statistics does not synchronise: the timing is the same as without them.

Every SDPA call is traced (the arguments transformers passes, and the backend PyTorch's dispatcher picks for them,
torch._fused_sdp_choice) and each record carries the distinct calls of its micro-batch: the attention path as run.

--dry-run checks the plan and prints what would run, without importing torch, transformers or peft (CI runs it).
Exit codes: 0 done, 1 an item failed (the others still ran), 2 a bad plan or command line.
"""
import json
import os
import statistics
import sys
import time

PROCESS_T0 = time.perf_counter()
GIB = float(2 ** 30)
BACKENDS = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn"}  # torch.nn.attention.SDPBackend order
CHECKPOINTING = ("reentrant", "non-reentrant", "off")
ALLOCATORS = ("default", "expandable-segments")
EXPERTS = ("grouped_mm", "batched_mm", "eager")


class PlanError(Exception):
    pass


def require(cond, where, message):
    if not cond:
        raise PlanError("%s: %s" % (where, message))


def check_rows(rows, width, where):
    require(isinstance(rows, list) and rows and all(isinstance(n, int) and n >= 1 for n in rows), where,
            "rows = %r. Violated constraint: a non-empty list of positive integers" % (rows,))
    require(isinstance(width, int) and width >= max(rows), where,
            "width = %r. Violated constraint: an integer >= the longest row (%d)" % (width, max(rows)))


def check_item(item, root, where):
    """Every field the executor reads, with its constraint; PlanError names the item and the key."""
    require(isinstance(item, dict), where, "an item must be an object")
    for key in ("id", "stack", "model", "config", "gpu", "tier"):
        require(isinstance(item.get(key), str) and item[key], where, "%s missing or not a string" % key)
    where = "%s (item %s)" % (where, item["id"])
    if item["stack"] != "hf-peft":
        return False
    require(os.path.isfile(os.path.join(root, item["config"])), where, "config %s: no such file" % item["config"])
    lora = item.get("lora")
    require(isinstance(lora, dict), where, "lora missing")
    require(isinstance(lora.get("full", False), bool), where, "lora.full must be true or false")
    if not lora.get("full"):
        require(isinstance(lora.get("rank"), int) and lora["rank"] >= 1, where, "lora.rank must be an integer >= 1")
        require(isinstance(lora.get("targets"), list) and lora["targets"], where,
                "lora.targets must be a non-empty list")
    require(isinstance(lora.get("autocast", False), bool), where, "lora.autocast must be true or false")
    require(lora.get("adapter_dtype", "float32") in ("float32", "bfloat16"), where,
            "lora.adapter_dtype must be float32 or bfloat16")
    require(item.get("gradient_checkpointing", "reentrant") in CHECKPOINTING, where,
            "gradient_checkpointing must be one of %s" % ", ".join(CHECKPOINTING))
    require(item.get("allocator", "default") in ALLOCATORS, where, "allocator must be one of %s" % ", ".join(ALLOCATORS))
    require(item.get("experts_implementation") in EXPERTS + (None,), where,
            "experts_implementation must be one of %s" % ", ".join(EXPERTS))
    require(item.get("dtype", "bfloat16") == "bfloat16", where, "dtype: only bfloat16 is run")
    run = item.get("run")
    if run is not None:
        for key in ("id", "policy", "micro_batch", "accumulation", "micro_batches"):
            require(key in run, where, "run.%s missing" % key)
        require(isinstance(run["accumulation"], int) and run["accumulation"] >= 1, where, "run.accumulation >= 1")
        require(isinstance(run["micro_batches"], list) and run["micro_batches"], where, "run.micro_batches is empty")
        for i, mb in enumerate(run["micro_batches"]):
            check_rows(mb.get("rows"), mb.get("width"), "%s run.micro_batches[%d]" % (where, i))
    for i, probe in enumerate(item.get("probes") or []):
        check_rows(probe.get("rows"), probe.get("width"), "%s probes[%d]" % (where, i))
    require(run is not None or item.get("probes"), where, "an item needs a run or probes")
    return True


def load_plan(path, only):
    root = os.getcwd()
    try:
        plan = json.load(open(path))
    except (OSError, ValueError) as e:
        raise PlanError("%s: %s" % (path, e))
    require(isinstance(plan, dict) and plan.get("schema_version") == 1, path, "schema_version must be 1")
    items = plan.get("items")
    require(isinstance(items, list) and items, path, "items must be a non-empty list")
    chosen = []
    for i, item in enumerate(items):
        hf = check_item(item, root, "%s: items[%d]" % (path, i))
        if hf and (not only or item["id"] in only):
            chosen.append(item)
    missing = set(only) - {item["id"] for item in items}
    require(not missing, path, "--only names no item: %s" % ", ".join(sorted(missing)))
    return plan, chosen


def item_file(outdir, item):
    return os.path.join(outdir, item.get("records") or item["id"].replace("/", "__") + ".jsonl")


def describe(item):
    lora = item["lora"]
    trains = "full fine-tuning" if lora.get("full") else "lora r%d on %s%s" % (
        lora["rank"], ",".join(lora["targets"]), " under autocast" if lora.get("autocast") else "") + (
        ", bf16 adapters" if lora.get("adapter_dtype") == "bfloat16" else "")
    parts = [item["id"], item["model"], trains,
             "ckpt " + item.get("gradient_checkpointing", "reentrant"), "label " + item.get("label", "warm")]
    run = item.get("run")
    if run:
        tokens = sum(w * len(mb["rows"]) for mb in run["micro_batches"] for w in [mb["width"]])
        real = sum(sum(mb["rows"]) for mb in run["micro_batches"])
        parts.append("run %s: %d micro-batches, %d tokens processed, %.1f %% padding" %
                     (run["policy"], len(run["micro_batches"]), tokens, 100.0 * (1 - real / tokens)))
    if item.get("probes"):
        parts.append("%d probes" % len(item["probes"]))
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------------------------
# On the GPU (everything below imports torch lazily, so --dry-run needs none of it).

class Executor:
    def __init__(self, plan, item, outdir):
        import torch
        self.torch = torch
        self.plan, self.item, self.outdir = plan, item, outdir
        self.out_path = item_file(outdir, item)
        self.limit_s = float(item.get("time_limit_s") or 1e9)
        self.started = time.perf_counter()
        self.sdpa_calls = {}
        self.jit_dir = os.path.expanduser(os.environ.get("CUDA_CACHE_PATH", "~/.nv/ComputeCache"))

    # -- the model ------------------------------------------------------------------------------------------
    def build(self):
        import peft
        import transformers
        from transformers import AutoConfig, AutoModelForCausalLM
        torch, item = self.torch, self.item
        cfg = json.load(open(item["config"]))
        outer = cfg.get("model_type")
        if "text_config" in cfg:  # a multimodal wrapper (Gemma-3, Llama-4): train its text model
            cfg = dict(cfg["text_config"])
            cfg.setdefault("model_type", outer + "_text")
        model_type = cfg.pop("model_type")
        for key in ("architectures", "auto_map", "torch_dtype", "dtype", "transformers_version"):
            cfg.pop(key, None)
        config = AutoConfig.for_model(model_type, **cfg)
        config._attn_implementation = item.get("attn_implementation", "sdpa")
        config.use_cache = False
        t0 = time.perf_counter()
        torch.manual_seed(1234)
        previous = torch.get_default_dtype()
        torch.set_default_dtype(torch.bfloat16)
        with torch.device("cuda"):
            model = AutoModelForCausalLM.from_config(config)
        torch.set_default_dtype(previous)
        experts = item.get("experts_implementation")
        if experts and hasattr(model, "set_experts_implementation"):
            try:
                model.set_experts_implementation(experts)
            except Exception as e:  # a dense model has no experts to set
                print("experts_implementation not set: %s" % e, flush=True)
        ckpt = item.get("gradient_checkpointing", "reentrant")
        if ckpt != "off":
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": ckpt == "reentrant"})
            model.enable_input_require_grads()
        lora = item["lora"]
        if lora.get("full"):
            # A full fine-tune: no adapters, every parameter trains in the weights' dtype (bf16), as the HF Trainer
            # runs a bf16 model without autocast; AdamW below keeps its states like the parameters.
            model.requires_grad_(True)
        else:
            config_lora = peft.LoraConfig(r=lora["rank"], lora_alpha=lora.get("alpha", 2 * lora["rank"]),
                                          lora_dropout=lora.get("dropout", 0.05), target_modules=lora["targets"],
                                          task_type="CAUSAL_LM")
            # peft casts bf16 adapters up to fp32 unless autocast_adapter_dtype=False keeps them in the base's bf16
            # (docs/method.md, "bf16 adapters"); the record's lora.dtype says which ran.
            model = peft.get_peft_model(model, config_lora,
                                        autocast_adapter_dtype=lora.get("adapter_dtype", "float32") != "bfloat16")
        model.train()
        if lora.get("autocast"):
            # As accelerate's prepare_model wraps it for the HF Trainer and TRL with bf16=True: the forward (and the
            # loss inside it) under torch.autocast(bf16), its floating outputs converted to fp32. peft's fp32
            # adapters then multiply in bf16 (docs/method.md, "LoRA under autocast").
            from accelerate.utils import convert_outputs_to_fp32
            model.forward = convert_outputs_to_fp32(torch.autocast(device_type="cuda", dtype=torch.bfloat16)(model.forward))
        base = model if lora.get("full") else model.get_base_model()
        wrapped = sum(1 for _, m in model.named_modules() if hasattr(m, "lora_A") and len(m.lora_A) > 0)
        trainable = [p for p in model.parameters() if p.requires_grad]
        experts_now = None
        if hasattr(base, "get_experts_implementation"):
            try:
                experts_now = base.get_experts_implementation()
            except Exception:
                experts_now = None
        self.info = {
            "params": sum(p.numel() for p in base.parameters()),
            "trainable_params": sum(p.numel() for p in trainable),
            "lora_modules": wrapped,
            "lora_dtype": str(trainable[0].dtype).replace("torch.", "") if trainable else None,
            "experts_implementation": experts_now if experts_now else getattr(base.config, "_experts_implementation",
                                                                              None),
            "attn_implementation": base.config._attn_implementation,
            "build_s": time.perf_counter() - t0,
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "peft": peft.__version__},
        }
        self.model, self.vocab = model, base.config.vocab_size
        print("built %s: %s" % (item["model"], json.dumps(self.info, default=str)), flush=True)

    def trace_sdpa(self):
        """Wraps SDPA to note each distinct call and the backend the dispatcher picks for it (host side only)."""
        torch = self.torch
        original = torch.nn.functional.scaled_dot_product_attention
        calls = self.sdpa_calls

        def traced(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False, **kw):
            mask = "none" if attn_mask is None else "%s%s" % (str(attn_mask.dtype).replace("torch.", ""),
                                                             list(attn_mask.shape))
            key = (q.shape[-1], v.shape[-1], q.shape[1], k.shape[1], q.shape[-2], k.shape[-2], mask, bool(is_causal),
                   bool(enable_gqa))
            entry = calls.get(key)
            if entry is None:
                try:
                    backend = BACKENDS.get(int(torch._fused_sdp_choice(q, k, v, attn_mask, dropout_p, is_causal,
                                                                       scale=scale, enable_gqa=enable_gqa)), "?")
                except Exception as e:  # older signatures
                    backend = "unknown (%s)" % type(e).__name__
                entry = calls[key] = {"qk_head_dim": key[0], "v_head_dim": key[1], "q_heads": key[2],
                                      "kv_heads": key[3], "q_len": key[4], "kv_len": key[5], "mask": mask,
                                      "is_causal": key[7], "enable_gqa": key[8], "backend": backend, "calls": 0}
            entry["calls"] += 1
            return original(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                            enable_gqa=enable_gqa, **kw)

        torch.nn.functional.scaled_dot_product_attention = traced

    def take_sdpa(self):
        """The distinct SDPA calls since the last take, widths left out (the record has them)."""
        merged = {}
        for entry in self.sdpa_calls.values():
            key = tuple((k, v) for k, v in entry.items() if k not in ("calls", "q_len", "kv_len", "mask")) + (
                ("mask", entry["mask"].split("[")[0]),)
            m = merged.setdefault(key, dict(entry, mask=entry["mask"].split("[")[0], calls=0))
            m["calls"] += entry["calls"]
            m.pop("q_len", None)
            m.pop("kv_len", None)
        self.sdpa_calls.clear()
        return list(merged.values())

    # -- records --------------------------------------------------------------------------------------------
    def base_record(self, rows, width, probe):
        item, torch = self.item, self.torch
        lora = item["lora"]
        return {"model": item["model"], "gpu": torch.cuda.get_device_name(0), "tier": item["tier"],
                "rows": rows, "width": width, "kept_tokens": sum(max(0, n - 1) for n in rows), "probe": probe,
                "label": item.get("label", "warm"), "campaign": self.plan.get("campaign"), "item": item["id"],
                "source": "tools/device/hf_campaign.py %s --only %s" % (self.plan.get("plan_path", ""), item["id"]),
                "lora": ({"rank": 0, "full": True, "targets": [], "modules": 0, "dtype": self.info["lora_dtype"]}
                         if lora.get("full") else
                         {"rank": lora["rank"], "alpha": lora.get("alpha", 2 * lora["rank"]),
                          "dropout": lora.get("dropout", 0.05), "targets": lora["targets"],
                          "modules": self.info["lora_modules"], "dtype": self.info["lora_dtype"],
                          **({"autocast": True} if lora.get("autocast") else {})}),
                "dtype": item.get("dtype", "bfloat16"),  # the weights as loaded (the config's torch_dtype is ignored)
                "gradient_checkpointing": item.get("gradient_checkpointing", "reentrant"),
                "attn_implementation": self.info["attn_implementation"],
                "experts_implementation": self.info["experts_implementation"],
                "torch_version": self.info["versions"]["torch"],
                "transformers_version": self.info["versions"]["transformers"],
                "peft_version": self.info["versions"]["peft"]}

    def append(self, record):
        with open(self.out_path, "a") as f:
            f.write(json.dumps(record, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def jit_files(self):
        return sum(len(files) for _, _, files in os.walk(self.jit_dir))

    # -- one micro-batch --------------------------------------------------------------------------------------
    def collate(self, rows, width, generator):
        """A data collator's work: token ids padded right to `width` (pad id 0), attention mask, labels -100 on pads."""
        torch = self.torch
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        mask = torch.zeros(len(rows), width, dtype=torch.long)
        for r, n in enumerate(rows):
            ids[r, :n] = torch.randint(1, self.vocab, (n,), generator=generator)
            mask[r, :n] = 1
        labels = ids.masked_fill(mask == 0, -100)
        return ids.to("cuda"), mask.to("cuda"), labels.to("cuda")

    def memory_now(self):
        torch = self.torch
        return torch.cuda.memory_allocated() / GIB, torch.cuda.memory_reserved() / GIB

    def micro_batch(self, rows, width, generator, scale):
        """Forward + backward of one micro-batch: (wall s, loss, memory fields). Peaks are read per phase."""
        torch = self.torch
        allocated0, reserved0 = self.memory_now()
        torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        ids, mask, labels = self.collate(rows, width, generator)
        loss = self.model(input_ids=ids, attention_mask=mask, labels=labels).loss
        forward_peak = torch.cuda.max_memory_allocated() / GIB
        forward_reserved = torch.cuda.max_memory_reserved() / GIB
        torch.cuda.reset_peak_memory_stats()
        (loss * scale).backward()
        value = loss.item()
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        backward_peak = torch.cuda.max_memory_allocated() / GIB
        backward_reserved = torch.cuda.max_memory_reserved() / GIB
        allocated1, _ = self.memory_now()
        free, total = torch.cuda.mem_get_info()
        stats = torch.cuda.memory_stats()
        memory = {"allocated_before_gib": allocated0, "reserved_before_gib": reserved0,
                  "forward_peak_gib": forward_peak, "backward_peak_gib": backward_peak,
                  "allocated_after_gib": allocated1, "device_used_gib": (total - free) / GIB,
                  "card_total_gib": total / GIB, "alloc_retries": stats.get("num_alloc_retries", 0),
                  "inactive_split_gib": stats.get("inactive_split_bytes.all.peak", 0) / GIB}
        return wall, value, max(forward_peak, backward_peak), max(forward_reserved, backward_reserved), memory

    def optimizer_step(self, params, optimizer):
        torch = self.torch
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        return (time.perf_counter() - t0, torch.cuda.max_memory_allocated() / GIB,
                torch.cuda.max_memory_reserved() / GIB)

    def out_of_time(self):
        return time.perf_counter() - self.started > self.limit_s

    # -- the run ----------------------------------------------------------------------------------------------
    def run(self):
        torch, run = self.torch, self.item["run"]
        accumulation = run["accumulation"]
        plan = run["micro_batches"]
        params = [p for p in self.model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=1e-4)
        generator = torch.Generator().manual_seed(int(run.get("seed", 0)))
        torch.cuda.synchronize()
        weights, reserved = self.memory_now()
        free, total = torch.cuda.mem_get_info()
        memory_start = {"weights_gib": weights, "reserved_gib": reserved,
                        "context_gib": (total - free) / GIB - reserved, "card_total_gib": total / GIB,
                        "allocator": "expandable_segments" if "expandable_segments:True" in os.environ.get(
                            "PYTORCH_CUDA_ALLOC_CONF", "") else "default"}
        seen = set()
        jit_before = jit = self.jit_files()
        t_run = time.perf_counter()
        for index, mb in enumerate(plan):
            if self.out_of_time():
                print("time limit %.0f s reached after %d of %d micro-batches" % (self.limit_s, index, len(plan)),
                      flush=True)
                return False
            rows, width = mb["rows"], mb["width"]
            record = self.base_record(rows, width, "run")
            fields = {"id": run["id"], "policy": run["policy"], "micro_batch": run["micro_batch"],
                      "accumulation": accumulation, "max_length": run.get("max_length", 0),
                      "pad_to_multiple_of": run.get("pad_to_multiple_of", 1), "seed": run.get("seed", 0),
                      "index": index, "optimizer_step": index // accumulation,
                      "first_seen": (len(rows), width) not in seen}
            seen.add((len(rows), width))
            try:
                wall, loss, peak, peak_reserved, memory = self.micro_batch(rows, width, generator, 1.0 / accumulation)
                record.update(step_s=wall, loss=loss, peak_gib=peak, peak_reserved_gib=peak_reserved)
            except torch.OutOfMemoryError:
                record.update(oom=True, peak_valid=False)
                memory = {"card_total_gib": torch.cuda.mem_get_info()[1] / GIB}
                self.model.zero_grad(set_to_none=True)
                torch.cuda.empty_cache()
            closes = (index + 1) % accumulation == 0 or index + 1 == len(plan)
            if closes and not record.get("oom"):
                fields["optimizer_s"], memory["optimizer_peak_gib"], memory["optimizer_reserved_gib"] = \
                    self.optimizer_step(params, optimizer)
            fields["elapsed_s"] = time.perf_counter() - t_run
            now = self.jit_files()
            record["jit_cache_files_added"], jit = now - jit, now
            record["sdpa"] = self.take_sdpa()
            record["memory"] = memory
            if index == 0:
                fields["corpus_lengths"] = run.get("corpus_lengths", [])
                record.update(jit_cache_files_before_run=jit_before, memory_start=memory_start,
                              process_startup_s=t_run - PROCESS_T0, build_s=self.info["build_s"],
                              params=self.info["params"], trainable_params=self.info["trainable_params"])
            record["run"] = fields
            self.append(record)
            print("%s %d/%d %dx%d %s%s elapsed %.2f s peak %.2f GiB" % (
                run["id"], index + 1, len(plan), len(rows), width,
                "OOM" if record.get("oom") else "%.3f s" % record["step_s"],
                " +opt %.3f" % fields["optimizer_s"] if "optimizer_s" in fields else "", fields["elapsed_s"],
                record.get("peak_gib", float("nan"))), flush=True)
        print("run %s: %d micro-batches in %.2f s" % (run["id"], len(plan), time.perf_counter() - t_run), flush=True)
        return True

    # -- probes -----------------------------------------------------------------------------------------------
    def probe(self, spec, generator):
        torch = self.torch
        rows, width = spec["rows"], spec["width"]
        padded = sum(rows) < len(rows) * width
        record = self.base_record(rows, width, "padding" if padded else "scaling")
        warmup, reps = int(spec.get("warmup", 1)), int(spec.get("repetitions", 2))
        record.update(warmup=warmup, repetitions=reps)
        self.take_sdpa()  # calls of earlier probes' extra steps (kernel tables, snapshots) are not this probe's
        try:
            batch = self.collate(rows, width, generator)
            jit0 = self.jit_files()
            profiled = bool(spec.get("host_profile"))
            if profiled:  # the first-seen step itself, under the profiler: its first_step_s would carry the overhead
                first_profile = self.host_profile(batch)
            else:
                first = self.timed(batch)
            for _ in range(max(0, warmup - 1)):
                self.timed(batch)
            record["jit_cache_files_added"] = self.jit_files() - jit0
            torch.cuda.reset_peak_memory_stats()
            times = [self.timed(batch) for _ in range(reps)]
            record.update(step_s=statistics.median(times), times_s=times,
                          peak_gib=torch.cuda.max_memory_allocated() / GIB,
                          peak_reserved_gib=torch.cuda.max_memory_reserved() / GIB)
            if not profiled:
                record["first_step_s"] = first
            record["sdpa"] = self.take_sdpa()
            if profiled:
                record["host_profile"] = {"first": first_profile, "repeat": self.host_profile(batch)}
                self.take_sdpa()  # the repeat's calls are the point's again
            if spec.get("kernels"):
                record["kernel_table"], record["launches_per_step"] = self.kernel_table(batch, rows, width)
            if spec.get("memory_snapshot"):
                record["memory_at_peak"] = self.memory_at_peak(batch)
        except torch.OutOfMemoryError:
            record.update(oom=True, peak_valid=False)
            self.model.zero_grad(set_to_none=True)
            torch.cuda.empty_cache()
        self.append(record)
        print("probe %dx%d rows %s: %s peak %s" % (len(rows), width, rows, record.get("step_s", "OOM"),
                                                     record.get("peak_gib")), flush=True)

    def timed(self, batch):
        torch = self.torch
        ids, mask, labels = batch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        self.model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
        end.record()
        end.synchronize()
        self.model.zero_grad(set_to_none=True)
        return start.elapsed_time(end) / 1000.0

    def host_profile(self, batch, top=80):
        """One step under torch.profiler (CPU operators and CUDA runtime calls, kernels for their count): its wall
        clock (synchronised, overhead included), the allocator's device allocations and growth, and the operators
        and runtime calls by self host time, largest first, in microseconds (docs/host.md, "First-seen shapes")."""
        torch = self.torch
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        stats0, reserved0 = torch.cuda.memory_stats(), torch.cuda.memory_reserved()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.profiler.profile(activities=activities) as prof:
            ids, mask, labels = batch
            self.model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
            torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        self.model.zero_grad(set_to_none=True)
        stats1 = torch.cuda.memory_stats()
        rows, kernels, kernel_us = [], 0, 0.0
        for e in prof.key_averages():
            device_us = float(getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0)) or 0)
            if device_us > 0 and float(e.self_cpu_time_total) == 0:
                kernels += int(e.count)
                kernel_us += device_us
                continue
            rows.append({"name": e.key, "count": int(e.count), "self_us": float(e.self_cpu_time_total)})
        rows.sort(key=lambda r: -r["self_us"])
        grown = lambda key: int(stats1.get(key, 0)) - int(stats0.get(key, 0))
        return {"wall_s": wall, "host_self_us": sum(r["self_us"] for r in rows), "kernels": kernels,
                "kernel_us": kernel_us, "device_allocs": grown("num_device_alloc"),
                "device_frees": grown("num_device_free"),
                "reserved_grown_gib": (torch.cuda.memory_reserved() - reserved0) / GIB,
                "operators": rows[:top], "other_self_us": sum(r["self_us"] for r in rows[top:])}

    def kernel_table(self, batch, rows, width):
        """One profiled step as a CUPTI-format kernel table (kernels/cupti_table.hpp), read by `stepcast kernels`."""
        torch = self.torch
        activities = [torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities) as prof:
            self.timed(batch)
        raw = "/tmp/hf-campaign-trace-%d.json" % os.getpid()
        prof.export_chrome_trace(raw)
        events = json.load(open(raw)).get("traceEvents", [])
        os.remove(raw)
        kinds = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
        table = {}
        for e in events:
            kind = kinds.get(e.get("cat"))
            if kind is None or "dur" not in e:
                continue
            ns = int(round(float(e["dur"]) * 1000))
            row = table.setdefault((e["name"], kind), {"name": e["name"], "kind": kind, "count": 0, "total_ns": 0,
                                                       "min_ns": ns, "max_ns": ns, "short_count": 0, "short_ns": 0})
            row["count"] += 1
            row["total_ns"] += ns
            row["min_ns"], row["max_ns"] = min(row["min_ns"], ns), max(row["max_ns"], ns)
            if ns < 10000:
                row["short_count"] += 1
                row["short_ns"] += ns
        props = torch.cuda.get_device_properties(0)
        name = "kernels_%s_%dx%d_%s.jsonl" % (self.item["model"], len(rows), width, "-".join(map(str, rows)))
        header = {"stepcast_cupti_table": 1, "device": torch.cuda.get_device_name(0), "compute_major": props.major,
                  "compute_minor": props.minor, "num_sms": props.multi_processor_count, "steps": 1,
                  "short_threshold_ns": 10000,
                  "label": "%s %dx%d rows=%s %s (torch.profiler)" % (self.item["model"], len(rows), width,
                                                                     ",".join(map(str, rows)), self.item["tier"])}
        # Beside the records, as the runner keeps the harness's: kernels/<process>/ (docs/campaigns.md).
        folder = os.path.join(os.path.dirname(os.path.abspath(self.outdir)), "kernels",
                              os.path.basename(self.out_path)[:-len(".jsonl")])
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, name), "w") as f:
            f.write(json.dumps(header) + "\n")
            for row in sorted(table.values(), key=lambda r: (-r["total_ns"], r["name"])):
                f.write(json.dumps(row) + "\n")
        return name, sum(row["count"] for row in table.values())  # launches: kernels, copies and sets of one step

    def memory_at_peak(self, batch):
        """One step under the allocator's history: what is live at the step's allocated peak, grouped by the Python
        frame that allocated it (the innermost frame outside torch/, with the torch function it called), in GiB.
        Blocks allocated before the step (weights, adapters, their gradients, optimizer state) are one row."""
        torch = self.torch
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.memory._record_memory_history(max_entries=2000000, stacks="python")
        try:
            self.timed(batch)
            snapshot = torch.cuda.memory._snapshot()
        finally:
            torch.cuda.memory._record_memory_history(enabled=None)
        events = [e for e in snapshot["device_traces"][0] if e["action"] in ("alloc", "free_completed")]

        def key(frames):
            # torch's own frames (the venv itself may live under a folder named torch: match the package)
            in_torch = [("site-packages/torch/" in f["filename"]) for f in frames]
            inner = next((f for f, t in zip(frames, in_torch) if not t), None)
            called = next((f["name"] for f, t in zip(frames, in_torch) if t), "?")
            if inner is None:
                return "torch:" + called
            return "%s:%d %s -> %s" % (inner["filename"].split("site-packages/")[-1], inner["line"], inner["name"],
                                       called)

        live, total, best, best_at = {}, 0, 0, -1
        for i, e in enumerate(events):  # pass 1: when the peak happens
            if e["action"] == "alloc":
                live[e["addr"]] = e["size"]
                total += e["size"]
            elif e["addr"] in live:
                total -= live.pop(e["addr"])
            if total > best:
                best, best_at = total, i
        live = {}
        for e in events[:best_at + 1]:  # pass 2: what is live then
            if e["action"] == "alloc":
                live[e["addr"]] = (e["size"], key(e.get("frames") or []))
            else:
                live.pop(e["addr"], None)
        groups = {}
        for size, k in live.values():
            groups[k] = groups.get(k, 0) + size
        rows = sorted(groups.items(), key=lambda kv: -kv[1])
        return {"before_step_gib": before / GIB, "step_peak_gib": (before + best) / GIB,
                "live_at_peak": [{"where": k, "gib": v / GIB} for k, v in rows[:40]],
                "other_gib": sum(v for _, v in rows[40:]) / GIB}

    def probes(self):
        generator = self.torch.Generator().manual_seed(4321)
        for spec in self.item.get("probes") or []:
            if self.out_of_time():
                print("time limit reached before probe %s" % spec, flush=True)
                return False
            self.probe(spec, generator)
        return True


def execute(plan, item, outdir):
    executor = Executor(plan, item, outdir)
    executor.build()
    executor.trace_sdpa()
    done = True
    if item.get("run"):
        done = executor.run() and done
    if item.get("probes"):
        done = executor.probes() and done
    return done


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    only = []
    if "--only" in argv:
        i = argv.index("--only")
        if i + 1 >= len(argv):
            raise PlanError("--only needs an item id")
        only = argv[i + 1].split(",")
        args = [a for a in args if a != argv[i + 1]]
    if len(args) != 2:
        raise PlanError(__doc__.split("\n\n")[1].strip())
    plan_path, outdir = args
    plan, items = load_plan(plan_path, only)
    plan["plan_path"] = plan_path
    for item in items:
        print(("would run: " if "--dry-run" in argv else "item: ") + describe(item), flush=True)
    if "--dry-run" in argv:
        return 0
    if any(item.get("allocator") == "expandable-segments" for item in items):
        if len({item.get("allocator", "default") for item in items}) > 1:
            raise PlanError("items with different allocators need separate processes (--only)")
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"  # before CUDA starts
    os.makedirs(outdir, exist_ok=True)
    failed = 0
    for item in items:
        try:
            if not execute(plan, item, outdir):
                failed += 1
        except Exception as e:  # keep going: the next item still runs, this one's records are kept
            import traceback
            traceback.print_exc()
            print("item %s failed: %s" % (item["id"], e), flush=True)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except PlanError as e:
        print("hf_campaign.py: %s" % e, file=sys.stderr)
        sys.exit(2)
