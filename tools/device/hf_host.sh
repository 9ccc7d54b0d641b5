#!/usr/bin/env bash
# Host floor, first-seen shapes and recorded runs on the real stack (transformers + peft): host floor and first-seen probes in one process, then short
# real runs, each in its own fresh process (a run must pay its own process start and kernel-plan caches).
#   OUT=/tmp/out tools/device/hf_host.sh probes|runs-a|runs-b
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
export PYTHONUNBUFFERED=1
CONFIG=scenarios/models/gemma-4-26b-a4b.json
t0=$(date +%s)
for part in "$@"; do
  case "$part" in
    probes)
      timeout 300 python3 tools/device/hf_run.py probes $CONFIG "$OUT/h200-hf-peft-host.jsonl" \
        1x640 1x128 2x128 4x128 8x128 1x256 2x256 4x256 8x256 1x512 2x512 4x512 8x512 \
        1x1024 2x1024 4x1024 8x1024 1x2048 2x2048 4x2048 1x4096 2x4096 1x8192 \
        2x1024:0.3 2x2048:0.25 1x384 2x768 1x1536
      echo "probes rc=$? at $(( $(date +%s) - t0 )) s" ;;
    runs-a|runs-b|runs-c)
      case "$part" in
        runs-a) args="--samples 64 --seed 7 --corpus-median 700 --corpus-sigma 0.8 --max-length 4096" ;;
        runs-b) args="--samples 64 --seed 11 --corpus-median 250 --corpus-sigma 1.0 --max-length 2048" ;;
        runs-c) args="--samples 64 --seed 23 --corpus-median 1200 --corpus-sigma 0.9 --max-length 8192" ;;
      esac
      for policy in pad-to-longest bucket-to-pair; do
        timeout 200 python3 tools/device/hf_run.py run $CONFIG "$OUT/h200-hf-peft-runs.jsonl" --policy $policy \
          --micro-batch 2 --accumulation 4 $args ${HF_RUN_EXTRA:-} | tail -3
        echo "$part $policy rc=$? at $(( $(date +%s) - t0 )) s"
      done ;;
    *) echo "unknown part $part"; exit 2 ;;
  esac
done
