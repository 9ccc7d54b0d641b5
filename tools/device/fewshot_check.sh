#!/usr/bin/env bash
# Device call: shapes never measured on two models measured once already (Qwen1.5-MoE-A2.7B, Qwen2.5-7B), to
# check predictions committed before this runs (measurements/predictions/fewshot_check.jsonl: zero shot and few
# shot, docs/families.md). Larger and more rows than any record of either model: 1 x 16384, 2 x 8192, 8 x 1024,
# 8 x 2048 and a padded 4 x 4096; the harness's default tier, LoRA r=16 on the targets of each model's earlier
# records (Qwen1.5-MoE: q, k, v, o as measurements/campaigns/families2.yaml; Qwen2.5-7B: the default, every linear, as
# tools/device/transfer3.sh), 1 warm-up + 2 timed steps.
# Everything goes into one tar file, $OUT/fewshot_check.tar.gz.
#
# Usage: tools/device/fewshot_check.sh [--dry-run]
#   --dry-run: the same flow on this machine's CPU build with the tiny configs (tiny-qwen2-moe, tiny-qwen2) at
#   small shapes; its figures mean nothing.
# H200 estimate: build ~80 s (cached when run through tools/device/batch.sh); two model builds ~35 s; 10 points x
# 3 steps, the largest ~2.5 s (Qwen2.5-7B 8 x 2048 ~ 4 x 4096's 2.5 s): about 2.5 minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
dry=0
[[ "${1:-}" == "--dry-run" ]] && dry=1
t0=$(date +%s)
work=$(mktemp -d)
points=(scaling:1x16384 scaling:2x8192 scaling:8x1024 scaling:8x2048 padding:4x4096:0.25)
models=(qwen1.5-moe-a2.7b qwen2.5-7b)
tier=sdpa-auto/grouped/gqa-expand
extra=()
targets_of() { [[ $1 == *moe* ]] && echo "--lora-targets q_proj,k_proj,v_proj,o_proj"; }
if (( dry )); then
  BIN=build/cli/stepcast
  points=(scaling:1x64 scaling:2x32 scaling:8x8 padding:4x16:0.25)
  models=(tests/data/configs/tiny-qwen2-moe.json tests/data/configs/tiny-qwen2.json)
  tier=sdpa-auto/loop
  extra=(--device cpu --dtype float32)
else
  BIN=$(LOG_DIR="$work" tools/device/build.sh | tail -1) || { echo "build failed"; tar czf "$OUT/fewshot_check.tar.gz" -C "$work" .; exit 1; }
  echo "built $BIN in $(( $(date +%s) - t0 )) s"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$work/gpu.csv"
fi
list=$(IFS=,; echo "${points[*]}")
rc=0
for model in "${models[@]}"; do
  name=$(basename "$model" .json)
  t1=$(date +%s)
  echo "measuring $name: ${#points[@]} points, tier $tier"
  timeout 200 "$BIN" measure --model "$model" --tiers "$tier" --points "$list" --warmup 1 --repetitions 2 \
    --out "$work/h200-$name-new-shapes.jsonl" $(targets_of "$name") "${extra[@]}" 2>&1 | tee "$work/measure-$name.log"
  r=${PIPESTATUS[0]}
  (( r == 0 )) || rc=$r
  echo "$name rc=$r in $(( $(date +%s) - t1 )) s"
done
tar czf "$OUT/fewshot_check.tar.gz" -C "$work" .
echo "fewshot_check.sh done in $(( $(date +%s) - t0 )) s: $OUT/fewshot_check.tar.gz"
tar tzf "$OUT/fewshot_check.tar.gz"
rm -rf "$work"
exit "$rc"
