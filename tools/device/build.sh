#!/usr/bin/env bash
# Builds `stepcast measure` on the GPU machine (PyTorch's LibTorch, CUDA toolkit with CUPTI, no Ceres) and
# prints the path of the binary on its last line. The full tree first; if that fails (another subcommand
# mid-edit), the harness-only project in tools/device/standalone. Logs go to $LOG_DIR (default /tmp).
set -uo pipefail
cd "$(dirname "$0")/../.."
log_dir=${LOG_DIR:-/tmp}
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
export CUDAToolkit_ROOT=${CUDAToolkit_ROOT:-/usr/local/cuda}
common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_prefix"
        -DCMAKE_CUDA_COMPILER="$CUDAToolkit_ROOT/bin/nvcc")
if cmake -S . -B /tmp/sc-full "${common[@]}" -DSTEPCAST_HARNESS=ON -DSTEPCAST_CALIBRATE=OFF -DSTEPCAST_TESTS=OFF \
     -DSTEPCAST_BENCHMARKS=OFF >"$log_dir/build-full.log" 2>&1 &&
   cmake --build /tmp/sc-full --target stepcast -j "$(nproc)" >>"$log_dir/build-full.log" 2>&1; then
  echo /tmp/sc-full/cli/stepcast
  exit 0
fi
echo "build.sh: full build failed (tail of $log_dir/build-full.log below); trying the standalone harness" >&2
tail -30 "$log_dir/build-full.log" >&2
if cmake -S tools/device/standalone -B /tmp/sc-alone "${common[@]}" >"$log_dir/build-standalone.log" 2>&1 &&
   cmake --build /tmp/sc-alone -j "$(nproc)" >>"$log_dir/build-standalone.log" 2>&1; then
  echo "/tmp/sc-alone/stepcast-measure"
  exit 0
fi
tail -60 "$log_dir/build-standalone.log" >&2
exit 1
