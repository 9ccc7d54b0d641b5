#!/usr/bin/env bash
# Device call: packing on the H200 (measurements/predictions/packing.md). The 32-sample corpus
# scenarios/corpora/packing-32.csv under the four batchings of the predictions (bucket-to-pair, padding-free
# block-mask, padding-free varlen, pack varlen), micro-batch 2, accumulation 4, max_length 8,192, each a
# real LoRA run of Gemma-4 26B-A4B by the harness's run probe in its own process (first-seen shapes new to
# it), then micro-batch 0 once more under CUPTI for its kernel table. The check: each run's wall clock
# against packing.md's "predicted run, no start-up" (goal within 5 %), and the attention kernels of micro-batch
# 0 against the predicted attention time of its documents (Σ over documents of the causal, windowed Lᵢ² work,
# docs/planner.md "Packing"); block-mask minus varlen on the same documents is the mask path's cost.
#
# Usage: tools/device/packing.sh [--dry-run]
#   --dry-run: the same on this machine's CPU build (build/cli/stepcast, or $BIN) with the tiny Gemma-4
#   config and the corpus scaled down 64x (max_length 128): it exercises the runs, the records and the
#   check; its figures mean nothing, and a CPU build has no CUPTI (no kernel tables).
# H200 estimate: build ~60 s, four runs of ~25-45 s each (model build ~10 s + ~20-30 s of run + one
# kernel-table step), ~3.5 minutes in all. Everything worth keeping is under $OUT (runs, tables, log).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
DRY=0
[[ "${1:-}" == "--dry-run" ]] && DRY=1
t0=$(date +%s)
CORPUS=scenarios/corpora/packing-32.csv
KDIR=/tmp/packing-kernels
rm -rf "$KDIR"
if (( DRY )); then
  BIN=${BIN:-build/cli/stepcast}
  MODEL=tests/data/configs/tiny-gemma4.json
  MAX_LENGTH=128
  # Debian's LibTorch 1.13 has no grouped GEMM: the tiny model's experts loop.
  DEVICE_ARGS=(--device cpu --dtype float32 --tiers sdpa-auto/loop)
  small=$OUT/packing-32-tiny.csv
  awk -F, '/^#/ || $1 == "length" { print; next } { l = int($1 / 64); if (l < 2) l = 2; print l "," $2 }' "$CORPUS" > "$small"
  CORPUS=$small
else
  BIN=$(LOG_DIR="$OUT" tools/device/build.sh | tail -1) || { echo "build failed"; exit 1; }
  echo "built $BIN in $(( $(date +%s) - t0 )) s"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  MODEL=gemma-4-26b-a4b
  MAX_LENGTH=8192
  # The tier of the coefficients packing.md was predicted with (h200-sdpa-auto-grouped-gqa-expand.yaml).
  DEVICE_ARGS=(--tiers sdpa-auto/grouped/gqa-expand)
fi
RUNS=$OUT/packing-runs.jsonl
rm -f "$RUNS"
for v in "bucket-to-pair" "padding-free block-mask" "padding-free varlen" "pack varlen"; do
  set -- $v
  id="packing-32/$1${2:+/$2}"
  t1=$(date +%s)
  summary=$(timeout 90 "$BIN" measure --model "$MODEL" "${DEVICE_ARGS[@]}" --run-corpus "$CORPUS" --policy "$1" \
    ${2:+--pack-attention $2} --micro-batch 2 --accumulation 4 --max-length $MAX_LENGTH --run-id "$id" \
    --run-kernels 0 --kernel-dir "$KDIR" --out "$RUNS" --format json 2>>"$OUT/packing-progress.log")
  rc=$?
  echo "$id rc=$rc in $(( $(date +%s) - t1 )) s (process, model build included)"
  if (( rc == 0 )); then
    python3 -c 'import json, sys; d = json.load(sys.stdin); print("  ", d["micro_batches"], "micro-batches,", round(d["total_s"], 2), "s; kernel table:", d["kernel_table"] or "none")' <<<"$summary"
  else
    tail -5 "$OUT/packing-progress.log"
  fi
done
tail -4 "$OUT/packing-progress.log"
[[ -d $KDIR ]] && tar czf "$OUT/packing-kernels.tar.gz" -C "$(dirname "$KDIR")" "$(basename "$KDIR")"

[[ -s $RUNS ]] || { echo "no run recorded"; exit 1; }
# The check. Predictions: packing.md's table, one row per batching (the fact lives there only).
python3 - "$RUNS" measurements/predictions/packing.md "$KDIR" "$BIN" "$DRY" <<'PY' | tee "$OUT/packing-check.txt"
import json, math, os, re, subprocess, sys
runs_file, predictions_md, kernel_dir, stepcast, dry = sys.argv[1:6]
dry = dry == "1"
runs = {}
for line in open(runs_file):
    rec = json.loads(line)
    run = rec["run"]
    runs.setdefault(run["id"], []).append((rec, run))

