#!/usr/bin/env bash
# Copies the Debian packages' files the GPU machine lacks into .devdeps/ (git-ignored), for a device call to
# carry: libcsv's header and static library (libcsv-dev). tools/device/build.sh uses them when present.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .devdeps/include .devdeps/lib
cp /usr/include/csv.h .devdeps/include/
cp /usr/lib/x86_64-linux-gnu/libcsv.a .devdeps/lib/
echo ".devdeps ready"
