#!/usr/bin/env bash
# Device call: does the packing-32b bucket-to-pair stall repeat? The pre-registered packing check
# (measurements/records/h200-packing2/) missed bucket-to-pair by +25.6 %, 20 points of it one 5.0 s excess at
# micro-batch 1 (2 x 2408), after a labelled warm-up. This runs the same run (Gemma-4 26B-A4B, packing-32b.csv,
# bucket-to-pair, micro-batch 2, accumulation 4, max_length 8192) three times, each in a fresh process on an
# already warm machine, and prints every micro-batch's step: a stall at the same micro-batch each time is a cost of
# the process (a one-off the model should carry), one that goes away was the machine's (a cold cache).
# Records: $OUT/packing-stall-runs.jsonl (run ids packing-32b/bucket-to-pair/repeat-K).
#
# Usage: tools/device/packing_stall.sh [--dry-run]   (--dry-run: the tiny config on this machine's CPU build)
# H200 estimate: 3 x (model build ~10 s + ~30 s of run) ~ 2 minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
CORPUS=scenarios/corpora/packing-32b.csv
if [[ "${1:-}" == "--dry-run" ]]; then
  BIN=build/cli/stepcast; MODEL=tests/data/configs/tiny-gemma4.json; MAX_LENGTH=128
  ARGS=(--device cpu --dtype float32 --tiers sdpa-auto/loop)
  small=$OUT/packing-32b-tiny.csv
  awk -F, '/^#/ || $1 == "length" { print; next } { l = int($1 / 64); if (l < 2) l = 2; print l "," $2 }' "$CORPUS" > "$small"
  CORPUS=$small
else
  BIN=$(LOG_DIR="$OUT" tools/device/build.sh | tail -1) || { echo "build failed"; exit 1; }
  MODEL=gemma-4-26b-a4b; MAX_LENGTH=8192; ARGS=(--tiers sdpa-auto/grouped/gqa-expand)
fi
RUNS=$OUT/packing-stall-runs.jsonl
rm -f "$RUNS"
for k in 1 2 3; do
  t1=$(date +%s)
  timeout 150 "$BIN" measure --model "$MODEL" "${ARGS[@]}" --run-corpus "$CORPUS" --policy bucket-to-pair \
    --micro-batch 2 --accumulation 4 --max-length $MAX_LENGTH --run-id "packing-32b/bucket-to-pair/repeat-$k" \
    --out "$RUNS" >>"$OUT/packing-stall-progress.log" 2>&1
  echo "repeat $k rc=$? in $(( $(date +%s) - t1 )) s"
done
python3 - "$RUNS" <<'PY' | tee "$OUT/packing-stall.txt"
import json, sys
runs = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs.setdefault(r["run"]["id"], []).append(r)
for run_id, recs in runs.items():
    print(f"{run_id}: total {recs[-1]['run']['elapsed_s']:.2f} s; steps " +
          " ".join(f"{r['width']}:{r['step_s']:.2f}" for r in recs))
PY
