#!/usr/bin/env bash
# Device call 5: the default tier again after the fidelity trace showed transformers 5.17 expands K/V on
# every Gemma-4 layer: the same default points as sweep.sh under sdpa-auto/grouped/gqa-expand. --out is the
# committed file of call 4, so the four points measured there are skipped (resume).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
cp measurements/records/h200-gemma-4-26b-a4b-gqa-expand.jsonl "$OUT/"
BIN=$(LOG_DIR="$OUT" tools/device/build.sh | tail -1) || { echo "build failed"; exit 1; }
points=scaling:1x1024,scaling:1x2048,scaling:1x4096,scaling:1x8192,scaling:1x16384,scaling:2x2048,scaling:4x2048
points+=,scaling:8x2048,scaling:2x4096,scaling:4x4096,scaling:2x8192,padding:2x4096:0.125,padding:2x4096:0.25
points+=,padding:2x4096:0.5,padding:4x2048:0.25,padding:8x2048:0.37,padding:2x8192:0.25,padding:1x8192:0.25
points+=,ce:1x8192,kernels:2x4096,kernels:2x4096:0.25
timeout 330 "$BIN" measure --model gemma-4-26b-a4b --tiers sdpa-auto/grouped/gqa-expand --points "$points" \
  --warmup 1 --repetitions 2 --out "$OUT/h200-gemma-4-26b-a4b-gqa-expand.jsonl" --kernel-dir /tmp/kernels-expand
echo "rc=$?"
tar czf "$OUT/kernels-expand.tar.gz" -C /tmp kernels-expand 2>/dev/null
