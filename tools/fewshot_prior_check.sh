#!/usr/bin/env bash
# Few shot from four probes, with and without the transferred prior (docs/families.md, "Few shot from the
# transferred prior"): for each H200 harness file, fit the four probe shapes (1 x 2048, 2 x 4096, 4 x 2048,
# 2 x 4096 padded 0.25; Llama-3-8B has no padded record: 1 x 8192 instead, chosen before any held-out error was
# seen) and predict the file's other records of the same tier. A post-hoc evaluation on data already measured.
# Usage: tools/fewshot_prior_check.sh [BIN] [PRIOR_SIGMA]   (BIN defaults to build/cli/stepcast, sigma to 0.5)
set -euo pipefail
BIN=${1:-build/cli/stepcast}
SIGMA=${2:-0.5}
PRIOR=scenarios/coefficients/h200-gemma4-categories.yaml
TIER=sdpa-auto/grouped/gqa-expand
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# split FILE WANT OUT_PREFIX: the first record of each wanted (rows, width, padding) is a probe, the rest held out.
split() {
  python3 - "$1" "$2" "$3" "$TIER" <<'PY'
import json, sys
src, want, out, tier = sys.argv[1], eval(sys.argv[2]), sys.argv[3], sys.argv[4]
seen, probes, rest = set(), open(out + "-probes.jsonl", "w"), open(out + "-rest.jsonl", "w")
for line in open(src):
    r = json.loads(line)
    if r["tier"] != tier: continue
    k = (len(r["rows"]), r["width"], r["padding_frac"])
    (probes if k in want and k not in seen else rest).write(line); seen.add(k)
PY
}

# mape COEFFS REST [PREDICT_ARGS...]: held-out step and peak MAPE (%) and the largest errors.
mape() {
  "$BIN" predict --coefficients "$1" --measurements "$2" "${@:3}" --format json | python3 -c '
import json, sys
rows = json.load(sys.stdin)
rows = rows["records"]
s = [abs(r["step_error_rel"]) for r in rows if "step_error_rel" in r]
p = [abs(r["peak_error_rel"]) for r in rows if "peak_error_rel" in r]
print(f"n {len(s)}  step {100*sum(s)/len(s):.1f} % (max {100*max(s):.1f})  peak {100*sum(p)/len(p):.2f} % (max {100*max(p):.2f})")'
}

FOUR="{(1, 2048, 0.0), (2, 4096, 0.0), (4, 2048, 0.0), (2, 4096, 0.25)}"
LLAMA="{(1, 2048, 0.0), (2, 4096, 0.0), (4, 2048, 0.0), (1, 8192, 0.0)}"
for model in qwen3-30b-a3b mixtral-8x7b qwen1.5-moe-a2.7b llama-3-8b; do
  want=$FOUR; [ "$model" = llama-3-8b ] && want=$LLAMA
  split "measurements/records/h200-$model.jsonl" "$want" "$WORK/$model"
  "$BIN" calibrate --measurements "$WORK/$model-probes.jsonl" --prior none --out "$WORK/$model-plain.yaml" >/dev/null
  "$BIN" calibrate --measurements "$WORK/$model-probes.jsonl" --prior "$PRIOR" --prior-transfer \
    --prior-sigma "$SIGMA" --out "$WORK/$model-prior.yaml" >/dev/null
  echo "$model zero shot (predict --transfer):  $(mape "$PRIOR" "$WORK/$model-rest.jsonl" --model "$model" --transfer)"
  echo "$model four probes, no prior:            $(mape "$WORK/$model-plain.yaml" "$WORK/$model-rest.jsonl")"
  echo "$model four probes, transferred prior:   $(mape "$WORK/$model-prior.yaml" "$WORK/$model-rest.jsonl")"
done
