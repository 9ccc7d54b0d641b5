#!/usr/bin/env bash
# Side by side: `stepcast kernels` on a ~60 MB trace vs `python3 -c 'import json; json.load(...)'` (the
# speed bar in docs/kernels.md). Usage: bench/kernels_bench.sh BUILD_DIR [SIZE_MB]. The trace goes to /tmp.
set -euo pipefail
build=${1:?usage: bench/kernels_bench.sh BUILD_DIR [SIZE_MB]}
size=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
trace=/tmp/stepcast_kernels_bench_${size}mb.json
[ -f "$trace" ] || python3 "$here/kernels_bench_trace.py" "$trace" "$size"
ls -l "$trace"
"$build/bench/kernels_bench" "$trace" 3
for i in 1 2 3; do
  /usr/bin/time -f "stepcast kernels: %e s wall, %M KiB max RSS" "$build/cli/stepcast" kernels "$trace" --format json >/dev/null
  /usr/bin/time -f "python3 json.load: %e s wall, %M KiB max RSS" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$trace"
done
