#!/usr/bin/env bash
# Time and peak memory of each reader against input size (docs/reliability.md): generates inputs of
# growing size under a scratch folder and runs the stepcast command that reads each through /usr/bin/time.
# Prints one markdown row per run. Not a test: figures depend on the machine and its load.
# Usage: tools/reader_costs.sh [build folder, default build] [scratch folder, default a mktemp -d]
set -euo pipefail
cd "$(dirname "$0")/.."
exe="$(realpath "${1:-build}")/cli/stepcast"
work="${2:-$(mktemp -d)}"
mkdir -p "$work"
coefficients=scenarios/coefficients/h200-hf-peft-sdpa-grouped_mm.yaml
record='{"model": "gemma-4-26b-a4b", "gpu": "NVIDIA H200", "tier": "hf-peft/sdpa-grouped_mm", "rows": [570, 1054], "width": 1054, "step_s": 0.71, "peak_gib": 52.1}'

# measure LABEL FILE COMMAND...: one row "| label | MB | s | peak MiB | exit |".
measure() {
  local label="$1" file="$2"
  shift 2
  local mb
  mb=$(awk -v b="$(stat -c %s "$file")" 'BEGIN { printf "%.1f", b / 1048576 }')
  local code=0
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "$@" >/dev/null 2>"$work/err.txt" || code=$?
  read -r seconds kib < <(tail -n 1 "$work/time.txt") || true
  printf "| %s | %s | %s | %d | %d |\n" "$label" "$mb" "$seconds" "$((kib / 1024))" "$code"
}

echo "| reader (command) | input MB | wall s | peak MiB | exit |"
echo "| --- | --- | --- | --- | --- |"
for samples in 500000 5000000 50000000; do
  f="$work/corpus-$samples.txt"
  [ -f "$f" ] || awk -v n="$samples" 'BEGIN { srand(7); for (i = 0; i < n; i++) print int(exp(log(700) + 0.8 * (rand() + rand() + rand() - 1.5) * 2)) + 1 }' >"$f"
  measure "corpus, $samples samples (plan --no-sweep)" "$f" "$exe" plan scenarios/h200-hf-peft-64.yaml --corpus "$f" --no-sweep
done
for lines in 10000 100000 1000000; do
  f="$work/records-$lines.jsonl"
  [ -f "$f" ] || awk -v n="$lines" -v r="$record" 'BEGIN { for (i = 0; i < n; i++) print r }' >"$f"
  measure "measurements, $lines records (predict)" "$f" "$exe" predict --coefficients "$coefficients" --measurements "$f"
done
for events in 330000 3300000; do
  f="$work/trace-$events.json"
  [ -f "$f" ] || awk -v n="$events" 'BEGIN {
      print "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H200\", \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}], \"traceEvents\": ["
      for (i = 0; i < n; i++)
        printf "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"nvjet_hsh_%d_kernel\", \"pid\": 0, \"tid\": 7, \"ts\": %d, \"dur\": %.1f, \"args\": {\"device\": 0, \"stream\": 7}}%s\n", i % 500, i * 10, 3 + (i % 17), (i + 1 < n ? "," : "")
      print "]}" }' >"$f"
  measure "Chrome trace, $events events (kernels)" "$f" "$exe" kernels "$f"
done
for rows in 10000 100000 1000000; do
  f="$work/cupti-$rows.jsonl"
  [ -f "$f" ] || awk -v n="$rows" 'BEGIN {
      print "{\"stepcast_cupti_table\": 1, \"device\": \"NVIDIA H200\", \"compute_major\": 9, \"compute_minor\": 0, \"num_sms\": 132, \"steps\": 1, \"short_threshold_ns\": 10000, \"label\": \"generated\"}"
      for (i = 0; i < n; i++)
        printf "{\"name\": \"kernel_%d\", \"kind\": \"kernel\", \"count\": 30, \"total_ns\": %d, \"min_ns\": 1000, \"max_ns\": 90000, \"short_count\": 3, \"short_ns\": 9000}\n", i, 10000000 - i }' >"$f"
  measure "CUPTI table, $rows rows (kernels)" "$f" "$exe" kernels "$f"
done
f="$work/config.json"
cp scenarios/models/gemma-4-26b-a4b.json "$f"
measure "model config, shipped Gemma-4 (describe)" "$f" "$exe" describe --model "$f"
f="$work/config-1024.json"
python3 - "$f" <<'PY'
import json, sys
c = json.load(open("scenarios/models/llama-3-8b.json"))
c["num_hidden_layers"] = 1024
c["layer_types"] = ["full_attention"] * 1024
json.dump(c, open(sys.argv[1], "w"))
PY
measure "model config, 1024 layers (describe)" "$f" "$exe" describe --model "$f"
f="$work/config-1e6.json"
sed 's/"num_hidden_layers": 1024/"num_hidden_layers": 1000000/' "$work/config-1024.json" >"$f"
measure "model config, 10^6 layers (describe: refused)" "$f" "$exe" describe --model "$f"
