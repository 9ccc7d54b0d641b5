#!/usr/bin/env bash
# The collective-free parts of several GPUs on ONE H200 (tools/device/parallel_local.py): FSDP's per-layer gather
# as local copies and the overlap slowdown of a concurrent copy stream. No build needed (PyTorch only).
# Expected H200 time: ~40 s (gather: 4 shard counts x 11 copies of 1.6 GB; overlap: ~8 s of GEMMs three ways);
# limit 170 s. Prediction committed before the run: measurements/predictions/parallel_local.md.
# CPU dry run here: PYTHON=/usr/bin/python3 tools/device/parallel_local.sh --dry-run (Debian's python3-torch)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
start=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv 2>/dev/null
timeout 170 "${PYTHON:-python3}" tools/device/parallel_local.py --out "$OUT/parallel_local.jsonl" "$@"
echo "parallel_local rc=$? in $(( $(date +%s) - start )) s"
