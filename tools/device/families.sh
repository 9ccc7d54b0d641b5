#!/usr/bin/env bash
# The families sweep: Qwen3-30B-A3B (grouped experts, Qwen3-MoE) and Mixtral-8x7B on one H200, each in one
# `stepcast measure` process (the model is built once, random bf16 weights on the GPU), 14 points each
# (LoRA r=16 on q, k, v, o):
# unpadded and padded shapes up to 8192 tokens, two with CUPTI kernel tables; then transformers + peft at 3
# shapes of the same models (tools/device/families_hf.py). Predictions of every point, made before the
# measurement, are in measurements/predictions/families.jsonl (docs/families.md says how).
# Estimated H200 time: build 60 s, Qwen3-30B-A3B 14 points x 3 steps x ~0.8 s + 30 s model build = 65 s,
# Mixtral-8x7B (12.9 B active) 14 x 3 x ~2 s + 45 s = 130 s, transformers 2 x 40 s: about 5.5 minutes with the
# compile, 4.5 on the device once built. (The shipped Gemma-4 coefficients predict Mixtral 1.5-2x slower than
# its FLOPs at H200 rates; the measure timeouts of 300 s bound each model.)
#
#   tools/device/families.sh            on the GPU machine, writes $OUT/h200-<model>.jsonl and kernel tables
#   tools/device/families.sh --dry-run  here, on the CPU: the same steps on the tiny test configs with the
#                                       local build (build/cli/stepcast), loop experts, no transformers
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
dry=0
[ "${1:-}" = "--dry-run" ] && dry=1
t0=$(date +%s)

points=(
  scaling:1x1024 scaling:1x2048 scaling:1x4096 scaling:1x8192 scaling:2x2048 scaling:4x2048 scaling:2x4096
  scaling:4x1024 padding:2x4096:0.25 padding:4x2048:0.37 padding:1x8192:0.25 padding:2x2048:0.125
  kernels:2x4096 kernels:2x4096:0.25
)
models=(qwen3-30b-a3b mixtral-8x7b)
tier=sdpa-auto/grouped/gqa-expand
# LoRA on attention: the only nn.Linear modules of both (their experts are stacked tensors, the router is not
# a fine-tuning target); families_hf.py wraps the same four.
extra=(--lora-targets q_proj,k_proj,v_proj,o_proj)
if [ $dry = 1 ]; then
  BIN=build/cli/stepcast
  points=(scaling:1x16 scaling:2x16 padding:2x16:0.25 scaling:1x32)
  models=(tests/data/configs/tiny-qwen3-moe.json tests/data/configs/tiny-mixtral.json)
  tier=sdpa-auto/loop
  extra+=(--device cpu --dtype float32)
else
  BIN=$(LOG_DIR="$OUT" tools/device/build.sh | tail -1) || { echo "build failed"; exit 1; }
  echo "built $BIN in $(( $(date +%s) - t0 )) s"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
fi
list=$(IFS=,; echo "${points[*]}")
for model in "${models[@]}"; do
  name=$(basename "$model" .json)
  t1=$(date +%s)
  echo "measuring $name: ${#points[@]} points, tier $tier"
  timeout 300 "$BIN" measure --model "$model" --tiers "$tier" --points "$list" --warmup 1 --repetitions 2 \
    --out "$OUT/h200-$name.jsonl" --kernel-dir "$OUT/kernels-$name" "${extra[@]}"
  echo "$name rc=$? in $(( $(date +%s) - t1 )) s"
done
if [ $dry = 0 ]; then
  for model in "${models[@]}"; do
    t1=$(date +%s)
    timeout 150 python3 tools/device/families_hf.py "scenarios/models/$model.json" "$OUT/h200-hf-peft-$model.jsonl" \
      1x2048 2x4096 2x4096:0.25
    echo "hf $model rc=$? in $(( $(date +%s) - t1 )) s"
  done
fi
echo "families.sh done in $(( $(date +%s) - t0 )) s"
ls -la "$OUT"
