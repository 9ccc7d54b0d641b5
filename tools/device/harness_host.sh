#!/usr/bin/env bash
# the harness's three new probes on the GPU, into $OUT/h200-harness-host.jsonl.
#   1. one process: first-seen 1x896 FIRST (the process start: the primer runs after it), first-seen at five
#      more new shapes, then the host-floor grid (widths 128-1024 x rows 1-8; warm-up 1, repetitions 3,
#      one more step per point under CUPTI for launches_per_step);
#   2. the end-to-end run, pad-to-longest, in a fresh process;
#   3. the same corpus, bucket-to-pair, in another fresh process.
# Runs: 64 synthetic samples (harness::finetune_mix, seed 7), micro-batch 2, accumulation 4, max_length 4096.
# Expected on the H200 (from the earlier calls: build 2-3 min, model build ~20 s per process, a small step
# ~0.35-0.41 s): build ~150 s, sweep ~90 s (6 first-seen x 5 steps + 16 host-floor x 5 steps), each run
# ~60-80 s (32 micro-batches, most of them first-seen) -> ~400 s; each step has its own timeout so the
# whole script stays inside 540 s (a timed-out run keeps the micro-batches it wrote).
# CPU dry run of the flow (tiny model): BIN=/tmp/build/cli/stepcast MODEL=tests/data/configs/tiny-llama.json
#   TIER=sdpa-auto/loop EXTRA="--device cpu --dtype float32" OUT=/tmp/o tools/device/harness_host.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
MODEL=${MODEL:-gemma-4-26b-a4b}
TIER=${TIER:-sdpa-auto/grouped/gqa-expand}   # harness::kDefaultTier: transformers 5.17 + peft behaviour
EXTRA=${EXTRA:-}
MAX_LENGTH=${MAX_LENGTH:-4096}
BUDGET_S=${BUDGET_S:-540}
mkdir -p "$OUT"
F="$OUT/h200-harness-host.jsonl"
start=$(date +%s)
left() { echo $(( BUDGET_S - 10 - ($(date +%s) - start) )); }
if [ -z "${BIN:-}" ]; then
  BIN=$(LOG_DIR="$OUT" tools/device/build.sh | tail -1) || { echo "build failed"; exit 1; }
fi
echo "built $BIN in $(( $(date +%s) - start )) s"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv 2>/dev/null

first_seen=first-seen:1x896,first-seen:1x384,first-seen:1x640,first-seen:2x768,first-seen:1x1536,first-seen:2x3072
t=$(date +%s)
# shellcheck disable=SC2086
timeout $(( $(left) < 200 ? $(left) : 200 )) "$BIN" measure --model "$MODEL" --tiers "$TIER" $EXTRA \
  --points "$first_seen,host-floor" --warmup 1 --repetitions 3 --out "$F"
echo "probes rc=$? in $(( $(date +%s) - t )) s"

for policy in pad-to-longest bucket-to-pair; do
  t=$(date +%s)
  budget=$(left)
  [ "$policy" = pad-to-longest ] && budget=$(( budget / 2 ))
  [ "$budget" -gt 20 ] || { echo "no time left for $policy"; continue; }
  # shellcheck disable=SC2086
  timeout "$budget" "$BIN" measure --model "$MODEL" --tiers "$TIER" $EXTRA --run-synthetic 64:7 \
    --policy "$policy" --micro-batch 2 --accumulation 4 --max-length "$MAX_LENGTH" --out "$F"
  echo "run $policy rc=$? in $(( $(date +%s) - t )) s (limit $budget s)"
done
echo "total $(( $(date +%s) - start )) s"
wc -l "$F"
