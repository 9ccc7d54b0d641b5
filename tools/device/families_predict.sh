#!/usr/bin/env bash
# Predictions of every point of tools/device/families.sh (its kernels points are the 2x4096 ones), written before the measurement: the shipped Gemma-4
# H200 coefficients (zero shot, no transfer) on Qwen3-30B-A3B and Mixtral-8x7B, rows padded as the harness
# pads them (tools/device/harness_rows.py). Runs here:
#   tools/device/families_predict.sh > measurements/predictions/families.jsonl
# It reproduces that file at the commit that added it (a4d68f5): a later stepcast refuses another model without
# --transfer (docs/method.md "Transfer"), and predicting with it is what `stepcast campaign predict
# measurements/campaigns/families2.yaml` does.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/cli/stepcast}
COEF=scenarios/coefficients/h200-sdpa-auto-grouped-gqa-expand.yaml
points=(1x1024 1x2048 1x4096 1x8192 2x2048 4x2048 2x4096 4x1024 2x4096:0.25 4x2048:0.37 1x8192:0.25 2x2048:0.125)
for model in qwen3-30b-a3b mixtral-8x7b; do
  for point in "${points[@]}"; do
    rows=$(python3 tools/device/harness_rows.py "$point")
    width=${point%%:*}; width=${width#*x}
    "$BIN" predict --coefficients "$COEF" --model "$model" --rows "$rows" --width "$width" --format json |
      python3 -c "
import json, sys
j = json.load(sys.stdin)
print(json.dumps({'model': '$model', 'point': '$point', 'rows': j['rows'], 'width': j['width'],
                  'predicted_step_s': j['predicted_step_s'], 'predicted_peak_gib': j['predicted_peak_gib'],
                  'coefficients': '$COEF', 'stepcast_commit': j['commit'],
                  'command': '$BIN predict --coefficients $COEF --model $model --rows $rows --width $width --format json'}))"
  done
done
