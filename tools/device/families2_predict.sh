#!/usr/bin/env bash
# Predictions of every point of tools/device/families2.sh (its kernels points are the 2x4096 ones), written
# before the measurement: the Gemma-4 H200 per-category coefficients (scenarios/coefficients/
# h200-gemma4-categories.yaml) transferred to Qwen1.5-MoE-A2.7B (--transfer: zero shot), rows padded as the
# harness pads them (harness/probes.cpp padded_rows, as tools/device/families_predict.sh), LoRA r=16 on q, k, v,
# o as measured. Runs here:
#   tools/device/families2_predict.sh > measurements/predictions/families2.jsonl
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/cli/stepcast}
COEF=scenarios/coefficients/h200-gemma4-categories.yaml
model=qwen1.5-moe-a2.7b
points=(1x1024 1x2048 1x4096 1x8192 2x2048 4x2048 2x4096 4x1024 2x4096:0.25 4x2048:0.37 1x8192:0.25 2x2048:0.125)
for point in "${points[@]}"; do
  rows=$(python3 tools/device/harness_rows.py "$point")
  width=${point%%:*}; width=${width#*x}
  cmd="$BIN predict --coefficients $COEF --model $model --transfer --lora-targets q_proj,k_proj,v_proj,o_proj --rows $rows --width $width --format json"
  $cmd | python3 -c "
import json, sys
j = json.load(sys.stdin)
print(json.dumps({'model': '$model', 'point': '$point', 'rows': j['rows'], 'width': j['width'],
                  'predicted_step_s': j['predicted_step_s'], 'predicted_peak_gib': j['predicted_peak_gib'],
                  'step_interval_s': j.get('step_interval_s'), 'transfer': j['transfer'],
                  'coefficients': '$COEF', 'stepcast_commit': j['commit'], 'command': '$cmd'}))"
done
