#!/usr/bin/env bash
# Transfer measurements on one H200 (docs/method.md, "Transfer"): the honest proxy for another GPU on one
# machine is another attention backend, and the zero-shot model transfer is a dense model the Gemma-4
# coefficients were not fitted on.
#   1. Gemma-4 26B-A4B at forced attention tiers sdpa-efficient and sdpa-math, 2 shapes each. Its global layers
#      have head_dim 512: above flash's 256 and cuDNN's 256 on sm90 (model/tiers.cpp), so forcing either fails.
#   2. Llama-3-8B (scenarios/models/llama-3-8b.json, dense, head_dim 128) at 11 shapes on the default tier,
#      each a `kernels` point so that every point has its CUPTI kernel table; then sdpa-flash and sdpa-cudnn
#      (head_dim 128 allows both) at 2 shapes each, in the same process (the model is built once).
# The predictions were committed before this ran: measurements/predictions/transfer.jsonl (made by `--predict`).
# Estimated H200 time: build ~60 s (cached), Gemma-4 model build ~40 s + 4 points ~20 s, Llama-3-8B model
# build ~15 s + 15 points ~50 s: about 3 minutes, under the 4-minute budget.
#
#   tools/device/transfer.sh            on the H200: builds with tools/device/build.sh, writes under $OUT
#   tools/device/transfer.sh --dry-run  here, on the CPU: the same points on the tiny test configs
#                                       (tests/data/configs), with the local build's stepcast
#   tools/device/transfer.sh --predict  here: writes measurements/predictions/transfer.jsonl from the shipped
#                                       H200 coefficients (no GPU, no LibTorch)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mode=${1:-device}
COEFFS=scenarios/coefficients/h200-sdpa-auto-grouped-gqa-expand.yaml
DEFAULT_TIER=sdpa-auto/grouped/gqa-expand
FORCED_TIERS=(sdpa-efficient/grouped/gqa-expand sdpa-math/grouped/gqa-expand)
LLAMA_TIERS=(sdpa-flash/grouped/gqa-expand sdpa-cudnn/grouped/gqa-expand)
GEMMA_SHAPES=(1x2048 2x4096)
LLAMA_TIER_SHAPES=(1x4096 2x4096)
LLAMA_SHAPES=(1x1024 1x2048 1x4096 1x8192 1x16384 2x2048 4x2048 8x2048 2x4096 4x4096 2x8192)

