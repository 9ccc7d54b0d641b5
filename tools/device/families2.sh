#!/usr/bin/env bash
# The shared-expert sweep: Qwen1.5-MoE-A2.7B (qwen2_moe: 60 routed experts of 1408, top-4, plus a shared expert
# of 5632 every token passes through, scaled by sigmoid(shared_expert_gate(x))) on one H200, in one
# `stepcast measure` process (random bf16 weights on the GPU), 14 points (LoRA r=16 on q, k, v, o, as
# tools/device/families.sh): unpadded and padded shapes up to 8192 tokens, two with CUPTI kernel tables.
# Predictions of every point, made before the measurement, are in measurements/predictions/families2.jsonl
# (tools/device/families2_predict.sh). Everything it writes goes into one tar, $OUT/families2.tar.gz.
# Estimated H200 time: build 60 s, model build ~20 s (14.3 B parameters), 14 points x 3 steps x ~0.4 s
# (2.7 B active; 8192 tokens of a 151936 vocabulary) = ~20 s plus CUPTI: about 2 minutes, under 3 with the
# compile. The measure timeout (200 s) bounds it.
#
#   tools/device/families2.sh            on the GPU machine: $OUT/families2.tar.gz (records, kernel tables, logs)
#   tools/device/families2.sh --dry-run  here, on the CPU: the same steps on tests/data/configs/tiny-qwen2-moe.json
#                                        with the local build (build/cli/stepcast), loop experts
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
work=$(mktemp -d)
dry=0
[ "${1:-}" = "--dry-run" ] && dry=1
t0=$(date +%s)

points=(
  scaling:1x1024 scaling:1x2048 scaling:1x4096 scaling:1x8192 scaling:2x2048 scaling:4x2048 scaling:2x4096
  scaling:4x1024 padding:2x4096:0.25 padding:4x2048:0.37 padding:1x8192:0.25 padding:2x2048:0.125
  kernels:2x4096 kernels:2x4096:0.25
)
model=qwen1.5-moe-a2.7b
tier=sdpa-auto/grouped/gqa-expand
extra=(--lora-targets q_proj,k_proj,v_proj,o_proj)
if [ $dry = 1 ]; then
  BIN=build/cli/stepcast
  points=(scaling:1x16 scaling:2x16 padding:2x16:0.25 scaling:1x32 kernels:2x16)
  model=tests/data/configs/tiny-qwen2-moe.json
  tier=sdpa-auto/loop
  extra+=(--device cpu --dtype float32)
else
  BIN=$(LOG_DIR="$work" tools/device/build.sh | tail -1) || { echo "build failed"; tar czf "$OUT/families2.tar.gz" -C "$work" .; exit 1; }
  echo "built $BIN in $(( $(date +%s) - t0 )) s"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$work/gpu.csv"
fi
list=$(IFS=,; echo "${points[*]}")
name=$(basename "$model" .json)
t1=$(date +%s)
echo "measuring $name: ${#points[@]} points, tier $tier"
timeout 200 "$BIN" measure --model "$model" --tiers "$tier" --points "$list" --warmup 1 --repetitions 2 \
  --out "$work/h200-$name.jsonl" --kernel-dir "$work/kernels-$name" "${extra[@]}" 2>&1 | tee "$work/measure.log"
rc=${PIPESTATUS[0]}
echo "$name rc=$rc in $(( $(date +%s) - t1 )) s"
tar czf "$OUT/families2.tar.gz" -C "$work" .
echo "families2.sh done in $(( $(date +%s) - t0 )) s: $OUT/families2.tar.gz"
tar tzf "$OUT/families2.tar.gz"
rm -rf "$work"
exit "$rc"
