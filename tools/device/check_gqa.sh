#!/usr/bin/env bash
# Device call 4: why the harness's default tier and transformers differ at 1x8192 - how transformers calls
# SDPA on Gemma-4 (traced), and the harness with K/V expanded on every layer (gqa-expand) at the same shapes.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
export PYTHONUNBUFFERED=1
HF_TRACE_SDPA=1 timeout 150 python3 tools/device/hf_fidelity.py scenarios/models/gemma-4-26b-a4b.json \
  "$OUT/h200-hf-peft-trace.jsonl" 1x8192 2x4096:0.25 1x2048
BIN=$(LOG_DIR="$OUT" tools/device/build.sh | tail -1) || { echo "build failed"; exit 1; }
timeout 200 "$BIN" measure --model gemma-4-26b-a4b --tiers sdpa-auto/grouped/gqa-expand \
  --points scaling:1x2048,scaling:1x4096,scaling:1x8192,scaling:2x4096 --warmup 1 --repetitions 2 \
  --out "$OUT/h200-gemma-4-26b-a4b-gqa-expand.jsonl"
