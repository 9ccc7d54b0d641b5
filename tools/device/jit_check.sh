#!/usr/bin/env bash
# Are the ~5 s one-off stalls seen in the first transformers + peft runs on a fresh machine a per-machine
# kernel cache (the driver's PTX JIT cache under ~/.nv/ComputeCache persists across processes) or a
# per-process cost? The same run twice in two fresh processes on a fresh machine, the cache sized around them.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
cache() { echo "$1: $(du -sk ~/.nv/ComputeCache 2>/dev/null | cut -f1) KiB in ~/.nv/ComputeCache," \
  "$(find ~/.nv/ComputeCache -type f 2>/dev/null | wc -l) files; ~/.cache: $(ls ~/.cache 2>/dev/null | tr '\n' ' ')"; }
cache before
for pass in 1 2; do
  python3 tools/device/hf_run.py run scenarios/models/gemma-4-26b-a4b.json "$OUT/h200-hf-peft-jit.jsonl" \
    --policy pad-to-longest --micro-batch 2 --accumulation 4 --samples 64 --seed 7 --corpus-median 700 \
    --corpus-sigma 0.8 --max-length 4096 --id "jit-check-pass$pass/pad-to-longest" 2>&1 | grep -E "^run|^jit" | \
    awk '{ if ($0 ~ /^run/ || $4+0 > 2.0) print }'
  cache "after pass $pass"
done
