#!/usr/bin/env bash
# What the GPU machine's PyTorch exposes for the packing, multi-GPU and families work (no model, ~30 s):
# varlen attention entry points with cumulative sequence offsets, c10d NCCL/Gloo headers, grouped GEMM,
# flex_attention, and the transformers model classes. Writes $OUT/api_probe.txt.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/api_probe.txt") 2>&1
inc=$(python3 -c 'import torch,os; print(os.path.join(os.path.dirname(torch.__file__),"include"))')
echo "== torch include: $inc"
python3 -c 'import torch, transformers, peft; print(torch.__version__, torch.version.cuda, transformers.__version__, peft.__version__)'
for f in _flash_attention_forward _flash_attention_backward _efficient_attention_forward _efficient_attention_backward \
         _scaled_dot_product_flash_attention _scaled_dot_product_efficient_attention _scaled_dot_product_cudnn_attention _grouped_mm; do
  echo "== $f"; grep -h -A3 "inline .* $f(" "$inc/ATen/ops/${f}.h" 2>/dev/null | head -8
done
echo "== c10d headers"; ls "$inc/torch/csrc/distributed/c10d/" | grep -E "ProcessGroup(NCCL|Gloo)|Store" 
python3 - <<'PY'
import torch
print("nccl", torch.cuda.nccl.version(), "dist nccl", torch.distributed.is_nccl_available(), "gloo", torch.distributed.is_gloo_available())
from torch.nn.attention.flex_attention import flex_attention, create_block_mask; print("flex_attention ok")
import transformers
for n in ["Qwen3MoeForCausalLM","MixtralForCausalLM","Phi3ForCausalLM","DeepseekV3ForCausalLM","Gemma4ForCausalLM","LlamaForCausalLM","OlmoForCausalLM","Olmo2ForCausalLM","GPTNeoXForCausalLM"]:
    print(n, hasattr(transformers, n))
from transformers import DataCollatorWithFlattening; print("DataCollatorWithFlattening ok")
p=torch.cuda.get_device_properties(0); print(p.name, p.total_memory/2**30, "GiB", p.multi_processor_count, "SMs", getattr(p,"L2_cache_size",None))
PY
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total,power.limit --format=csv
nvidia-smi topo -m | head -5
echo "== measured ceilings (medians of 20 after 5 warm-ups, CUDA events; random data)"
python3 - <<'PY'
import torch
def t(f, n=20):
    for _ in range(5): f()
    s=[torch.cuda.Event(enable_timing=True) for _ in range(n)]; e=[torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n): s[i].record(); f(); e[i].record()
    torch.cuda.synchronize(); x=sorted(a.elapsed_time(b) for a,b in zip(s,e)); return x[n//2]/1e3
for m,n,k in [(8192,8192,8192),(16384,8192,2048),(4096,4096,4096),(2048,2048,2048)]:
    for dt in (torch.bfloat16, torch.float32):
        a=torch.randn(m,k,device="cuda",dtype=dt); b=torch.randn(k,n,device="cuda",dtype=dt)
        if dt==torch.float32: torch.backends.cuda.matmul.allow_tf32=False
        s=t(lambda: a@b); print(f"matmul {m}x{n}x{k} {dt}: {2*m*n*k/s/1e12:.1f} TFLOP/s")
x=torch.randn(2**30//2, device="cuda", dtype=torch.bfloat16); y=torch.empty_like(x)
s=t(lambda: y.copy_(x)); print(f"copy 1 GiB d2d: {2*x.numel()*2/s/1e9:.0f} GB/s (read+write)")
PY
