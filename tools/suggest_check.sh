#!/usr/bin/env bash
# How many suggested probes the sm_120 study's four-probe design needs (docs/method.md, "Probe advice"): for N = 0..MAX,
# `stepcast measure --suggest N` picks N shapes among the H200 gqa-expand records given the sm_120 study's four probes
# (lines 4, 7, 11, 13) and the wall clock of scenarios/h200-gemma-4-26b-a4b.yaml priced by the harness's
# coefficients of the same tier; the four plus the N are fitted with --prior none and the held-out records
# predicted. Prints N, the picks and the held-out step MAPE / max. Usage: tools/suggest_check.sh [MAX] [STEPCAST]
set -uo pipefail
cd "$(dirname "$0")/.."
MAX=${1:-6}
B=${2:-build/cli/stepcast}
M=measurements/records/h200-gemma-4-26b-a4b-gqa-expand.jsonl
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# The scenario with the harness tier's coefficients (the shipped one prices transformers + peft runs).
sed -e "s|coefficients: coefficients/h200-hf-peft-sdpa-grouped_mm.yaml|coefficients: $PWD/scenarios/coefficients/h200-sdpa-auto-grouped-gqa-expand.yaml|" \
    -e "s|file: corpora/|file: $PWD/scenarios/corpora/|" scenarios/h200-gemma-4-26b-a4b.yaml >"$T/scenario.yaml"
sed -n '4p;7p;11p;13p' "$M" >"$T/seed4.jsonl"
# The candidates: every other record (a shape already measured is no probe); cand_line maps back to $M's lines.
total=$(wc -l <"$M")
cand_line=()
: >"$T/cand.jsonl"
for ((i = 1; i <= total; i++)); do
  case " 4 7 11 13 " in *" $i "*) continue ;; esac
  sed -n "${i}p" "$M" >>"$T/cand.jsonl"
  cand_line+=("$i")
done
for ((n = 0; n <= MAX; n++)); do
  lines="4 7 11 13"
  if ((n > 0)); then
    picks=$("$B" measure --suggest "$n" --scenario "$T/scenario.yaml" --measurements "$T/seed4.jsonl" \
      --candidates "$T/cand.jsonl" --format json | python3 -c 'import json,sys; print(" ".join(p["point"].rsplit(":",1)[1] for p in json.load(sys.stdin)["suggested"]))') ||
      { echo "suggest failed for N=$n"; exit 1; }
    for k in $picks; do lines="$lines ${cand_line[$((k - 1))]}"; done
  fi
  : >"$T/fit.jsonl"; : >"$T/held.jsonl"
  for ((i = 1; i <= total; i++)); do
    if [[ " $lines " == *" $i "* ]]; then sed -n "${i}p" "$M" >>"$T/fit.jsonl"; else sed -n "${i}p" "$M" >>"$T/held.jsonl"; fi
  done
  "$B" calibrate --model gemma-4-26b-a4b --tier sdpa-auto/grouped/gqa-expand --measurements "$T/fit.jsonl" \
    --prior none --out "$T/fit.yaml" --force >/dev/null 2>&1 || { echo "N=$n: calibrate failed"; continue; }
  mape=$("$B" predict --coefficients "$T/fit.yaml" --measurements "$T/held.jsonl" 2>&1 | tail -1)
  echo "N=$n  fitted lines: $lines  held-out: $mape"
done
