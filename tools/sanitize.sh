#!/usr/bin/env bash
# The CI sanitizer job (docs/reliability.md): an AddressSanitizer + UndefinedBehaviorSanitizer build with
# clang of the libraries, the stepcast program, its tests and the fuzz targets (no LibTorch harness, no
# benchmarks) in build-asan/, then the whole suite under it (the fuzz targets replay their seed and
# regression corpora), then a bounded libFuzzer run of every target.
# Usage: tools/sanitize.sh [seconds per fuzz target, default 20; 0 skips fuzzing]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
readers=(model_config coefficients measurements runs scenario corpus trace cupti)

# -O1: sanitizer reports keep their frames, and the build is the job's largest cost (docs/reliability.md).
cmake -S . -B build-asan -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DSTEPCAST_FUZZ=ON -DSTEPCAST_HARNESS=OFF -DSTEPCAST_BENCHMARKS=OFF >&2
cmake --build build-asan -j "$(nproc)" >&2

# Leak checking is off until the suite has been run clean under it (docs/reliability.md); memory errors and
# undefined behaviour abort.
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir build-asan --output-on-failure -j "$(nproc)"

if [ "$seconds" -gt 0 ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  for reader in "${readers[@]}"; do
    mkdir -p "$work/$reader"
    # New inputs go to the scratch folder (first), the shipped seeds are only read; a finding aborts the job
    # and leaves crash-* in the current folder: add it to fuzz/regressions/$reader/ with its fix.
    log="$work/$reader.log"
    if ! build-asan/fuzz/fuzz_"$reader" "$work/$reader" "fuzz/corpus/$reader" "fuzz/regressions/$reader" \
      -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 >"$log" 2>&1; then
      tail -n 60 "$log"
      echo "fuzz: $reader found a crash or a broken promise (above)" >&2
      exit 1
    fi
    grep -E "^stat::(number_of_executed_units|peak_rss_mb)" "$log" | sed "s/^/fuzz $reader: /"
  done
fi
