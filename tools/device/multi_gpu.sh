#!/usr/bin/env bash
# For when 2, 4 or 8 H200s of one host are lent (docs/planner.md, "Several GPUs"; predictions committed
# before the run: measurements/predictions/multi_gpu.md). PARTS picks what runs (default "bus measure samplers"):
#   bus      NCCL bus bandwidth at the strategies' message sizes (tools/device/nccl_bus.py under torchrun):
#            DDP's 25 MiB bucket, FSDP's 1.61 GiB layer gather and 25 MiB reduce-scatter, EP's 176 MiB
#            all-to-all, all-reduce 1 MiB-1 GiB; N = 2, 4, 8 (those present). ~15 s per N -> ~45 s.
#   measure  stepcast measure --nproc N --strategy ddp (the harness's Gloo path: gradients through host copies)
#            at 4 run shapes: pad-to-longest (padded) and bucket-to-pair (unpadded) x micro-batch 1 and 2,
#            64 synthetic samples (seed 7), max_length 4096, accumulation 8/N/R: ~40 s each -> ~160 s, at the
#            largest N only.
#   samplers the transformers + peft DDP run on the seed-like corpus under both samplers (tools/device/ddp_hf.sh,
#            BUDGET_S=45 each) -> ~4 min.
# Total ~7-8 min with the build (~150 s, tools/device/build.sh); run PARTS one or two at a time to keep each
# call under 4 minutes. Everything lands under $OUT.
# CPU dry run here (Gloo ranks, tiny model, the bus sizes / 64):
#   PYTHON=/usr/bin/python3 BIN=build/cli/stepcast tools/device/multi_gpu.sh --dry-run
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
PARTS=${PARTS:-bus measure samplers}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
start=$(date +%s)
dry=0
[ "${1:-}" = "--dry-run" ] && dry=1
if [ $dry = 1 ]; then
  GPUS=2
  MODEL=tests/data/configs/tiny-llama.json
  EXTRA="--device cpu --dtype float32 --tiers sdpa-auto/loop"
  MAXLEN=48
else
  GPUS=$(nvidia-smi -L | wc -l)
  MODEL=gemma-4-26b-a4b
  EXTRA=""
  MAXLEN=4096
  nvidia-smi topo -m 2>/dev/null | head -12
fi
echo "GPUs: $GPUS; parts: $PARTS"
if [ -z "${BIN:-}" ] && [[ "$PARTS" == *measure* ]]; then
  BIN=$(LOG_DIR="$OUT" tools/device/build.sh | tail -1) || { echo "build failed"; exit 1; }
  echo "built $BIN in $(( $(date +%s) - start )) s"
fi

if [[ "$PARTS" == *bus* ]]; then
  for n in 2 4 8; do
    [ "$n" -le "$GPUS" ] || continue
    t=$(date +%s)
    if [ $dry = 1 ]; then
      timeout 120 "$PY" tools/device/nccl_bus.py --dry-run --reps 3 --out "$OUT/nccl_bus.jsonl" | grep -c nccl_bus
    else
      timeout 120 torchrun --nproc-per-node "$n" tools/device/nccl_bus.py --out "$OUT/nccl_bus.jsonl" 2>&1 | grep nccl_bus
    fi
    echo "bus N=$n rc=$? in $(( $(date +%s) - t )) s"
  done
fi

if [[ "$PARTS" == *measure* ]]; then
  n=$GPUS
  [ "$n" -gt 8 ] && n=8
  for policy in pad-to-longest bucket-to-pair; do
    for r in 1 2; do
      acc=$(( 8 / n / r )); [ "$acc" -ge 1 ] || acc=1
      t=$(date +%s)
      # shellcheck disable=SC2086
      timeout 90 "$BIN" measure --model "$MODEL" $EXTRA --run-synthetic 64:7 --policy $policy --micro-batch $r \
        --accumulation $acc --max-length $MAXLEN --nproc "$n" --strategy ddp --format json \
        --run-id "ddp-n$n/$policy/r$r" --out "$OUT/measure-ddp.jsonl" | grep -E '"(micro_batches|total_s|world_size)"'
      echo "measure N=$n $policy R$r rc=$? in $(( $(date +%s) - t )) s"
    done
  done
fi

if [[ "$PARTS" == *samplers* ]]; then
  if [ $dry = 1 ]; then
    PYTHON=$PY tools/device/ddp_hf.sh --dry-run
  else
    N=$GPUS BUDGET_S=45 OUT="$OUT" tools/device/ddp_hf.sh
  fi
fi
echo "multi_gpu total $(( $(date +%s) - start )) s"
