#!/usr/bin/env bash
# Zero-shot model transfer under the per-category step model (docs/method.md, "Per-category model"): the
# Gemma-4 26B-A4B H200 coefficients, refitted from Gemma-4 data alone (kernel tables, then the step records),
# predict Mistral-7B (scenarios/models/mistral-7b.json: dense, GQA 32/8, head_dim 128, sliding window 4096),
# a model never measured, at 8 shapes on the default tier. Every point is a `kernels` probe, so each has its
# CUPTI kernel table; the tables are packed into one tar file (the device returns about 10 files).
# The predictions were committed before this ran: measurements/predictions/transfer2.jsonl (made by `--predict`).
# Estimated H200 time: build ~60 s (cached), Mistral-7B model build ~15 s + 8 points x 3 steps (largest
# 4 x 4096, ~2.7 s a step as Llama-3-8B measured) ~60 s: about 2.5 minutes, under the 3-minute budget.
#
#   tools/device/transfer2.sh            on the H200: builds with tools/device/build.sh, writes under $OUT
#   tools/device/transfer2.sh --dry-run  here, on the CPU: the same points on tests/data/configs/tiny-mistral.json
#                                        with the local build's stepcast
#   tools/device/transfer2.sh --predict  here: writes measurements/predictions/transfer2.jsonl (no GPU, no LibTorch)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mode=${1:-device}
COEFFS=scenarios/coefficients/h200-gemma4-categories.yaml
TIER=sdpa-auto/grouped/gqa-expand
MODEL=mistral-7b
SHAPES=(1x1024 1x2048 1x4096 1x8192 2x2048 4x2048 2x4096 4x4096)

# "2x4096" -> "4096,4096"
rows_of() {
  local n=${1%x*} w=${1#*x} rows=""
  for ((i = 0; i < n; i++)); do rows+="${rows:+,}$w"; done
  echo "$rows"
}

# One JSON line per point: what stepcast says before the measurement exists.
predict_points() {
  local bin=$1 out=$2
  : >"$out"
  for shape in "${SHAPES[@]}"; do
    "$bin" predict --coefficients "$COEFFS" --model scenarios/models/$MODEL.json --tier "$TIER" --transfer \
      --format json --rows "$(rows_of "$shape")" --width "${shape#*x}" |
      python3 -c 'import json,sys; j=json.load(sys.stdin); print(json.dumps({"kind":"zero-shot-model","model":sys.argv[3],"tier":sys.argv[1],"shape":sys.argv[2],"predicted_step_s":j["predicted_step_s"],"step_interval_s":j.get("step_interval_s"),"predicted_peak_gib":j["predicted_peak_gib"],"provenance":j["provenance"],"transfer":j["transfer"]}))' "$TIER" "$shape" "$MODEL" >>"$out" ||
      { echo "predict failed for $shape"; return 1; }
  done
  echo "wrote $out ($(wc -l <"$out") predictions)"
}

if [[ $mode == --predict ]]; then
  predict_points "${STEPCAST:-build/cli/stepcast}" measurements/predictions/transfer2.jsonl
  exit $?
fi

mkdir -p "$OUT"
t0=$(date +%s)
if [[ $mode == --dry-run ]]; then
  BIN=${STEPCAST:-build/cli/stepcast}
  CONFIG=tests/data/configs/tiny-mistral.json
  SHAPES=(1x32 1x64 2x32 2x64)
  TIER=sdpa-auto/loop  # Debian's LibTorch has no at::_grouped_mm; gqa-expand needs CUDA kernels to matter
  DEVICE=(--device cpu --dtype float32)
else
  BIN=$(LOG_DIR="$OUT" tools/device/build.sh | tail -1) || { echo "build failed"; exit 1; }
  CONFIG=scenarios/models/$MODEL.json
  DEVICE=()
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
fi
echo "transfer2.sh: stepcast $BIN ready after $(( $(date +%s) - t0 )) s"

points=""
for s in "${SHAPES[@]}"; do points+="${points:+,}kernels:$s:$TIER"; done
t1=$(date +%s)
timeout 150 "$BIN" measure --model "$CONFIG" --points "$points" --tiers "$TIER" "${DEVICE[@]}" \
  --warmup 1 --repetitions 2 --out "$OUT/transfer2-$MODEL.jsonl" --kernel-dir "$OUT/kernels"
echo "transfer2.sh: $MODEL rc=$? in $(( $(date +%s) - t1 )) s"
# One file for every kernel table: the device returns about 10 files.
if [[ -d $OUT/kernels ]]; then
  tar czf "$OUT/transfer2-kernels.tar.gz" -C "$OUT" kernels && rm -rf "$OUT/kernels"
else
  echo "transfer2.sh: no kernel tables (no CUPTI: the CPU dry run has none)"
fi
if [[ $mode != --dry-run ]]; then
  # The check, once the records exist: the committed coefficients against the measurements.
  "$BIN" predict --coefficients "$COEFFS" --model "$CONFIG" --tier "$TIER" --transfer \
    --measurements "$OUT/transfer2-$MODEL.jsonl" >"$OUT/check-mistral.txt" 2>&1
fi
echo "transfer2.sh: done in $(( $(date +%s) - t0 )) s"
ls -la "$OUT"
