#!/usr/bin/env bash
# The CI sanitizer job (docs/reliability.md): one clang-14 build with AddressSanitizer +
# UndefinedBehaviorSanitizer (float-cast-overflow included) and libFuzzer's coverage hooks, of the libraries,
# the stepcast program, its tests and the fuzz targets (no LibTorch harness, no benchmarks) in build-asan/;
# then the whole suite under it (the fuzz replay tests run every seed and every input that ever broke a
# promise through the readers and the whole commands); then, when asked, a bounded libFuzzer run per reader.
# Usage: tools/sanitize.sh [seconds of libFuzzer per reader, default 0: none] [build folder, default build-asan]
# STEPCAST_FUZZ_SEED=N fixes libFuzzer's seed (CI: the same mutation sequence on every run).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-0}"
dir="${2:-build-asan}"
jobs="$(nproc)"
readers=(model_config coefficients measurements runs scenario corpus trace cupti campaign)

# -O1: sanitizer reports keep their frames and compiling is the job's largest cost (docs/reliability.md);
# -g1: line tables for the reports without full debug information. No compiler cache: the cost stated in
# .ci/run is that of a clean clone.
start=$SECONDS
cmake -S . -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DSTEPCAST_FUZZ=ON -DSTEPCAST_HARNESS=OFF \
  -DSTEPCAST_BENCHMARKS=OFF >&2
cmake --build "$dir" -j "$jobs" >&2
built=$SECONDS

# Every report aborts (cmake/StepcastSanitizers.cmake builds without recovery).
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir "$dir" --output-on-failure -j "$jobs"
tested=$SECONDS
echo "sanitize: build $((built - start)) s, suite $((tested - built)) s" >&2

((seconds > 0)) || exit 0
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for reader in "${readers[@]}"; do
  mkdir -p "$work/$reader"
  # New inputs go to the scratch folder (first); the shipped seeds are only read. A finding aborts the job
  # and leaves crash-* (timeout-*, oom-*) in the current folder: fix it and add it to fuzz/regressions/$reader/.
  log="$work/$reader.log"
  if ! "$dir/fuzz/fuzz_$reader" "$work/$reader" "fuzz/corpus/$reader" "fuzz/regressions/$reader" \
    -max_total_time="$seconds" ${STEPCAST_FUZZ_SEED:+-seed="$STEPCAST_FUZZ_SEED"} -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $reader found a crash or a broken promise (above)" >&2
    exit 1
  fi
  grep -E "^stat::(number_of_executed_units|peak_rss_mb)" "$log" | sed "s/^/fuzz $reader: /"
done
echo "sanitize: fuzzing $((SECONDS - tested)) s" >&2