# One JSON line per predicted point: what stepcast says before the measurement exists.
predict_points() {
  local bin=$1 out=$2
  : >"$out"
  for tier in "${FORCED_TIERS[@]}"; do
    for shape in "${GEMMA_SHAPES[@]}"; do
      "$bin" predict --coefficients "$COEFFS" --tier "$tier" --transfer --format json \
        --rows "$(rows_of "$shape")" --width "${shape#*x}" |
        python3 -c 'import json,sys; j=json.load(sys.stdin); print(json.dumps({"kind":"cross-tier","model":"gemma-4-26b-a4b","tier":sys.argv[1],"shape":sys.argv[2],"predicted_step_s":j["predicted_step_s"],"step_interval_s":j.get("step_interval_s"),"predicted_peak_gib":j["predicted_peak_gib"],"provenance":j["provenance"],"transfer":j["transfer"]}))' "$tier" "$shape" >>"$out"
    done
  done
  local tier shape
  for point in "${LLAMA_SHAPES[@]/#/$DEFAULT_TIER@}" $(for t in "${LLAMA_TIERS[@]}"; do for s in "${LLAMA_TIER_SHAPES[@]}"; do echo "$t@$s"; done; done); do
    tier=${point%@*} shape=${point#*@}
    "$bin" predict --coefficients "$COEFFS" --model llama-3-8b --tier "$tier" --transfer --format json \
      --rows "$(rows_of "$shape")" --width "${shape#*x}" |
      python3 -c 'import json,sys; j=json.load(sys.stdin); print(json.dumps({"kind":"zero-shot-model","model":"llama-3-8b","tier":sys.argv[1],"shape":sys.argv[2],"predicted_step_s":j["predicted_step_s"],"step_interval_s":j.get("step_interval_s"),"predicted_peak_gib":j["predicted_peak_gib"],"provenance":j["provenance"],"transfer":j["transfer"]}))' "$tier" "$shape" >>"$out"
  done
  echo "wrote $out ($(wc -l <"$out") predictions)"
}

# "2x4096" -> "4096,4096"
rows_of() {
  local n=${1%x*} w=${1#*x} rows=""
  for ((i = 0; i < n; i++)); do rows+="${rows:+,}$w"; done
  echo "$rows"
}

points_of() {  # PROBE SHAPES... -> probe:shape:tier,... for one tier
  local probe=$1 tier=$2; shift 2
  local p=""
  for s in "$@"; do p+="${p:+,}$probe:$s:$tier"; done
  echo "$p"
}

if [[ $mode == --predict ]]; then
  predict_points "${STEPCAST:-build/cli/stepcast}" measurements/predictions/transfer.jsonl
  exit $?
fi

mkdir -p "$OUT"
t0=$(date +%s)
if [[ $mode == --dry-run ]]; then
  BIN=${STEPCAST:-build/cli/stepcast}
  GEMMA=tests/data/configs/tiny-gemma4.json LLAMA=tests/data/configs/tiny-llama.json
  GEMMA_SHAPES=(1x64 2x64) LLAMA_SHAPES=(1x64 2x64 1x128) LLAMA_TIER_SHAPES=(1x64)
  LLAMA_TIERS=(sdpa-efficient/grouped/gqa-expand)  # flash and cuDNN are CUDA-only
  FORCED_TIERS=("${FORCED_TIERS[@]/grouped/loop}")  # Debian's LibTorch has no at::_grouped_mm
  DEVICE=(--device cpu)
else
  BIN=$(LOG_DIR="$OUT" tools/device/build.sh | tail -1) || { echo "build failed"; exit 1; }
  GEMMA=gemma-4-26b-a4b LLAMA=scenarios/models/llama-3-8b.json
  DEVICE=()
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
fi
echo "transfer.sh: stepcast $BIN ready after $(( $(date +%s) - t0 )) s"

gemma_points=""
for tier in "${FORCED_TIERS[@]}"; do
  gemma_points+="${gemma_points:+,}$(points_of scaling "$tier" "${GEMMA_SHAPES[@]}")"
done
t1=$(date +%s)
timeout 150 "$BIN" measure --model "$GEMMA" --points "$gemma_points" --tiers "$DEFAULT_TIER" "${DEVICE[@]}" \
  --warmup 1 --repetitions 2 --out "$OUT/transfer-gemma-4-forced-tiers.jsonl" --kernel-dir "$OUT/gemma.kernels"
echo "transfer.sh: Gemma-4 forced tiers rc=$? in $(( $(date +%s) - t1 )) s"
t2=$(date +%s)
llama_points=$(points_of kernels "$DEFAULT_TIER" "${LLAMA_SHAPES[@]}")
for tier in "${LLAMA_TIERS[@]}"; do llama_points+=",$(points_of scaling "$tier" "${LLAMA_TIER_SHAPES[@]}")"; done
timeout 120 "$BIN" measure --model "$LLAMA" --points "$llama_points" \
  --tiers "$DEFAULT_TIER" "${DEVICE[@]}" --warmup 1 --repetitions 2 \
  --out "$OUT/transfer-llama-3-8b.jsonl" --kernel-dir "$OUT/llama.kernels"
echo "transfer.sh: Llama-3-8B rc=$? in $(( $(date +%s) - t2 )) s"
if [[ $mode != --dry-run ]]; then
  # The check, once the records exist: the committed predictions against the measurements.
  for tier in "$DEFAULT_TIER" "${LLAMA_TIERS[@]}"; do
    grep -F "\"tier\":\"$tier\"" "$OUT/transfer-llama-3-8b.jsonl" >"$OUT/t.jsonl" &&
      "$BIN" predict --coefficients "$COEFFS" --model llama-3-8b --tier "$tier" --transfer --measurements "$OUT/t.jsonl"
  done >"$OUT/check-llama.txt" 2>&1
  for tier in "${FORCED_TIERS[@]}"; do
    grep -F "\"tier\":\"$tier\"" "$OUT/transfer-gemma-4-forced-tiers.jsonl" >"$OUT/t.jsonl" &&
      "$BIN" predict --coefficients "$COEFFS" --tier "$tier" --transfer --measurements "$OUT/t.jsonl"
  done >"$OUT/check-tiers.txt" 2>&1
  rm -f "$OUT/t.jsonl"
fi
echo "transfer.sh: done in $(( $(date +%s) - t0 )) s"
ls -la "$OUT"
