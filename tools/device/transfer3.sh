#!/usr/bin/env bash
# Zero-shot model transfer with the host side re-priced by kernel launches (docs/method.md, "Launches" and
# "Zero-shot 3"): the Gemma-4 26B-A4B H200 categories file predicts Qwen2.5-7B (scenarios/models/qwen2.5-7b.json:
# dense, GQA 28/4, head_dim 128, q/k/v biases, 28 layers), a model never measured, on the default tier: 8 step
# points 1x1024..4x4096 (`scaling` probes) and 2 `kernels` probes (CUPTI tables: the launch count the model
# predicts is checked on them). Everything the run writes goes into one tar file under $OUT (the device returns
# about 10 files, and left the records out last time).
# The predictions were committed before this ran: measurements/predictions/transfer3.jsonl (made by `--predict`).
# Estimated H200 time: build ~60 s (cached), Qwen2.5-7B build ~15 s, 10 points x 3 steps, the largest 4 x 4096 at
# ~2.9 s a step (Mistral-7B measured 3.04 s; Qwen2.5-7B has 0.93x its GEMM work per token): ~70 s; about 2.5 min.
#
#   tools/device/transfer3.sh            on the H200: builds with tools/device/build.sh, writes under $OUT
#   tools/device/transfer3.sh --dry-run  here, on the CPU: the same probes on tests/data/configs/tiny-qwen2.json
#                                        with the local build's stepcast
#   tools/device/transfer3.sh --predict  here: writes measurements/predictions/transfer3.jsonl (no GPU, no LibTorch)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mode=${1:-device}
COEFFS=scenarios/coefficients/h200-gemma4-categories.yaml
TIER=sdpa-auto/grouped/gqa-expand
MODEL=qwen2.5-7b
SHAPES=(1x1024 1x2048 1x4096 1x8192 2x2048 4x2048 2x4096 4x4096)
KERNEL_SHAPES=(1x2048 2x4096)

# "2x4096" -> "4096,4096"
rows_of() {
  local n=${1%x*} w=${1#*x} rows=""
  for ((i = 0; i < n; i++)); do rows+="${rows:+,}$w"; done
  echo "$rows"
}

# One JSON line per point: what stepcast says before the measurement exists (rows as a list, so that
# tools/check_predictions.py matches it against the records).
predict_points() {
  local bin=$1 out=$2
  : >"$out"
  for shape in "${SHAPES[@]}"; do
    "$bin" predict --coefficients "$COEFFS" --model scenarios/models/$MODEL.json --tier "$TIER" --transfer \
      --format json --rows "$(rows_of "$shape")" --width "${shape#*x}" |
      python3 -c 'import json,sys; j=json.load(sys.stdin); print(json.dumps({"kind":"zero-shot-model","model":sys.argv[3],"tier":sys.argv[1],"shape":sys.argv[2],"rows":[int(r) for r in sys.argv[4].split(",")],"predicted_step_s":j["predicted_step_s"],"step_interval_s":j.get("step_interval_s"),"predicted_peak_gib":j["predicted_peak_gib"],"provenance":j["provenance"],"transfer":j["transfer"]}))' "$TIER" "$shape" "$MODEL" "$(rows_of "$shape")" >>"$out" ||
      { echo "predict failed for $shape"; return 1; }
  done
  echo "wrote $out ($(wc -l <"$out") predictions)"
}

if [[ $mode == --predict ]]; then
  predict_points "${STEPCAST:-build/cli/stepcast}" measurements/predictions/transfer3.jsonl
  exit $?
fi

RUN=$OUT/transfer3
mkdir -p "$RUN"
t0=$(date +%s)
if [[ $mode == --dry-run ]]; then
  BIN=${STEPCAST:-build/cli/stepcast}
  CONFIG=tests/data/configs/tiny-qwen2.json
  SHAPES=(1x32 1x64 2x32 2x64)
  KERNEL_SHAPES=(1x32)
  TIER=sdpa-auto/loop  # Debian's LibTorch has no at::_grouped_mm; gqa-expand needs CUDA kernels to matter
  DEVICE=(--device cpu --dtype float32)
else
  BIN=$(LOG_DIR="$RUN" tools/device/build.sh | tail -1) || { echo "build failed"; exit 1; }
  CONFIG=scenarios/models/$MODEL.json
  DEVICE=()
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$RUN/gpu.txt"
fi
echo "transfer3.sh: stepcast $BIN ready after $(( $(date +%s) - t0 )) s"

points=""
for s in "${SHAPES[@]}"; do points+="${points:+,}scaling:$s:$TIER"; done
for s in "${KERNEL_SHAPES[@]}"; do points+=",kernels:$s:$TIER"; done
t1=$(date +%s)
timeout 170 "$BIN" measure --model "$CONFIG" --points "$points" --tiers "$TIER" "${DEVICE[@]}" \
  --warmup 1 --repetitions 3 --out "$RUN/transfer3-$MODEL.jsonl" --kernel-dir "$RUN/kernels" 2>&1 | tee "$RUN/measure.log"
echo "transfer3.sh: $MODEL rc=${PIPESTATUS[0]} in $(( $(date +%s) - t1 )) s"
if [[ $mode != --dry-run ]]; then
  # The check, once the records exist: the committed predictions against the measurements.
  python3 tools/check_predictions.py measurements/predictions/transfer3.jsonl "$RUN/transfer3-$MODEL.jsonl" \
    --tier "$TIER" >"$RUN/check-predictions.txt" 2>&1
  "$BIN" predict --coefficients "$COEFFS" --model "$CONFIG" --tier "$TIER" --transfer \
    --measurements "$RUN/transfer3-$MODEL.jsonl" >"$RUN/check-qwen2.5.txt" 2>&1
  cat "$RUN/check-predictions.txt"
fi
# One file for everything (records, kernel tables, logs, checks): the device returns about 10 files.
tar czf "$OUT/transfer3.tar.gz" -C "$OUT" transfer3 && rm -rf "$RUN"
echo "transfer3.sh: done in $(( $(date +%s) - t0 )) s"
ls -la "$OUT"
