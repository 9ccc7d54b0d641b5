#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for stepcast and builds it into build/.
# Idempotent and non-interactive: installs only the Debian packages that are missing, then
# configures and builds. Run as root (or with sudo available). Usage: tools/setup.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  libeigen3-dev libceres-dev libyaml-cpp-dev catch2 libcli11-dev nlohmann-json3-dev
  zlib1g-dev libbenchmark-dev libcsv-dev
  libtorch-dev   # Debian's LibTorch 1.13 (CPU): the harness builds and is tested without a GPU
  libgloo-dev    # the headers ProcessGroupGloo.hpp includes: the harness's --nproc ranks over Gloo (harness/distributed.hpp)
  clang-14 libclang-rt-14-dev   # the sanitizer job and the fuzz targets (tools/sanitize.sh): ASan, UBSan, libFuzzer
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
else
  echo "setup: all Debian packages present" >&2
fi

if [ "${1:-}" != "--no-build" ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
  cmake --build build -j "$(nproc)" >&2
fi
