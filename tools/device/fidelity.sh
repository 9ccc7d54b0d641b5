#!/usr/bin/env bash
# Device call 3: the fidelity check (tools/device/hf_fidelity.py) at shapes the sweep also measured in the
# default tier, so harness/HF ratios can be read off the two record files.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
export PYTHONUNBUFFERED=1
t0=$(date +%s)
timeout 420 python3 tools/device/hf_fidelity.py scenarios/models/gemma-4-26b-a4b.json "$OUT/h200-hf-peft.jsonl" \
  1x4096 2x4096 1x8192 2x4096:0.25 1x2048
echo "hf rc=$? in $(( $(date +%s) - t0 )) s"
