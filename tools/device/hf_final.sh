#!/usr/bin/env bash
# Device call 4: a held-out check on a machine the calibration never saw. Probes of this machine (host floor,
# first-seen, JIT-labelled), then a new corpus E under both policies twice in fresh processes: the first pair
# may meet a cold kernel cache, the second pair measures how well a run repeats on one machine.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
export PYTHONUNBUFFERED=1
CONFIG=scenarios/models/gemma-4-26b-a4b.json
t0=$(date +%s)
lscpu | grep -E "Model name|^CPU\(s\)"
timeout 200 python3 tools/device/hf_run.py probes $CONFIG "$OUT/h200-hf-peft-host-m4.jsonl" \
  1x640 1x128 2x128 4x128 8x128 1x256 2x256 4x256 8x256 1x512 2x512 4x512 8x512 \
  1x1024 2x1024 4x1024 8x1024 1x2048 2x2048 4x2048 1x4096 2x4096 1x8192 2x1024:0.3 2x2048:0.25 2>&1 | grep -E "^[0-9]|optim"
echo "probes at $(( $(date +%s) - t0 )) s"
E="--samples 64 --seed 41 --corpus-median 600 --corpus-sigma 1.0 --max-length 4096"
for pass in 1 2; do
  for policy in pad-to-longest bucket-to-pair; do
    timeout 90 python3 tools/device/hf_run.py run $CONFIG "$OUT/h200-hf-peft-runs-m4.jsonl" --policy $policy \
      --micro-batch 2 --accumulation 4 $E --id "hf-s41-m600-pass$pass/$policy" 2>&1 | grep -E "^run"
    echo "E $policy pass $pass at $(( $(date +%s) - t0 )) s; JIT cache files: $(find ~/.nv/ComputeCache -type f 2>/dev/null | wc -l)"
  done
done
