#!/usr/bin/env bash
# Device call: FSDP and DDP as ranks of one process on one H200 (measurements/predictions/fsdp_local.md). One GPU
# cannot host two NCCL ranks, so each strategy runs as `--nproc 1 --strategy ddp|fsdp` (a real rank over c10d
# NCCL: FSDP's per-layer gathers become one-rank all-gathers, i.e. local copies, and DDP's all-reduce a one-rank
# NCCL call) beside the one-process harness run (no --nproc), on Gemma-4 26B-A4B LoRA at three shapes: 1x2048,
# 1x4096, 1x8192, three micro-batches each (the first of each shape is first-seen). Then micro-batch 4 once more
# under CUPTI for its kernel table (NCCL kernels under `communication`, the gathers' copies under `copy`).
# The check: per strategy and shape, the median step_s of the micro-batches that are not first-seen against the
# one-process run, and the kernel table's categories.
#
# Usage: tools/device/fsdp_local.sh [--dry-run]
#   --dry-run: the same on this machine's CPU build (build/cli/stepcast, or $BIN) over Gloo with the tiny
#   Gemma-4 config and widths divided by 64; its figures mean nothing, and a CPU build has no CUPTI.
# H200 estimate: build ~60 s, three runs of ~25 s each (model build ~10 s, 9 micro-batches ~8 s, optimizer
# steps, one kernel-table step), ~2.5 minutes in all. Everything is in one tar, $OUT/fsdp_local.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
DRY=0
[[ "${1:-}" == "--dry-run" ]] && DRY=1
t0=$(date +%s)
WORK=$(mktemp -d /tmp/fsdp_local.XXXXXX)
if (( DRY )); then
  BIN=${BIN:-build/cli/stepcast}
  MODEL=tests/data/configs/tiny-gemma4.json
  WIDTHS=(32 64 128)
  # Debian's LibTorch 1.13 has no grouped GEMM: the tiny model's experts loop.
  DEVICE_ARGS=(--device cpu --dtype float32 --tiers sdpa-auto/loop)
else
  BIN=$(LOG_DIR="$WORK" tools/device/build.sh | tail -1) || { echo "build failed"; tar czf "$OUT/fsdp_local.tar.gz" -C "$WORK" .; exit 1; }
  echo "built $BIN in $(( $(date +%s) - t0 )) s"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$WORK/gpu.txt"
  MODEL=gemma-4-26b-a4b
  WIDTHS=(2048 4096 8192)
  # The tier of the H200 coefficients (scenarios/coefficients/h200-sdpa-auto-grouped-gqa-expand.yaml).
  DEVICE_ARGS=(--tiers sdpa-auto/grouped/gqa-expand)
fi
CORPUS=$WORK/fsdp-local.csv
{ echo "# fsdp_local.sh: three samples at each width, in order (pad-to-longest, micro-batch 1: one shape each)"
  echo "length"
  for w in "${WIDTHS[@]}"; do for _ in 1 2 3; do echo "$w"; done; done; } > "$CORPUS"
RUNS=$WORK/fsdp-local-runs.jsonl
KDIR=$WORK/kernels
rm -f "$RUNS"
for strategy in single ddp fsdp; do
  args=()
  [[ $strategy != single ]] && args=(--nproc 1 --strategy "$strategy")
  t1=$(date +%s)
  timeout 90 "$BIN" measure --model "$MODEL" "${DEVICE_ARGS[@]}" --run-corpus "$CORPUS" --policy pad-to-longest \
    --micro-batch 1 --accumulation 1 --max-length "${WIDTHS[-1]}" --run-id "fsdp-local/$strategy" "${args[@]}" \
    --run-kernels 4 --kernel-dir "$KDIR" --out "$RUNS" --format json >"$WORK/$strategy.json" 2>"$WORK/$strategy.log"
  rc=$?
  echo "$strategy rc=$rc in $(( $(date +%s) - t1 )) s (process, model build included)"
  (( rc == 0 )) || tail -5 "$WORK/$strategy.log"
  grep -h "built\|fsdp rank" "$WORK/$strategy.log"
done

python3 - "$RUNS" "$KDIR" "$BIN" "$DRY" <<'PY' | tee "$WORK/fsdp-local-check.txt"
import json, os, statistics, subprocess, sys
runs_file, kernel_dir, stepcast, dry = sys.argv[1:5]
steps = {}  # (strategy, width) -> step_s of micro-batches that are not first-seen
optimizer = {}
for line in open(runs_file) if os.path.exists(runs_file) else []:
    rec = json.loads(line)
    run = rec["run"]
    strategy = run["id"].split("/")[1]
    if run.get("optimizer_s") is not None:
        optimizer.setdefault(strategy, []).append(run["optimizer_s"])
    if not run["first_seen"]:
        steps.setdefault((strategy, rec["width"]), []).append(rec["step_s"])
print("== step_s (median of the micro-batches not first-seen) vs the one-process run" +
      (" (dry run: tiny CPU config over Gloo, the figures mean nothing)" if dry == "1" else ""))
for (strategy, width), times in sorted(steps.items()):
    base = steps.get(("single", width))
    med = statistics.median(times)
    ratio = med / statistics.median(base) if base else float("nan")
    print(f"{strategy:6s} 1x{width:<5d} {med:8.4f} s  ({len(times)} micro-batches)  x{ratio:.3f} of single")
for strategy, times in sorted(optimizer.items()):
    print(f"{strategy:6s} optimizer step median {statistics.median(times):.4f} s")
print("== kernel tables (`stepcast kernels`): seconds by category")
for f in sorted(os.listdir(kernel_dir)) if os.path.isdir(kernel_dir) else []:
    report = json.loads(subprocess.run([stepcast, "kernels", os.path.join(kernel_dir, f), "--format", "json"],
                                       check=True, capture_output=True, text=True).stdout)
    cats = {k: round(v["time_s"], 4) for k, v in report["categories"].items()}
    print(f, cats)
if not os.path.isdir(kernel_dir):
    print("no kernel tables (a build without CUPTI)")
PY
tar czf "$OUT/fsdp_local.tar.gz" -C "$WORK" .
rm -rf "$WORK"
ls -la "$OUT"
echo "fsdp_local.sh done in $(( $(date +%s) - t0 )) s"
