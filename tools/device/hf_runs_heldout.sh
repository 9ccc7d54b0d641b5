#!/usr/bin/env bash
# Device call 3: the machine's CPU, host-floor and first-seen probes on this machine, then six 64-sample runs
# (corpora A, C, D x pad-to-longest, bucket-to-pair), each in a fresh process, every micro-batch labelled with
# the kernels it added to the driver's JIT cache.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
export PYTHONUNBUFFERED=1
CONFIG=scenarios/models/gemma-4-26b-a4b.json
t0=$(date +%s)
lscpu | grep -E "Model name|^CPU\(s\)|MHz" ; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv
timeout 220 python3 tools/device/hf_run.py probes $CONFIG "$OUT/h200-hf-peft-host-m3.jsonl" \
  1x640 1x128 2x128 4x128 8x128 1x256 2x256 4x256 8x256 1x512 2x512 4x512 8x512 \
  1x1024 2x1024 4x1024 8x1024 1x2048 2x2048 4x2048 1x4096 2x4096 1x8192 2x1024:0.3 2x2048:0.25 2>&1 | grep -E "^[0-9]|optim"
echo "probes at $(( $(date +%s) - t0 )) s"
A="--samples 64 --seed 7 --corpus-median 700 --corpus-sigma 0.8 --max-length 4096"
C="--samples 64 --seed 23 --corpus-median 1200 --corpus-sigma 0.9 --max-length 8192"
D="--samples 64 --seed 31 --corpus-median 400 --corpus-sigma 1.2 --max-length 4096"
for corpus in A C D; do
  for policy in pad-to-longest bucket-to-pair; do
    timeout 100 python3 tools/device/hf_run.py run $CONFIG "$OUT/h200-hf-peft-runs-m3.jsonl" --policy $policy \
      --micro-batch 2 --accumulation 4 ${!corpus} 2>&1 | grep -E "^run"
    echo "$corpus $policy at $(( $(date +%s) - t0 )) s; JIT cache files: $(find ~/.nv/ComputeCache -type f 2>/dev/null | wc -l)"
  done
done