# Table rows: "| bucket-to-pair R2x4 L8192 | ... | predicted run, no start-up (s) | peak GiB |".
predicted = {}
for line in open(predictions_md):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 10 and re.match(r"(bucket-to-pair|padding-free|pack) R", cells[0]):
        words = cells[0].split()
        key = words[0] + ("/" + words[-1] if words[0] in ("padding-free", "pack") else "")
        predicted[key] = float(cells[8])
print("== wall clock: measured run (elapsed_s of the last micro-batch) vs packing.md" +
      (" (dry run: tiny CPU config, the errors mean nothing)" if dry else ""))
worst = 0.0
for run_id, steps in runs.items():
    key = run_id.split("/", 1)[1]
    measured = steps[-1][1]["elapsed_s"]
    first_seen = sum(1 for _, r in steps if r["first_seen"])
    pred = predicted.get(key)
    err = (measured - pred) / pred if pred else float("nan")
    worst = max(worst, abs(err)) if pred else worst
    print(f"{run_id:36s} {len(steps):3d} micro-batches ({first_seen} first-seen)  measured {measured:8.2f} s  "
          f"predicted {pred if pred else float('nan'):6.1f} s  error {err * 100:+6.1f} %  {'ok' if abs(err) <= 0.05 else 'MISS'}")
print(f"worst |error| {worst * 100:.1f} % (goal 5 %)")
fastest = min(runs, key=lambda i: runs[i][-1][1]["elapsed_s"])
base = runs.get("packing-32/bucket-to-pair")
if base:
    for run_id, steps in runs.items():
        print(f"{run_id:36s} {100 * (steps[-1][1]['elapsed_s'] / base[-1][1]['elapsed_s'] - 1):+6.1f} % vs bucket-to-pair")
print("fastest:", fastest)

# Attention of micro-batch 0 against Σ Lᵢ²: the model's attention term on its documents (docs/method.md:
# attention_s_per_tflop x 4 * heads * head_dim * attended pairs * layers * 3.5 passes / 1e12; pairs per
# document: causal over its length rounded up to the 128-row tile, the sliding window within it).
config = json.load(open("scenarios/models/gemma-4-26b-a4b.json"))
text = config.get("text_config", config)
coef = None
for line in open("scenarios/coefficients/h200-sdpa-auto-grouped-gqa-expand.yaml"):
    m = re.match(r"\s*attention_s_per_tflop: \{value: ([0-9.e+-]+)", line)
    if m:
        coef = float(m.group(1))
types = {"sliding_attention": (text["head_dim"], text["sliding_window"]), "full_attention": (text["global_head_dim"], 0)}
def pairs(length, window):
    w = math.ceil(length / 128) * 128
    if window <= 0 or window >= w:
        return w * (w + 1) / 2
    return window * (window + 1) / 2 + (w - window) * window
def predicted_attention_s(documents):
    total = 0.0
    for layer_type in text["layer_types"]:
        head_dim, window = types[layer_type]
        work = sum(pairs(l, window) for row in documents for l in row)
        total += coef * 4 * text["num_attention_heads"] * head_dim * work * 3.5 / 1e12
    return total
print("== attention kernels of micro-batch 0 (CUPTI, `stepcast kernels`) vs the predicted attention term")
tables = {}
for f in sorted(os.listdir(kernel_dir)) if os.path.isdir(kernel_dir) else []:
    report = json.loads(subprocess.run([stepcast, "kernels", os.path.join(kernel_dir, f), "--format", "json"],
                                       check=True, capture_output=True, text=True).stdout)
    tables[f] = report["categories"]["attention"]["time_s"]
if not tables:
    print("no kernel tables (a build without CUPTI)")
for run_id, steps in runs.items():
    if "documents" not in steps[0][1]:
        continue
    docs = steps[0][1]["documents"]
    name = next((f for f in tables if f.startswith("run_" + re.sub(r"[^A-Za-z0-9_.-]", "_", run_id) + "_mb0")), None)
    pred = predicted_attention_s(docs)
    measured = tables.get(name)
    print(f"{run_id:36s} documents {sum(len(r) for r in docs):2d}, Σ L² {sum(l * l for r in docs for l in r):>12,}  "
          f"predicted (varlen work) {pred:.3f} s  measured {measured if measured is not None else float('nan'):.3f} s"
          + ("" if measured is None else f"  ratio {measured / pred:.2f}"))
# Padding-free micro-batch 0 holds the same documents under both modes: the difference is the mask path.
masked, varlen = (next((t for f, t in tables.items() if f.startswith("run_packing-32_padding-free_" + m)), None)
                  for m in ("block-mask", "varlen"))
if masked is not None and varlen is not None:
    print(f"mask path (block-mask minus varlen attention, padding-free micro-batch 0): {masked - varlen:.3f} s")
PY
ls -la "$OUT"
echo "packing.sh done in $(( $(date +%s) - t0 )) s"
