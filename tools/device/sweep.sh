#!/usr/bin/env bash
# Device call 2: the calibration sweep of Gemma-4 26B-A4B on one H200, one `stepcast measure` process
# (the 50 GB model is built once). Default tier sdpa-auto/grouped (transformers 5 + peft behaviour) over
# rows 1-8, widths 1k-16k, padding 0-50 %; a second expert implementation (loop) and attention tiers
# (efficient, math) plus the chunked-CE tier at a few shapes; CE and CUPTI kernel tables at a few more.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
t0=$(date +%s)
BIN=$(LOG_DIR="$OUT" tools/device/build.sh | tail -1) || { echo "build failed"; exit 1; }
echo "built $BIN in $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
default=(
  scaling:1x1024 scaling:1x2048 scaling:1x4096 scaling:1x8192 scaling:1x16384
  scaling:2x2048 scaling:4x2048 scaling:8x2048 scaling:2x4096 scaling:4x4096 scaling:2x8192
  padding:2x4096:0.125 padding:2x4096:0.25 padding:2x4096:0.5 padding:4x2048:0.25 padding:8x2048:0.37
  padding:2x8192:0.25 padding:1x8192:0.25
  ce:1x8192 kernels:2x4096 kernels:2x4096:0.25
)
others=(
  scaling:1x2048:sdpa-auto/loop scaling:2x4096:sdpa-auto/loop padding:4x2048:0.25:sdpa-auto/loop
  scaling:1x2048:sdpa-efficient/grouped kernels:2x4096:sdpa-efficient/grouped scaling:1x8192:sdpa-efficient/grouped
  scaling:1x16384:sdpa-efficient/grouped padding:2x4096:0.25:sdpa-efficient/grouped
  scaling:1x2048:sdpa-math/grouped scaling:2x2048:sdpa-math/grouped
  ce:2x4096:sdpa-auto/grouped/ce-chunked scaling:1x16384:sdpa-auto/grouped/ce-chunked
)
points=$(IFS=,; echo "${default[*]},${others[*]}")
t1=$(date +%s)
timeout 500 "$BIN" measure --model gemma-4-26b-a4b --tiers sdpa-auto/grouped --points "$points" \
  --warmup 1 --repetitions 2 --out "$OUT/h200-gemma-4-26b-a4b.jsonl" --kernel-dir /tmp/kernels
echo "sweep rc=$? in $(( $(date +%s) - t1 )) s (GPU time of the sweep, model build included)"
tar czf "$OUT/kernels.tar.gz" -C /tmp kernels 2>/dev/null
ls -la "$OUT"
