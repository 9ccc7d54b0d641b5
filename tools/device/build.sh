#!/usr/bin/env bash
# Builds stepcast and its harness executable stepcast-measure on the GPU machine (PyTorch's LibTorch,
# CUDA toolkit with CUPTI, no Ceres) and prints the path of stepcast on its last line; `stepcast measure`
# runs the stepcast-measure beside it. Logs go to $LOG_DIR (default /tmp).
set -uo pipefail
cd "$(dirname "$0")/../.."
log_dir=${LOG_DIR:-/tmp}
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
export CUDAToolkit_ROOT=${CUDAToolkit_ROOT:-/usr/local/cuda}
# The GPU machine has no libcsv-dev (and no network): the call carries Debian's header and static library in
# .devdeps/ (tools/device/devdeps.sh makes it; `carry: [".devdeps"]`).
csv_args=()
if [[ ! -e /usr/include/csv.h && -e .devdeps/include/csv.h ]]; then
  csv_args=(-DCSV_INCLUDE_DIR="$PWD/.devdeps/include" -DCSV_LIBRARY="$PWD/.devdeps/lib/libcsv.a")
fi
if cmake -S . -B /tmp/sc-full -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_prefix" \
     -DCMAKE_CUDA_COMPILER="$CUDAToolkit_ROOT/bin/nvcc" -DSTEPCAST_HARNESS=ON -DSTEPCAST_CALIBRATE=OFF \
     -DSTEPCAST_TESTS=OFF -DSTEPCAST_BENCHMARKS=OFF "${csv_args[@]}" >"$log_dir/build-full.log" 2>&1 &&
   cmake --build /tmp/sc-full --target stepcast stepcast-measure -j "$(nproc)" >>"$log_dir/build-full.log" 2>&1; then
  echo /tmp/sc-full/cli/stepcast
  exit 0
fi
echo "build.sh: build failed (tail of $log_dir/build-full.log below)" >&2
tail -60 "$log_dir/build-full.log" >&2
exit 1
