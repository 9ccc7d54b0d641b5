#!/usr/bin/env bash
# Device call 1: build on the GPU machine, run every probe and tier on the tiny config (API errors are
# cheap there), then a first real Gemma-4 26B-A4B point per expert implementation with CUPTI tables.
# Everything worth keeping goes under $OUT (at most 8 files come back).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
{
  nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.mem --format=csv
  python3 -c 'import torch, transformers, peft; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__, "peft", peft.__version__)'
  tf=$(python3 -c 'import transformers, os; print(os.path.dirname(transformers.__file__))')
  grep -rn "_experts_implementation\s*=" "$tf/modeling_utils.py" "$tf/configuration_utils.py" | head -20
  ls "$tf/models" | grep -i gemma
} >"$OUT/env.txt" 2>&1
t0=$(date +%s)
BIN=$(LOG_DIR="$OUT" tools/device/build.sh | tail -1) || { echo "build failed"; exit 1; }
echo "built $BIN in $(( $(date +%s) - t0 )) s"
cp "$BIN" "$OUT/stepcast.bin"
t1=$(date +%s)
timeout 120 "$BIN" measure --model tests/data/configs/tiny-gemma4.json --probe scaling,padding,ce,kernels \
  --shapes 2x64,1x128 --padding 0.25 --warmup 1 --repetitions 2 --kernel-dir /tmp/k-smoke \
  --tiers sdpa-auto/loop,sdpa-auto/grouped,sdpa-efficient/loop,sdpa-math/grouped/ce-chunked,sdpa-cudnn/loop,sdpa-flash/loop \
  --out "$OUT/smoke.jsonl"
echo "smoke rc=$? in $(( $(date +%s) - t1 )) s"
t2=$(date +%s)
timeout 300 "$BIN" measure --model gemma-4-26b-a4b --probe kernels --shapes 1x4096,1x16384 \
  --tiers sdpa-auto/loop,sdpa-auto/grouped --warmup 1 --repetitions 2 --kernel-dir /tmp/k26 \
  --out "$OUT/h200-call1.jsonl"
echo "26B rc=$? in $(( $(date +%s) - t2 )) s"
tar czf "$OUT/kernels.tar.gz" -C /tmp k-smoke k26 2>/dev/null
ls -la "$OUT"
