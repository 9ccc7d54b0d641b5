#!/usr/bin/env bash
# The transformers + peft stack under torchrun + torch DDP on N H200s (tools/device/ddp_hf.py), the seed-like
# corpus under both samplers, for comparison with `stepcast plan --gpus N` and `stepcast measure --nproc N`.
# Needs N >= 2 GPUs, transformers and peft (the H200 machine's stack). Each run: model build ~60 s per rank
# (in parallel), then at most BUDGET_S (default 60 s) of steps: ~2 x 130 s = ~4.5 min for both samplers at one N.
# Usage: N=4 OUT=/tmp/out tools/device/ddp_hf.sh
# Not runnable on the CPU (no transformers on Debian 12); its sampler code is checked by --dry-run below, which
# prints each rank's micro-batches without a model.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
N=${N:-$(nvidia-smi -L 2>/dev/null | wc -l)}
BUDGET_S=${BUDGET_S:-60}
mkdir -p "$OUT"
if [ "${1:-}" = "--dry-run" ]; then
  "${PYTHON:-python3}" - <<'PY'
import sys; sys.path.insert(0, "tools/device")
import importlib.util, types
sys.modules["hf_fidelity"] = types.SimpleNamespace(build=None)  # no transformers needed for the samplers
spec = importlib.util.spec_from_file_location("ddp_hf", "tools/device/ddp_hf.py"); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
lengths = m.lengths_of("scenarios/corpora/seed-like-20k.csv", 64, 16384)
for n in (2, 4):
    for name in ("distributed", "length-grouped"):
        per_rank = [m.distributed_batches(lengths, n, r, 2, 1) if name == "distributed" else m.grouped_batches(lengths, n, r, 2, 8 // n, 1) for r in range(n)]
        tokens = [sum(len(b) * max(b) for b in rb) for rb in per_rank]
        print(n, name, "micro-batches", [len(rb) for rb in per_rank], "processed tokens", tokens)
PY
  exit $?
fi
[ "$N" -ge 2 ] || { echo "ddp_hf.sh: needs 2+ GPUs (found $N)"; exit 1; }
ACC=${ACC:-$(( 16 / N ))}   # 16 rows per optimizer step, as the one-GPU scenario (1 row x 16: 2 x 16,384 runs out of memory under DDP)
for sampler in distributed length-grouped; do
  t=$(date +%s)
  timeout $(( BUDGET_S + 120 )) torchrun --nproc-per-node "$N" tools/device/ddp_hf.py scenarios/models/gemma-4-26b-a4b.json \
    scenarios/corpora/seed-like-20k.csv "$OUT/ddp-hf-n$N.jsonl" --sampler $sampler --micro-batch 1 \
    --accumulation "$ACC" --max-length 16384 --samples 2048 --seed 1 --budget-s "$BUDGET_S" 2>&1 | grep -E "^window|Error|error" | tail -5
  echo "ddp_hf N=$N $sampler rc=$? in $(( $(date +%s) - t )) s"
done
